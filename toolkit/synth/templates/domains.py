"""Imports every template module so their ``@template`` registrations run (order = registry order)."""

from toolkit.synth.templates import chains, crm, heldout, helpdesk, meta, multipart, workspace  # noqa: F401

# isort: split
# The PROVE-scale domains come after the original ones, so the original registry order stays a prefix.
from toolkit.synth.templates import food_delivery, maps, marketplace, retail_chain, travel_booking  # noqa: F401
