"""Imports every template module so their ``@template`` registrations run (order = registry order)."""

from toolkit.synth.templates import (  # noqa: F401
    banking,
    budget,
    chains,
    crm,
    heldout,
    helpdesk,
    iot_devices,
    issue_tracker,
    meta,
    multipart,
    payments,
    social_media,
    trading,
    vehicle,
    video_meeting,
    workspace,
)
