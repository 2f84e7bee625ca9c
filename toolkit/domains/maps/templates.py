"""Maps templates: a company HQ's address, counting rated places of a kind in a city, resolving a
traffic incident, and the walk from a company HQ to the nearest place of a kind."""

from __future__ import annotations

from toolkit.domains.maps.server import ROAD_FACTOR, SPEED_KPH, km_between
from toolkit.synth.base import Answer, Draft, Step
from toolkit.synth.templates import Ctx, Skip, template
from toolkit.synth.templates.common import field_of, items
from toolkit.synth.templates.drafting import changed, draft

CATEGORIES = ("cafe", "restaurant", "hotel", "parking", "fuel", "pharmacy")
RADIUS_KM = 25.0  # covers a whole city: the nearest place of a kind is always inside it


@template("maps_hq_address", "lookup", ["maps"])
def hq_address(ctx: Ctx) -> Draft:
    ctx.need("search_maps_places")
    hq = ctx.choose(ctx.records("maps_places", lambda p: p["company_id"] is not None))
    company = ctx.world["companies"][hq["company_id"]]["name"]
    prompt = ctx.say(
        [
            "What is the street address of the {c} headquarters?",
            "Find {c}'s HQ on the map and give me its address.",
        ],
        ["Where exactly (address) is the head office of {c}?"],
        c=company,
    )

    def recompute(r):
        found = items(r[0])
        if len(found) != 1:
            raise ValueError("search is ambiguous")
        return {"address": found[0]["address"]}

    return draft(
        prompt,
        ["maps"],
        [
            Step(
                "search_maps_places",
                {"query": f"{company} HQ", "category": "office"},
                checked_args=["query"],
                normalize={"query": "text"},
                purpose=f"find the {company} HQ",
            )
        ],  # fmt: skip
        answers=[Answer("address", hq["address"], "text", text=f"the {company} HQ is at {hq['address']}")],
        reference_answer=f"The {company} HQ ({hq['id']}) is at {hq['address']}.",
        recompute=recompute,
        keep=[company],
    )


@template("maps_count_places", "aggregate", ["maps"])
def count_places(ctx: Ctx) -> Draft:
    ctx.need("search_maps_places")
    city = ctx.choose(sorted({p["city"] for p in ctx.records("maps_places")}))
    cat = ctx.choose(CATEGORIES)
    floor = ctx.choose((3.5, 4.0, 4.5))
    n = len(
        ctx.records(
            "maps_places", lambda p: p["city"] == city and p["category"] == cat and p["rating"] >= floor
        )
    )
    prompt = ctx.say(
        ["How many {k} places in {city} are rated {r} or better?", "Count the {k} places in {city} with a rating of at least {r}."],
        ["In {city}, what number of {k} spots have {r}+ stars?"],
        k=cat, city=city, r=floor,
    )  # fmt: skip
    return draft(
        prompt,
        ["maps"],
        [
            Step(
                "search_maps_places",
                {"city": city, "category": cat, "min_rating": floor},
                normalize={"city": "text"},
                purpose=f"search {cat} places in {city}",
            )
        ],  # fmt: skip
        answers=[
            Answer("count", n, "number", text=f"{n} {cat} places in {city} are rated {floor} or better")
        ],
        reference_answer=f"{n} {cat} places in {city} are rated {floor} or better.",
        recompute=lambda r: {"count": r[0].structured["total"]},
        keep=[city],
    )


@template("maps_resolve_incident", "write", ["maps"])
def resolve_incident(ctx: Ctx) -> Draft:
    ctx.need("resolve_maps_incident")
    inc = ctx.choose(ctx.records("maps_incidents", lambda i: i["active"]))
    prompt = ctx.say(
        ["Traffic incident {id} is cleared; mark it resolved.", "Resolve the {k} incident {id} on the map."],
        ["The {k} reported as {id} is over. Close it."],
        id=inc["id"], k=inc["kind"],
    )  # fmt: skip
    return draft(
        prompt,
        ["maps"],
        [Step("resolve_maps_incident", {"incident_id": inc["id"]}, purpose="resolve the incident")],
        state_changes=[
            (
                f"Incident {inc['id']} must be inactive afterwards.",
                changed("maps_incidents", inc["id"], "active", False),
            )
        ],  # fmt: skip
        reference_answer=f"Incident {inc['id']} is resolved.",
        keep=[inc["id"]],
        read_only=False,
    )


@template("maps_walk_to_nearest", "chain", ["maps"], calls=(2, 2))
def walk_to_nearest(ctx: Ctx) -> Draft:
    ctx.need("find_nearby_maps_places", "get_maps_route")
    hq = ctx.choose(ctx.records("maps_places", lambda p: p["company_id"] is not None))
    cat = ctx.choose(CATEGORIES)
    near = sorted(
        ((km_between(hq, p), p["id"]) for p in ctx.records("maps_places", lambda p: p["category"] == cat)),
    )
    near = [(d, pid) for d, pid in near if d <= RADIUS_KM]
    if not near or (len(near) > 1 and near[0][0] == near[1][0]):
        raise Skip("no single nearest place")
    dest = ctx.world["maps_places"][near[0][1]]
    minutes = round(round(near[0][0] * ROAD_FACTOR, 2) / SPEED_KPH["walking"] * 60)
    company = ctx.world["companies"][hq["company_id"]]["name"]
    prompt = ctx.say(
        ["From the {c} HQ ({id}), which is the nearest {k}, and how many minutes is the walk there?",
         "Find the {k} closest to place {id} ({c} HQ) and tell me the walking time in minutes."],
        ["I'm at {c}'s head office ({id}). Name the closest {k} and how long it takes on foot."],
        c=company, id=hq["id"], k=cat,
    )  # fmt: skip

    def recompute(r):
        first = items(r[0])[0]
        if field_of(r[1], "to") != first["id"]:
            raise ValueError("routed to another place")
        return {"place": first["name"], "minutes": field_of(r[1], "duration_minutes")}

    return draft(
        prompt,
        ["maps"],
        [
            Step(
                "find_nearby_maps_places",
                {"place_id": hq["id"], "category": cat, "radius_km": RADIUS_KM},
                checked_args=["place_id", "category"],
                purpose=f"find the nearest {cat}",
                produces="place id",
            ),
            Step(
                "get_maps_route",
                {"from_place_id": hq["id"], "to_place_id": dest["id"], "mode": "walking"},
                depends_on=[0],
                purpose="get the walking time",
            ),
        ],  # fmt: skip
        answers=[
            Answer("place", dest["name"], "text", text=f"the nearest {cat} is {dest['name']}"),
            Answer("minutes", minutes, "number", 1.0, text=f"the walk takes about {minutes} minutes"),
        ],
        reference_answer=f"The nearest {cat} is {dest['name']} ({dest['id']}); walking there takes {minutes} minutes.",
        recompute=recompute,
        keep=[hq["id"]],
    )
