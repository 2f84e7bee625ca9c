"""DOMAINS: the one list of the kit's domains, each a package ``toolkit/domains/<domain>/`` holding its
server, world and templates (``toolkit/domains/__init__.py`` says what a domain is, and why the core
servers are none).

The list is written out rather than found by name because its order shows: the domain servers follow
the 11 core servers in this order (``mcp-rl envs list``, ``--servers all``), and the world builders run
in it. A new domain goes at the end, so every existing output stays the same.
"""

DOMAINS = (
    "social_media",
    "iot_devices",
    "vehicle",
    "issue_tracker",
    "video_meeting",
    "banking",
    "trading",
    "payments",
    "budget",
    "marketplace",
    "retail_chain",
    "food_delivery",
    "travel_booking",
    "maps",
)
