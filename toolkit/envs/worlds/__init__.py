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
from toolkit.envs.worlds.food_delivery import add_food_delivery
from toolkit.envs.worlds.maps import add_maps
from toolkit.envs.worlds.marketplace import add_marketplace
from toolkit.envs.worlds.retail_chain import add_retail_chain
from toolkit.envs.worlds.travel_booking import add_travel_booking

# In the order they run; each reads only the core world and its own collections.
DOMAIN_BUILDERS: list[Callable[[World, Random], None]] = [
    add_marketplace,
    add_retail_chain,
    add_food_delivery,
    add_travel_booking,
    add_maps,
]
