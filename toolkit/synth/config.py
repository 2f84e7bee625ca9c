"""Generator settings as plain data, with difficulty presets.

The CPU demo trains a 135M model on 2 cores, so the "cpu" preset keeps tasks short (1-2 calls, few
distractor tools, short prompts); "default" spans chains of 1 to 5+ calls with 3-8 distractors, the
range PROVE samples (chains of 2-5 calls, 3-8 distractor tools).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

# Task kinds the generator emits, with their default sampling weights.
KINDS = ("lookup", "aggregate", "write", "multi_part", "chain", "clarify", "abstain", "long")

# The kit's first 11 servers. The "core" server set keeps tasks on them only, so adding servers and
# templates later never changes what the core presets generate for a seed.
CORE_SERVERS = (
    "helpdesk",
    "crm",
    "directory",
    "calendar",
    "email",
    "filesystem",
    "shop",
    "finance",
    "weather",
    "chat",
    "calculator",
)
# Fields added after data was first published: ``to_dict`` leaves them out while they keep their
# default, so the summary of a config that does not use them stays byte-identical.
LATER_FIELDS = ("server_set", "distractor_servers", "mix", "drill_share")


@dataclass(frozen=True)
class SynthConfig:
    """Everything that decides what `generate` produces; same config -> byte-identical output."""

    n_train: int = 200
    n_eval: int = 30
    seed: int = 0
    # World seeds tasks are grounded in: seed * 1000 + 0 .. n_worlds-1 (each task names its own).
    n_worlds: int = 4
    # Which servers tasks may use and distractors come from: "core" (CORE_SERVERS), "all" (every
    # domain server registered), or a comma-separated list of server names. Templates needing a
    # server outside the set are skipped.
    server_set: str = "core"
    # Gold chain length (number of tool calls), inclusive. Templates outside the range are skipped.
    min_calls: int = 1
    max_calls: int = 6
    # Distractor tools added beside the needed ones (inclusive range), and the share taken from the
    # needed servers themselves (hard distractors: same domain, wrong tool).
    min_distractors: int = 3
    max_distractors: int = 8
    same_server_distractor_share: float = 0.5
    # Whole servers the task does not need, enabled with all their tools on top of the distractor
    # tools (Scale's sample enables a finance server its helpdesk task never touches).
    distractor_servers: int = 0
    # Share of tasks forced to be short (1-2 calls): cheap episodes a small model can learn from.
    short_share: float = 0.5
    # Relative sampling weight of each task kind (missing kinds get 0).
    kind_weights: dict[str, float] = field(
        default_factory=lambda: {
            "lookup": 3.0,
            "aggregate": 2.5,
            "write": 2.0,
            "multi_part": 1.5,
            "chain": 2.5,
            "clarify": 0.6,
            "abstain": 0.6,
        }
    )
    # Share of eval draws taken from the eval-only (held-out) templates; the rest use held-out phrasings
    # or server combinations of the shared templates.
    eval_template_share: float = 0.3
    # Drill tasks added to the train split per train task drawn (templates/drills.py: train-only
    # templates that rehearse one step the held-out templates combine), spread evenly through it.
    # The drawn tasks stay what they were; 0: no drills.
    drill_share: float = 0.0
    # Near-duplicate removal: prompts within a template whose word-trigram Jaccard similarity is at
    # least this are dropped (exact duplicates of the gold calls are always dropped).
    near_duplicate_jaccard: float = 0.9
    # Replay each gold trajectory on a fresh world and drop failures (never turn off for data you keep).
    validate: bool = True
    # "prove": shape the validated tasks to PROVE's mix (toolkit.synth.prove_mix); None: as drawn.
    mix: str | None = None
    # Optional paraphrase through an OpenAI-compatible endpoint (off unless a model is named).
    paraphrase_model: str | None = None
    paraphrase_base_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        defaults = SynthConfig()
        for name in LATER_FIELDS:
            if out[name] == getattr(defaults, name):
                del out[name]
        return out


# Difficulty presets: overrides applied on top of SynthConfig defaults.
PRESETS: dict[str, dict[str, Any]] = {
    # Short episodes for a small model on a CPU: 1-2 calls, 1-3 distractors, mostly lookups and writes.
    "cpu": {
        "min_calls": 1,
        "max_calls": 2,
        "min_distractors": 1,
        "max_distractors": 3,
        "short_share": 1.0,
        "kind_weights": {
            "lookup": 4.0,
            "aggregate": 1.0,
            "write": 2.0,
            "chain": 1.0,
            "clarify": 0.5,
            "abstain": 0.5,
        },
    },
    "default": {},
    # PROVE's mix (PROVE, arXiv 2606.03892; toolkit.synth.prove_mix): 60/20/20 complete /
    # missing-required / minimal requests, 5% abstain, distractors (3-8, other servers) on 40% of tasks,
    # enum lists stripped on 30%, near-duplicates by tool-call Jaccard >= 0.70 dropped. Chains of 1-5
    # calls; the kind weights only shape the pool the mix selects from.
    "prove": {
        "mix": "prove",
        "server_set": "all",  # PROVE samples its 20 servers; the kit's 25 are all in play
        "min_calls": 1,
        "max_calls": 5,
        "kind_weights": {
            "lookup": 2.0,
            "aggregate": 1.5,
            "write": 1.5,
            "multi_part": 1.0,
            "chain": 3.0,
            "clarify": 1.5,
            "abstain": 0.5,
        },
    },
    # Longer chains only, many distractors: the hard end of the range.
    "hard": {
        "min_calls": 3,
        "max_calls": 8,
        "min_distractors": 5,
        "max_distractors": 8,
        "short_share": 0.0,
        "kind_weights": {"chain": 3.0, "multi_part": 3.0, "aggregate": 1.0, "clarify": 0.3, "abstain": 0.3},
    },
    # The default mix over every registered server (new domains' templates and tools included).
    "all": {"server_set": "all"},
    # Scale-like tasks: multi-part requests of 8-15 calls (today's templates make 8-11) over 4-5
    # servers, with paging, date windows, a closing write, and two whole servers enabled that the
    # task does not need.
    "long": {
        "min_calls": 8,
        "max_calls": 15,
        "min_distractors": 3,
        "max_distractors": 6,
        "distractor_servers": 2,
        "short_share": 0.0,
        "kind_weights": {"long": 1.0},
    },
}


def make_config(preset: str = "default", **overrides: Any) -> SynthConfig:
    """A SynthConfig from a named preset plus explicit overrides (None values are ignored)."""
    if preset not in PRESETS:
        raise ValueError(f"unknown synth preset {preset!r}; choose from {sorted(PRESETS)}")
    values = {**PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None}}
    config = replace(SynthConfig(), **values)
    if not 1 <= config.min_calls <= config.max_calls:
        raise ValueError(f"need 1 <= min_calls <= max_calls, got {config.min_calls}..{config.max_calls}")
    if not 0 <= config.min_distractors <= config.max_distractors:
        raise ValueError("need 0 <= min_distractors <= max_distractors")
    if not 0.0 <= config.drill_share < 1.0:
        raise ValueError(f"drill_share must be in [0, 1), got {config.drill_share}")
    if config.distractor_servers < 0:
        raise ValueError("need distractor_servers >= 0")
    if not config.server_set.strip(", "):
        raise ValueError("server_set is empty: use core, all, or a comma-separated list of servers")
    if config.mix not in (None, "prove"):
        raise ValueError(f"unknown synth mix {config.mix!r}; known: prove")
    unknown = set(config.kind_weights) - set(KINDS)
    if unknown:
        raise ValueError(f"unknown task kind(s) {sorted(unknown)}; kinds are {KINDS}")
    return config
