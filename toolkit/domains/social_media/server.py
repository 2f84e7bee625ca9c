"""Social media: brand pages of the CRM companies, staff and customer profiles, posts, comments, follows."""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import Field

from toolkit.envs.clock import NOW, NOW_ISO
from toolkit.envs.servers.base import Cursor, DomainServer, Limit, conflict, invalid, matches, paginate, tool
from toolkit.envs.servers.dates import Since, Until, Window, parse_time

ProfileId = Annotated[str, Field(description="Social profile id, e.g. 'sp-001'.")]
PostId = Annotated[str, Field(description="Post id, e.g. 'post-001'.")]
PostStatus = Literal["published", "scheduled", "draft"]
ProfileKind = Literal["brand", "staff", "customer"]


def _post_view(p: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in p.items() if k != "liked_by"}
    out["likes"] = len(p["liked_by"])
    return out


class SocialMedia(DomainServer):
    name = "social_media"
    description = (
        "Social media: company brand pages, staff and customer profiles; publish, schedule and moderate "
        "posts and comments, follow profiles, measure engagement."
    )

    def _profile(self, profile_id: str) -> dict[str, Any]:
        return self.require("social_profiles", profile_id, "Profile", "Use list_social_profiles to find ids.")

    def _post(self, post_id: str) -> dict[str, Any]:
        return self.require("social_posts", post_id, "Post", "Use list_social_posts to find post ids.")

    @tool(read_only=True)
    def list_social_profiles(
        self,
        query: Annotated[str | None, Field(description="Text to find in the handle or display name.")] = None,
        kind: Annotated[ProfileKind | None, Field(description="Only profiles of this kind.")] = None,
        company_id: Annotated[
            str | None, Field(description="Only the brand page of this CRM company id.")
        ] = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Find social profiles (brand pages, staff, customers) by text, kind or company."""
        rows = [
            {
                k: p[k]
                for k in ("id", "handle", "display_name", "kind", "company_id", "staff_id", "customer_id")
            }
            for p in self.db.values("social_profiles")
            if (matches(p["handle"], query) or matches(p["display_name"], query))
            and (kind is None or p["kind"] == kind)
            and (company_id is None or p["company_id"] == company_id)
        ]
        return paginate(sorted(rows, key=lambda p: p["id"]), limit, cursor)

    @tool(read_only=True)
    def get_social_profile(self, profile_id: ProfileId) -> dict[str, Any]:
        """One profile with its follower and following counts and number of published posts."""
        p = self._profile(profile_id)
        followers = sorted(x["id"] for x in self.db.values("social_profiles") if profile_id in x["following"])
        posts = sum(
            1
            for x in self.db.values("social_posts")
            if x["profile_id"] == profile_id and x["status"] == "published"
        )
        return {**p, "followers": len(followers), "follower_ids": followers, "published_posts": posts}

    @tool(idempotent=True)
    def update_social_profile(
        self,
        profile_id: ProfileId,
        display_name: Annotated[str | None, Field(min_length=1, description="New display name.")] = None,
        bio: Annotated[
            str | None, Field(max_length=160, description="New bio (up to 160 characters).")
        ] = None,
    ) -> dict[str, Any]:
        """Change a profile's display name and/or bio."""
        self._profile(profile_id)
        if display_name is None and bio is None:
            raise invalid("give display_name and/or bio to change.")
        p = self.db.edit("social_profiles", profile_id)
        if display_name is not None:
            p["display_name"] = display_name
        if bio is not None:
            p["bio"] = bio
        return dict(p)

    @tool(read_only=True)
    def list_social_posts(
        self,
        profile_id: Annotated[str | None, Field(description="Only posts by this profile id.")] = None,
        status: Annotated[PostStatus | None, Field(description="Only posts with this status.")] = None,
        hashtag: Annotated[
            str | None, Field(description="Only posts carrying this hashtag (without #).")
        ] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """List posts, newest first, filtered by author, status, hashtag and creation date window."""
        window = Window(since, until)
        tag = hashtag.lstrip("#").lower() if hashtag else None
        rows = [
            _post_view(p)
            for p in self.db.values("social_posts")
            if (profile_id is None or p["profile_id"] == profile_id)
            and (status is None or p["status"] == status)
            and (tag is None or tag in p["hashtags"])
            and window(p["created"])
        ]
        rows.sort(key=lambda p: (p["created"], p["id"]), reverse=True)
        return paginate(rows, limit, cursor)

    @tool(read_only=True)
    def get_social_post(self, post_id: PostId) -> dict[str, Any]:
        """One post with its like count, the profiles that liked it, and its number of visible comments."""
        p = self._post(post_id)
        n = sum(1 for c in self.db.values("social_comments") if c["post_id"] == post_id and not c["hidden"])
        return {**_post_view(p), "liked_by": list(p["liked_by"]), "comments": n}

    @tool(idempotent=False)
    def create_social_post(
        self,
        profile_id: ProfileId,
        text: Annotated[str, Field(min_length=1, max_length=500, description="The post text.")],
        hashtags: Annotated[
            list[str] | None, Field(description="Hashtags without '#', e.g. ['launch'].")
        ] = None,
        scheduled_for: Annotated[
            str | None, Field(description="Publish later at this ISO date-time; omit to publish now.")
        ] = None,
    ) -> dict[str, Any]:
        """Publish a post now, or schedule it for a later date-time. Customer profiles cannot post."""
        prof = self._profile(profile_id)
        if prof["kind"] == "customer":
            raise invalid(f"{profile_id} is a customer profile; post from a brand or staff profile.")
        if scheduled_for is not None and parse_time(scheduled_for, "scheduled_for") <= NOW:
            raise invalid(f"scheduled_for must be after now ({NOW_ISO}); omit it to publish now.")
        pid = self.next_id("social_posts", "post-")
        post = {
            "id": pid,
            "profile_id": profile_id,
            "text": text,
            "hashtags": sorted({h.lstrip("#").lower() for h in hashtags or [] if h.strip("# ")}),
            "status": "scheduled" if scheduled_for else "published",
            "created": NOW_ISO,
            "scheduled_for": scheduled_for,
            "liked_by": [],
            "shares": 0,
            "views": 0,
        }
        self.db.put("social_posts", pid, post)
        return _post_view(post)

    @tool(idempotent=True)
    def edit_social_post(
        self,
        post_id: PostId,
        text: Annotated[str | None, Field(min_length=1, max_length=500, description="New text.")] = None,
        hashtags: Annotated[list[str] | None, Field(description="Replace the hashtags with these.")] = None,
    ) -> dict[str, Any]:
        """Change a post's text and/or hashtags."""
        self._post(post_id)
        if text is None and hashtags is None:
            raise invalid("give text and/or hashtags to change.")
        p = self.db.edit("social_posts", post_id)
        if text is not None:
            p["text"] = text
        if hashtags is not None:
            p["hashtags"] = sorted({h.lstrip("#").lower() for h in hashtags if h.strip("# ")})
        return _post_view(p)

    @tool(destructive=True, idempotent=True)
    def delete_social_post(self, post_id: PostId) -> dict[str, Any]:
        """Delete a post and its comments."""
        self._post(post_id)
        gone = [c["id"] for c in self.db.values("social_comments") if c["post_id"] == post_id]
        for cid in gone:
            self.db.delete("social_comments", cid)
        self.db.delete("social_posts", post_id)
        return {"deleted": post_id, "comments_deleted": len(gone)}

    @tool(idempotent=True)
    def like_social_post(
        self,
        post_id: PostId,
        profile_id: Annotated[str, Field(description="Profile id that likes the post.")],
    ) -> dict[str, Any]:
        """Like a published post as a profile (liking twice changes nothing)."""
        post, _ = self._post(post_id), self._profile(profile_id)
        if post["status"] != "published":
            raise conflict(f"post {post_id} is {post['status']}; only published posts can be liked.")
        if profile_id not in post["liked_by"]:
            p = self.db.edit("social_posts", post_id)
            p["liked_by"] = sorted([*p["liked_by"], profile_id])
            post = p
        return {"post_id": post_id, "likes": len(post["liked_by"])}

    @tool(read_only=True)
    def list_social_comments(
        self,
        post_id: PostId,
        include_hidden: Annotated[
            bool, Field(description="Also list comments hidden by moderation.")
        ] = False,
        limit: Limit = 10,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """A post's comments, oldest first."""
        self._post(post_id)
        rows = [
            c
            for c in self.db.values("social_comments")
            if c["post_id"] == post_id and (include_hidden or not c["hidden"])
        ]
        return paginate(sorted(rows, key=lambda c: (c["at"], c["id"])), limit, cursor)

    @tool(idempotent=False)
    def add_social_comment(
        self,
        post_id: PostId,
        profile_id: Annotated[str, Field(description="Profile id writing the comment.")],
        text: Annotated[str, Field(min_length=1, max_length=300, description="The comment text.")],
    ) -> dict[str, Any]:
        """Comment on a published post."""
        post, _ = self._post(post_id), self._profile(profile_id)
        if post["status"] != "published":
            raise conflict(f"post {post_id} is {post['status']}; only published posts take comments.")
        cid = self.next_id("social_comments", "sc-")
        comment = {
            "id": cid,
            "post_id": post_id,
            "profile_id": profile_id,
            "text": text,
            "at": NOW_ISO,
            "hidden": False,
        }
        self.db.put("social_comments", cid, comment)
        return comment

    @tool(idempotent=True)
    def hide_social_comment(
        self,
        comment_id: Annotated[str, Field(description="Comment id, e.g. 'sc-001'.")],
        hidden: Annotated[
            bool, Field(description="True hides the comment (moderation); False shows it.")
        ] = True,
    ) -> dict[str, Any]:
        """Hide a comment (spam, abuse) or show it again."""
        self.require(
            "social_comments", comment_id, "Comment", "Use list_social_comments to find comment ids."
        )
        c = self.db.edit("social_comments", comment_id)
        c["hidden"] = hidden
        return dict(c)

    @tool(idempotent=True)
    def follow_social_profile(
        self,
        follower_id: Annotated[str, Field(description="Profile id that follows.")],
        followee_id: Annotated[str, Field(description="Profile id to follow.")],
    ) -> dict[str, Any]:
        """Make one profile follow another (following twice changes nothing)."""
        if follower_id == followee_id:
            raise invalid("a profile cannot follow itself.")
        me, _ = self._profile(follower_id), self._profile(followee_id)
        if followee_id not in me["following"]:
            me = self.db.edit("social_profiles", follower_id)
            me["following"] = sorted([*me["following"], followee_id])
        return {"follower_id": follower_id, "following": list(me["following"])}

    @tool(destructive=True, idempotent=True)
    def unfollow_social_profile(
        self,
        follower_id: Annotated[str, Field(description="Profile id that stops following.")],
        followee_id: Annotated[str, Field(description="Profile id to unfollow.")],
    ) -> dict[str, Any]:
        """Stop one profile following another."""
        me, _ = self._profile(follower_id), self._profile(followee_id)
        if followee_id not in me["following"]:
            raise conflict(f"{follower_id} does not follow {followee_id}; it follows {me['following']}.")
        me = self.db.edit("social_profiles", follower_id)
        me["following"] = [x for x in me["following"] if x != followee_id]
        return {"follower_id": follower_id, "following": list(me["following"])}

    @tool(read_only=True)
    def social_engagement_stats(
        self,
        profile_id: Annotated[str | None, Field(description="Only posts by this profile id.")] = None,
        since: Since = None,
        until: Until = None,
    ) -> dict[str, Any]:
        """Totals over published posts in a window: posts, likes, comments, shares, views, and the top post."""
        if profile_id is not None:
            self._profile(profile_id)
        window = Window(since, until)
        posts = [
            p
            for p in self.db.values("social_posts")
            if p["status"] == "published"
            and window(p["created"])
            and (profile_id is None or p["profile_id"] == profile_id)
        ]
        ids = {p["id"] for p in posts}
        comments = Counter(
            c["post_id"] for c in self.db.values("social_comments") if c["post_id"] in ids and not c["hidden"]
        )
        top = max(posts, key=lambda p: (len(p["liked_by"]), p["id"]), default=None)
        return {
            "posts": len(posts),
            "likes": sum(len(p["liked_by"]) for p in posts),
            "comments": sum(comments.values()),
            "shares": sum(p["shares"] for p in posts),
            "views": sum(p["views"] for p in posts),
            "top_post_id": top["id"] if top else None,
        }

    @tool(read_only=True)
    def trending_social_hashtags(
        self,
        since: Since = None,
        until: Until = None,
        top: Annotated[int, Field(ge=1, le=20, description="How many hashtags to return (1-20).")] = 5,
    ) -> dict[str, Any]:
        """Hashtags of published posts in a window, by number of posts (ties by name)."""
        window = Window(since, until)
        counts = Counter(
            h
            for p in self.db.values("social_posts")
            if p["status"] == "published" and window(p["created"])
            for h in p["hashtags"]
        )
        rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return {"hashtags": [{"hashtag": h, "posts": n} for h, n in rows]}
