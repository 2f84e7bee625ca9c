"""One episode's view of a world: copy-on-write over a shared, never-mutated base.

Opening an episode costs one small object: the base world (cached per seed) is shared by every
episode, and a collection is copied (shallowly) only when the episode first writes to it; a record is
deep-copied only when the episode first edits it. Reads hand out the shared records, so tools treat
what ``get``/``values`` return as read-only and change records only through ``edit``/``put``/``delete``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from toolkit.envs.world import World, diff_states, generate_world


@lru_cache(maxsize=64)
def base_world(seed: int) -> World:
    """The shared base world for ``seed`` (generated once per process; never mutate it)."""
    return generate_world(seed)


class WorldState:
    """A copy-on-write world for one episode. ``diff()`` lists the records it changed."""

    def __init__(self, base: World):
        self._base = base
        self._own: dict[str, dict[str, dict[str, Any]]] = {}  # collections this episode wrote to
        self._edited: set[tuple[str, str]] = set()  # records already deep-copied by this episode

    @classmethod
    def from_seed(cls, seed: int) -> WorldState:
        return cls(base_world(seed))

    # -- reads ---------------------------------------------------------------------------------
    def collection(self, name: str) -> Mapping[str, dict[str, Any]]:
        """All records of a collection (read-only view)."""
        own = self._own.get(name)
        return own if own is not None else self._base.get(name, {})

    def get(self, name: str, key: str) -> dict[str, Any] | None:
        return self.collection(name).get(key)

    def values(self, name: str) -> list[dict[str, Any]]:
        return list(self.collection(name).values())

    # -- writes --------------------------------------------------------------------------------
    def _writable(self, name: str) -> dict[str, dict[str, Any]]:
        own = self._own.get(name)
        if own is None:
            own = self._own[name] = dict(self._base.get(name, {}))
        return own

    def edit(self, name: str, key: str) -> dict[str, Any]:
        """The record, made private to this episode, for in-place changes. KeyError if missing."""
        coll = self._writable(name)
        rec = coll[key]
        if (name, key) not in self._edited:
            rec = coll[key] = copy.deepcopy(rec)
            self._edited.add((name, key))
        return rec

    def put(self, name: str, key: str, record: dict[str, Any]) -> None:
        """Create or replace a record (the episode owns ``record`` from now on)."""
        self._writable(name)[key] = record
        self._edited.add((name, key))

    def delete(self, name: str, key: str) -> None:
        del self._writable(name)[key]
        self._edited.discard((name, key))

    # -- snapshots -----------------------------------------------------------------------------
    def snapshot(self) -> World:
        """The current world as a plain dict (shares unchanged records; deep-copy to keep it)."""
        return {name: dict(self.collection(name)) for name in set(self._base) | set(self._own)}

    def diff(self) -> dict[str, dict[str, Any]]:
        """Changes since the episode started, in the ``toolkit.records`` state-diff format."""
        before = {name: self._base.get(name, {}) for name in self._own}
        return diff_states(before, dict(self._own))
