"""What a run shows while it works and how it fails: a progress line on stderr, and the check that turns
a run whose episodes mostly failed on a model endpoint (policy or judge) into an error.

    with Progress(len(tasks), "eval") as progress:  # "[eval] 40/200 episodes, 3.1 s/episode, pass so far 0.30"
        ... progress.episode(passed) for each finished episode ...
    check_endpoint(reasons, len(tasks), f"policy endpoint {spec}", "eval")  # raises EndpointDown when most failed
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from typing import Any


class EndpointDown(RuntimeError):
    """Most episodes of a run failed on a model endpoint: the run is an error, not a table of zeros."""


def check_endpoint(
    reasons: Sequence[str], total: int, endpoint: str, name: str, unit: str = "episodes"
) -> None:
    """``reasons``: why each failed episode (or task) failed on ``endpoint``. More than half of ``total``
    raise ``EndpointDown`` with the count and the first reason; fewer are one warning line on stderr."""
    if not reasons:
        return
    line = f"{len(reasons)} of {total} {unit} failed on the {endpoint}: {reasons[0]}"
    if 2 * len(reasons) > total:
        raise EndpointDown(line)
    print(f"[{name}] warning: {line}", file=sys.stderr, flush=True)


class Progress:
    """One line at a time on stderr: every ``every`` finished episodes (a tenth of the run by default),
    at the last, and at least every ``interval`` seconds while the run is open (a heartbeat thread: a
    batch of long generations can finish no episode for minutes).

    ``episode(passed)`` counts one finished episode; ``passed`` None: not scored yet (no "pass so far").
    """

    def __init__(self, total: int, name: str, *, every: int | None = None, interval: float = 10.0):
        self.total, self.name = total, name
        self.every = every or max(1, total // 10)
        self.interval = interval
        self.done = self.scored = self.passed = self.errors = 0
        self.started = self.last = time.monotonic()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)

    def __enter__(self) -> Progress:
        self._beat.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._closed.set()
        self._beat.join()

    def episode(self, passed: bool | None = None, error: bool = False) -> None:
        with self._lock:
            self.done += 1
            self.errors += error
            if passed is not None:
                self.scored += 1
                self.passed += passed
            due = self.done % self.every == 0 or self.done == self.total
        if due or time.monotonic() - self.last >= self.interval:
            self._write()

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        pace = f"{elapsed / self.done:.1f} s/episode" if self.done else f"{elapsed:.0f} s"
        parts = [f"[{self.name}] {self.done}/{self.total} episodes", pace]
        if self.errors:
            parts.append(f"{self.errors} failed")
        if self.scored:
            parts.append(f"pass so far {self.passed / self.scored:.2f}")
        return ", ".join(parts)

    def _write(self) -> None:
        with self._lock:
            self.last = time.monotonic()
            try:
                print(self.line(), file=sys.stderr, flush=True)
            except (OSError, ValueError):  # stderr closed (a pipe's reader gone): the run goes on unseen
                pass

    def _heartbeat(self) -> None:
        while not self._closed.wait(min(1.0, self.interval)):
            if time.monotonic() - self.last >= self.interval:
                self._write()
