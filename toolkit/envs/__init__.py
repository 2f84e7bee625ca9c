"""MCP environments: the seeded world, domain MCP servers, per-episode isolation, transports.

``open_episode(task)`` is the entry point other areas use; it is imported lazily so that
``toolkit.envs.world`` stays cheap to import.
"""

from __future__ import annotations

from typing import Any

__all__ = ["open_episode"]


def __getattr__(name: str) -> Any:
    if name == "open_episode":
        from toolkit.envs.episode import open_episode

        return open_episode
    raise AttributeError(f"module 'toolkit.envs' has no attribute {name!r}")
