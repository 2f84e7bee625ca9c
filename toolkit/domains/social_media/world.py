"""Social media world: brand pages of the CRM companies, staff and customer profiles, posts, comments."""

from __future__ import annotations

from datetime import datetime, timedelta
from random import Random

from toolkit.envs.clock import NOW, World, iso

HASHTAGS = ["launch", "robotics", "support", "hiring", "events", "security", "ai", "sustainability", "tips"]
POST_LINES = [
    "Our new release is live - check it out!",
    "Join us at the trade fair next week.",
    "Five tips to get more out of your dashboard.",
    "We are hiring engineers in three cities.",
    "Scheduled maintenance this weekend, expect short outages.",
    "Thank you to all our customers for a great quarter.",
    "How we cut energy use by 20% in our offices.",
    "Security update: please enable two-factor login.",
]
COMMENT_LINES = ["Great news!", "When is this available in Europe?", "Love it.", "Still waiting for my refund...",
                 "Congrats team!", "Does this work with SSO?", "Buy cheap followers here!!!"]  # fmt: skip


def add_social_media(w: World, rng: Random) -> None:
    profiles: dict[str, dict] = {}

    def add(kind: str, name: str, handle: str, ref: str, key: str) -> None:
        pid = f"sp-{len(profiles) + 1:03d}"
        profiles[pid] = {
            "id": pid,
            "handle": handle,
            "display_name": name,
            "kind": kind,
            "company_id": None,
            "staff_id": None,
            "customer_id": None,
            "bio": "",
            "verified": kind == "brand" and rng.random() > 0.3,
            "following": [],
            "created": iso((NOW - timedelta(days=rng.randint(60, 1500))).date()),
        }
        profiles[pid][key] = ref  # the CRM company, staff member or customer behind the profile

    for co in w["companies"].values():
        add("brand", co["name"], "@" + co["name"].lower().replace(" ", ""), co["id"], "company_id")
    for s in list(w["staff"].values())[:12]:
        add("staff", s["name"], "@" + s["name"].lower().replace(" ", "_"), s["id"], "staff_id")
    for c in list(w["customers"].values())[:12]:
        add("customer", c["name"], "@" + c["name"].lower().replace(" ", "."), c["id"], "customer_id")
    ids = list(profiles)
    for pid in ids:
        profiles[pid]["following"] = sorted(rng.sample([x for x in ids if x != pid], rng.randint(2, 8)))
    w["social_profiles"] = profiles

    posts: dict[str, dict] = {}
    authors = [p for p in ids if profiles[p]["kind"] != "customer"]
    for i in range(48):
        post_id = f"post-{i + 1:03d}"
        status = rng.choices(["published", "scheduled", "draft"], weights=[8, 1, 1])[0]
        at = NOW - timedelta(hours=rng.randint(2, 24 * 40))
        published = status == "published"
        posts[post_id] = {
            "id": post_id,
            "profile_id": rng.choice(authors),
            "text": rng.choice(POST_LINES),
            "hashtags": sorted(rng.sample(HASHTAGS, rng.randint(0, 3))),
            "status": status,
            "created": iso(at),
            "scheduled_for": iso(NOW + timedelta(hours=rng.randint(5, 24 * 10)))
            if status == "scheduled"
            else None,
            "liked_by": sorted(rng.sample(ids, rng.randint(0, 9))) if published else [],
            "shares": rng.randint(0, 40) if published else 0,
            "views": rng.randint(50, 5000) if published else 0,
        }
    w["social_posts"] = posts
    comments: dict[str, dict] = {}
    live = [p for p in posts if posts[p]["status"] == "published"]
    for i in range(60):
        cid = f"sc-{i + 1:03d}"
        post = posts[rng.choice(live)]
        comments[cid] = {
            "id": cid,
            "post_id": post["id"],
            "profile_id": rng.choice(ids),
            "text": rng.choice(COMMENT_LINES),
            "at": iso(
                min(NOW, datetime.fromisoformat(post["created"]) + timedelta(hours=rng.randint(1, 72)))
            ),
            "hidden": False,
        }
    w["social_comments"] = comments
