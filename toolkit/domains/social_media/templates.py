"""Social media templates: post lookups, hashtag counts in a date window, publishing, and a chain from a
CRM company to its brand page's most liked post."""

from __future__ import annotations

from datetime import timedelta

from toolkit.envs.clock import TODAY
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import ALL, field_of, items, total, unique_by
from toolkit.synth.templates.crm import next_key

SERVER = "social_media"


def recent_day(ctx: Ctx, lo: int = 5, hi: int = 30) -> str:
    """A day between ``hi`` and ``lo`` days before the world's today (a window's start)."""
    return (TODAY - timedelta(days=ctx.rng.randint(lo, hi))).isoformat()


@template("sm_post_engagement", "lookup", [SERVER])
def post_engagement(ctx: Ctx) -> Draft:
    ctx.need("get_social_post")
    post = ctx.choose(ctx.records("social_posts", lambda p: p["status"] == "published"))
    fld, words = ctx.choose([("likes", "likes"), ("shares", "shares"), ("views", "views")])
    value = len(post["liked_by"]) if fld == "likes" else post[fld]
    prompt = ctx.say(
        [
            "How many {w} does social post {id} have?",
            "Check post {id} on social media: how many {w} has it got?",
        ],
        ["Tell me the number of {w} on post {id}."],
        w=words,
        id=post["id"],
    )
    return Draft(
        "", "", prompt, [SERVER],
        [Step("get_social_post", {"post_id": post["id"]}, purpose=f"read post {post['id']}")],
        answers=[Answer(fld, value, "number", text=f"post {post['id']} has {value} {words}")],
        reference_answer=f"Post {post['id']} has {value} {words}.",
        recompute=lambda r: {fld: field_of(r[0], fld)},
        keep=[post["id"]],
    )  # fmt: skip


@template("sm_hashtag_window", "aggregate", [SERVER])
def hashtag_window(ctx: Ctx) -> Draft:
    ctx.need("list_social_posts")
    since = recent_day(ctx)
    live = ctx.records("social_posts", lambda p: p["status"] == "published" and p["created"][:10] >= since)
    tag = ctx.choose(sorted({h for p in live for h in p["hashtags"]}))
    n = sum(tag in p["hashtags"] for p in live)
    prompt = ctx.say(
        [
            "How many published posts tagged #{tag} went out since {since}?",
            "Count the published social posts with the hashtag {tag} created on or after {since}.",
        ],
        ["Since {since}, how many live posts carried #{tag}?"],
        tag=tag,
        since=since,
    )
    return Draft(
        "", "", prompt, [SERVER],
        [Step("list_social_posts", {"status": "published", "hashtag": tag, "since": since, "limit": ALL},
              checked_args=["hashtag", "since"], normalize={"since": "date"},
              purpose=f"list the published #{tag} posts since {since}")],
        answers=[Answer("count", n, "number", text=f"{n} published posts tagged #{tag} since {since}")],
        reference_answer=f"{n} published posts carried #{tag} since {since}.",
        recompute=lambda r: {"count": total(r[0])},
        keep=[tag, since],
    )  # fmt: skip


@template("sm_publish_post", "write", [SERVER])
def publish_post(ctx: Ctx) -> Draft:
    ctx.need("create_social_post")
    prof = ctx.choose(ctx.records("social_profiles", lambda p: p["kind"] == "brand"))
    text = ctx.choose(
        ["Our offices are closed on Friday.", "New tutorial video is out!", "Meet us at booth 12."]
    )
    tag = ctx.choose(["events", "tips", "launch", "news"])
    new_id = next_key(ctx, "social_posts", "post-")
    prompt = ctx.say(
        [
            'Publish a post on profile {pid} ({name}) saying "{text}" with the hashtag #{tag}.',
            'Post "{text}" from the {name} page ({pid}), tagged #{tag}.',
        ],
        ['On {name}\'s social page ({pid}), put out "{text}" and tag it #{tag}.'],
        pid=prof["id"],
        name=prof["display_name"],
        text=text,
        tag=tag,
    )
    check = {"type": "state", "collection": "social_posts", "key": new_id, "field": "profile_id",
             "value": prof["id"], "op": "create"}  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [Step("create_social_post", {"profile_id": prof["id"], "text": text, "hashtags": [tag]},
              checked_args=["profile_id", "text"], normalize={"text": "text"}, purpose="publish the post")],
        state_changes=[(f"A new post {new_id} by profile {prof['id']} must exist.", check)],
        reference_answer=f"Published post {new_id} on {prof['display_name']} ({prof['id']}) with #{tag}.",
        keep=[prof["id"], text],
        read_only=False,
    )  # fmt: skip


@template("sm_company_top_post", "chain", ["crm", SERVER], calls=(3, 3))
def company_top_post(ctx: Ctx) -> Draft:
    ctx.need("search_companies", "list_social_profiles", "list_social_posts")
    pages = {p["company_id"]: p for p in ctx.records("social_profiles", lambda p: p["kind"] == "brand")}

    def published(pid: str) -> list[dict]:
        return ctx.records("social_posts", lambda p: p["profile_id"] == pid and p["status"] == "published")

    company = ctx.choose(
        [
            c
            for c in unique_by(ctx, "companies", "name")
            if c["id"] in pages and published(pages[c["id"]]["id"])
        ]
    )
    page = pages[company["id"]]
    posts = published(page["id"])
    best = max(len(p["liked_by"]) for p in posts)
    top = [p for p in posts if len(p["liked_by"]) == best]
    if len(top) > 1:
        raise Skip("tie")
    prompt = ctx.say(
        [
            "Find {c}'s brand page on social media and tell me which of its published posts has the most likes, and how many.",
            "Which published post on the {c} social page got the most likes? Give its id and like count.",
        ],
        [
            "Look up the social profile of our customer company {c}: what's its most liked live post and its likes?"
        ],
        c=company["name"],
    )

    def recompute(r):
        cos = items(r[0])
        if [c["id"] for c in cos] != [company["id"]]:
            raise ValueError("company search is ambiguous")
        if [p["id"] for p in items(r[1])] != [page["id"]]:
            raise ValueError("brand page not unique")
        rows = items(r[2])
        most = max(rows, key=lambda p: p["likes"])
        return {"post": most["id"], "likes": most["likes"]}

    return Draft(
        "", "", prompt, ["crm", SERVER],
        [
            Step("search_companies", {"query": company["name"]}, normalize={"query": "text"},
                 purpose=f"find {company['name']}", produces="company id"),
            Step("list_social_profiles", {"company_id": company["id"]}, depends_on=[0],
                 purpose="find the company's brand page", produces="profile id"),
            Step("list_social_posts", {"profile_id": page["id"], "status": "published", "limit": ALL}, depends_on=[1],
                 checked_args=["profile_id"], purpose="list the page's published posts"),
        ],
        answers=[
            Answer("post", top[0]["id"], "text", text=f"the most liked post is {top[0]['id']}"),
            Answer("likes", best, "number", text=f"it has {best} likes"),
        ],
        reference_answer=f"{company['name']}'s page {page['handle']} ({page['id']}): the most liked published post is "
        f"{top[0]['id']} with {best} likes.",
        recompute=recompute,
        keep=[company["name"]],
    )  # fmt: skip


@template("sm_hide_spam", "write", [SERVER], calls=(2, 2))
def hide_spam(ctx: Ctx) -> Draft:
    ctx.need("list_social_comments", "hide_social_comment")
    spam = "followers"  # the world's spam comments advertise followers
    by_post: dict[str, list[dict]] = {}
    for c in ctx.records("social_comments", lambda c: spam in c["text"] and not c["hidden"]):
        by_post.setdefault(c["post_id"], []).append(c)
    post_id = ctx.choose(sorted(p for p, rows in by_post.items() if len(rows) == 1))
    comment = by_post[post_id][0]
    prompt = ctx.say(
        [
            "Someone left a spam comment selling followers under post {id}. Find it and hide it.",
            "Moderate post {id}: hide the comment that advertises cheap followers.",
        ],
        ["Post {id} has a 'buy followers' spam comment - please hide it."],
        id=post_id,
    )
    check = {"type": "state", "collection": "social_comments", "key": comment["id"], "field": "hidden",
             "value": True, "op": "update"}  # fmt: skip
    return Draft(
        "", "", prompt, [SERVER],
        [
            Step("list_social_comments", {"post_id": post_id, "limit": ALL}, checked_args=["post_id"],
                 purpose="read the post's comments", produces="comment id"),
            Step("hide_social_comment", {"comment_id": comment["id"], "hidden": True}, depends_on=[0],
                 checked_args=["comment_id"], purpose="hide the spam comment"),
        ],
        state_changes=[(f"Comment {comment['id']} on {post_id} must be hidden afterwards.", check)],
        reference_answer=f"Hid the spam comment {comment['id']} on post {post_id}.",
        keep=[post_id],
        read_only=False,
    )  # fmt: skip
