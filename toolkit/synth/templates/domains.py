"""Imports every template module so their ``@template`` registrations run (order = registry order)."""

from toolkit.synth.templates import (  # noqa: F401
    chains,
    crm,
    heldout,
    helpdesk,
    iot_devices,
    issue_tracker,
    meta,
    multipart,
    social_media,
    vehicle,
    video_meeting,
    workspace,
)
