"""One episode's view of a world: copy-on-write over a shared, never-mutated base.

Opening an episode costs one small object: the base world (cached per seed) is shared by every
episode, and a collection is copied (shallowly) only when the episode first writes to it; a record is
deep-copied only when the episode first edits it. Reads hand out the shared records, so tools treat
what ``get``/``values`` return as read-only and change records only through ``edit``/``put``/``delete``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from toolkit.envs.world import World, diff_states, generate_world

_MISSING = object()


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
        self._undo: list[tuple] | None = None  # inside ``atomic()``: how to put back what was written
        self._saved: set[tuple[str, str]] = set()  # records already saved in ``_undo``

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
            if self._undo is not None:
                self._undo.append((name,))
        return own

    def _save(self, name: str, key: str) -> None:
        """Inside ``atomic()``: remember a record as it was before its first write in the block."""
        if self._undo is None or (name, key) in self._saved:
            return
        self._saved.add((name, key))
        own = self._writable(name)
        edited = (name, key) in self._edited
        rec = own.get(key, _MISSING)
        # A record this episode owns is changed in place, so keep a copy; a base record is never changed.
        self._undo.append((name, key, copy.deepcopy(rec) if edited else rec, edited))

    def edit(self, name: str, key: str) -> dict[str, Any]:
        """The record, made private to this episode, for in-place changes. KeyError if missing."""
        coll = self._writable(name)
        rec = coll[key]
        self._save(name, key)
        if (name, key) not in self._edited:
            rec = coll[key] = copy.deepcopy(rec)
            self._edited.add((name, key))
        return rec

    def put(self, name: str, key: str, record: dict[str, Any]) -> None:
        """Create or replace a record (the episode owns ``record`` from now on)."""
        self._save(name, key)
        self._writable(name)[key] = record
        self._edited.add((name, key))

    def delete(self, name: str, key: str) -> None:
        self._save(name, key)
        del self._writable(name)[key]
        self._edited.discard((name, key))

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """All the block's writes, or none: if it raises, every record is put back as it was.

        Each tool call runs inside one, so a call that answers an error has changed nothing, whatever
        it wrote before it found the problem. Nested blocks join the outer one.
        """
        if self._undo is not None:
            yield
            return
        self._undo, self._saved = [], set()
        try:
            yield
        except BaseException:
            self._rollback(self._undo)
            raise
        finally:
            self._undo, self._saved = None, set()

    def _rollback(self, undo: list[tuple]) -> None:
        for entry in reversed(undo):
            if len(entry) == 1:  # the collection became this episode's own inside the block
                del self._own[entry[0]]
                continue
            name, key, rec, edited = entry
            own = self._own[name]
            if rec is _MISSING:
                own.pop(key, None)
            else:
                own[key] = rec
            if edited:
                self._edited.add((name, key))
            else:
                self._edited.discard((name, key))

    # -- snapshots -----------------------------------------------------------------------------
    def snapshot(self) -> World:
        """The current world as a plain dict (shares unchanged records; deep-copy to keep it)."""
        return {name: dict(self.collection(name)) for name in set(self._base) | set(self._own)}

    def diff(self) -> dict[str, dict[str, Any]]:
        """Changes since the episode started, in the ``toolkit.records`` state-diff format."""
        before = {name: self._base.get(name, {}) for name in self._own}
        return diff_states(before, dict(self._own))
