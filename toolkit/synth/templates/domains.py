"""Imports every template module so their ``@template`` registrations run (order = registry order)."""

from toolkit.synth.templates import (  # noqa: F401
    banking,
    budget,
    chains,
    crm,
    heldout,
    helpdesk,
    meta,
    multipart,
    payments,
    trading,
    workspace,
)
