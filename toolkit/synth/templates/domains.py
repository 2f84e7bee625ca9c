"""Imports every template module so their ``@template`` registrations run (order = registry order)."""

from toolkit.synth.templates import chains, crm, heldout, helpdesk, long, meta, multipart, workspace  # noqa: F401
