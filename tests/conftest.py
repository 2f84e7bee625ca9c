"""Shared test settings: in CI, hypothesis draws the same examples every run (no flaky examples that
a local run never saw); locally it explores new ones."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
