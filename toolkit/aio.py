"""Run a coroutine from synchronous code, in a script and in Jupyter alike.

Jupyter (and papermill) already runs an event loop in the main thread, where ``asyncio.run`` refuses
to start a second one; there the coroutine runs on its own loop in a one-off worker thread.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion and return its result (in a worker thread when a loop is running)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # in a copy of the caller's context, so that its context variables (watch_episodes) hold there too
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(contextvars.copy_context().run, asyncio.run, coro).result()
