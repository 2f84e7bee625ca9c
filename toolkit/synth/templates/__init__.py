"""Task templates: each samples entities from the world and returns a Draft.

A template is a plain function ``build(ctx) -> Draft`` registered with ``@template(...)``. It reads the
world (``ctx.world``), samples with ``ctx.rng`` only (so the same seed gives the same tasks), words the
prompt with ``ctx.say`` (which picks one of several phrasings, held-out ones for the eval split), and
raises ``Skip`` when the world has nothing suitable. The modules of this package (the core servers',
the cross-domain mixes) and each domain's ``toolkit/domains/<domain>/templates.py`` add templates;
``all_templates()`` imports them all (``domains.py``).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.synth.base import Draft, dress, pick

World = dict[str, dict[str, dict[str, Any]]]


class Skip(Exception):
    """The world (or this sample of it) cannot support the template; the generator tries another."""


@dataclass
class Ctx:
    """What a template sees: the world, the random stream, and which split it is writing for."""

    world: World
    rng: random.Random
    split: str = "train"
    world_seed: int = 0
    phrasing: str = ""
    min_calls: int = 1  # the generator's chain-length bounds, for templates of variable length
    max_calls: int = 8
    bare: bool = False  # multi-part prompts: return the core sentence, the combinator dresses the whole
    # Set by the generator: the tool-spec names that exist (templates skip tools the envs lack).
    tools: frozenset[str] = field(default_factory=frozenset)
    # Set by the generator: the config's server set (None: any). Templates that combine other
    # templates (multi_part) draw only those whose servers are all in it.
    servers: frozenset[str] | None = None

    def say(self, train: Sequence[str], held_out: Sequence[str] = (), **fields: Any) -> str:
        """Pick a phrasing (a held-out one when writing eval tasks and the template has some), fill it
        with ``fields`` and dress it with a random opener and closer."""
        if self.split == "eval" and held_out:
            i = self.rng.randrange(len(held_out))
            self.phrasing, text = f"e{i}", held_out[i]
        else:
            i = self.rng.randrange(len(train))
            self.phrasing, text = f"t{i}", train[i]
        text = text.format(**fields)
        return text if self.bare else dress(self.rng, text)

    def records(
        self, collection: str, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> list[dict[str, Any]]:
        """Records of a collection in key order, optionally filtered."""
        coll = self.world.get(collection, {})
        return [coll[k] for k in sorted(coll) if where is None or where(coll[k])]

    def allows(self, tpl: Template) -> bool:
        """Whether a template's servers are all in the server set."""
        return self.servers is None or set(tpl.servers) <= self.servers

    def choose(self, options: Sequence[Any]) -> Any:
        if not options:
            raise Skip("nothing to sample")
        return pick(self.rng, options)

    def need(self, *tools: str) -> None:
        """Skip unless every named tool exists in the environment library."""
        missing = [t for t in tools if self.tools and t not in self.tools]
        if missing:
            raise Skip(f"tools not available: {missing}")


@dataclass(frozen=True)
class Template:
    id: str
    kind: str
    servers: tuple[str, ...]
    build: Callable[[Ctx], Draft]
    calls: tuple[int, int] = (1, 1)  # range of gold chain lengths it produces
    eval_only: bool = False  # held out: appears only in the eval split
    drill: bool = False  # train only, and only when the config asks for drills (``drill_share``)


TEMPLATES: dict[str, Template] = {}
# Drills live apart from TEMPLATES so that registering one changes nothing another template or
# config draws (multi_part samples its parts from TEMPLATES; the core digests cover TEMPLATES).
DRILLS: dict[str, Template] = {}


def template(
    id: str,
    kind: str,
    servers: Sequence[str],
    calls: tuple[int, int] = (1, 1),
    eval_only: bool = False,
    drill: bool = False,
) -> Callable[[Callable[[Ctx], Draft]], Callable[[Ctx], Draft]]:
    """Register ``build`` as a template (ids must be unique); ``drill=True`` registers a drill."""
    if drill and eval_only:
        raise ValueError(f"template {id!r}: a drill is train-only, it cannot be eval_only")

    def register(build: Callable[[Ctx], Draft]) -> Callable[[Ctx], Draft]:
        if id in TEMPLATES or id in DRILLS:
            raise ValueError(f"duplicate template id {id!r}")

        @functools.wraps(build)
        def built(ctx: Ctx) -> Draft:
            draft = build(ctx)
            draft.template, draft.kind = draft.template or id, draft.kind or kind
            if not draft.servers:  # a draft on exactly the template's servers need not repeat them
                draft.servers = list(servers)
            return draft

        registry = DRILLS if drill else TEMPLATES
        registry[id] = Template(id, kind, tuple(servers), built, calls, eval_only, drill)
        return build

    return register


def all_templates() -> dict[str, Template]:
    """Every registered template (importing the domain modules registers them)."""
    from toolkit.synth.templates import domains  # noqa: F401  (registers on import)

    return dict(TEMPLATES)


def all_drills() -> dict[str, Template]:
    """Every registered drill: train-only templates that rehearse one skill in isolation, drawn for a
    share of the train tasks when the synth config's ``drill_share`` is above 0."""
    from toolkit.synth.templates import domains  # noqa: F401  (registers on import)

    return dict(DRILLS)
