"""Per-domain world builders: each adds its own collections to the core world.

A builder is ``add_<domain>(w: World, rng: random.Random) -> None``. It may read the core collections
(``customers``, ``staff``, ``companies``, ...) to cross-reference them, and writes only collections of
its own, prefixed by its domain. ``generate_world`` gives every builder its own random stream seeded
from the world seed and the builder's name, so adding a domain never changes any other domain's data.
"""

from __future__ import annotations

from collections.abc import Callable
from random import Random

from toolkit.envs.clock import World
from toolkit.envs.worlds.banking import add_banking
from toolkit.envs.worlds.budget import add_budget
from toolkit.envs.worlds.food_delivery import add_food_delivery
from toolkit.envs.worlds.iot_devices import add_iot_devices
from toolkit.envs.worlds.issue_tracker import add_issue_tracker
from toolkit.envs.worlds.maps import add_maps
from toolkit.envs.worlds.marketplace import add_marketplace
from toolkit.envs.worlds.payments import add_payments
from toolkit.envs.worlds.retail_chain import add_retail_chain
from toolkit.envs.worlds.social_media import add_social_media
from toolkit.envs.worlds.trading import add_trading
from toolkit.envs.worlds.travel_booking import add_travel_booking
from toolkit.envs.worlds.vehicle import add_vehicle
from toolkit.envs.worlds.video_meeting import add_video_meeting

# In the order they run; each reads only the core world and its own collections.
DOMAIN_BUILDERS: list[Callable[[World, Random], None]] = [
    add_social_media,
    add_iot_devices,
    add_vehicle,
    add_issue_tracker,
    add_video_meeting,
    add_banking,
    add_trading,
    add_payments,
    add_budget,
    add_marketplace,
    add_retail_chain,
    add_food_delivery,
    add_travel_booking,
    add_maps,
]
