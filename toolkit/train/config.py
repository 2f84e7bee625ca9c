"""Training recipes: named YAML files (``toolkit/train/recipes/NAME.yaml``) read into plain data.

A recipe has these sections (each documented, with its source, in the recipe files themselves):

- ``model``, ``dtype``, ``backend`` (auto | gpu | cpu), ``seed``
- ``tasks`` / ``eval_tasks``: task JSONL files (``mcp-rl synth`` output; ``kit:tasks/train.jsonl`` names the
  sample shipped inside the package, ``data``); ``task_kinds``/``max_tasks`` filter
  them; ``grpo_task_kinds`` narrows the tasks GRPO samples from (the warm start keeps every kind)
- ``synth``: optional ``mcp-rl synth`` settings (preset, n, n_eval, seed) used when the recipe names
  no task files: the tasks are then generated into the run folder
- ``reward`` (a ``toolkit.rewards`` name, or a list of names that TRL sums with ``grpo.reward_weights``)
  and ``reward_config`` (its keyword options; keyed by reward name for a list)
- ``lora``: ``peft.LoraConfig`` fields
- ``sft``: ``None`` for no warm start, else ``trl.SFTConfig`` fields (+ ``max_examples``,
  ``one_call_per_turn``, ``drop_unfit_gold``)
- ``warm_start``: optional, an adapter folder made before the run that GRPO starts from instead of
  training one (the ``sft`` section then records how it was made)
- ``rft``: optional, off by default: rounds of rejection-sampling fine-tuning between the warm start
  and GRPO (``toolkit.train.rft``): the kit's keys (``RftConfig``: num_generations, temperature,
  max_tasks, max_per_task, correct_by, shortest_by, keep_failed_calls, keep_no_call,
  keep_no_call_if_gold_has_none, if_none_kept, rounds)
  plus ``trl.SFTConfig`` fields for its training, over the ``sft`` section's (``rft_training_section``)
- ``rollout``: the agent loop's ``RolloutConfig`` fields (turns, tokens per turn, context budget,
  tool-output truncation, temperature) plus ``first_turn_only``
- ``grpo``: ``trl.GRPOConfig`` fields, passed through unchanged (TRL documents each one)
- ``grpo_sampling``: which tasks share a GRPO step and dynamic sampling
  (``toolkit.train.batching.SamplingConfig``: order, kind_weights, min_spread, spread, spread_on, max_refill_rounds,
  flat_groups, shared_prefix_update, prescreen_samples, and guidance for groups where every episode
  failed: guide_share, guide_decay_steps, guide_below)
- ``eval``: held-out evaluation budgets for ``mcp-rl train --evaluate``

Overrides use dotted keys: ``with_overrides(recipe, {"grpo.max_steps": 5})``.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import json
import math
import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolkit.paths import DATA_DIR

RECIPES_DIR = Path(__file__).parent / "recipes"
KIT_DATA_PREFIX = "kit:"  # a task file shipped with the package: "kit:tasks/train.jsonl" -> DATA_DIR/...
SECTIONS = ("lora", "sft", "rft", "rollout", "grpo", "grpo_sampling", "eval", "reward_config")
TOP_LEVEL = {
    "description",
    "model",
    "dtype",
    "backend",
    "seed",
    "tasks",
    "eval_tasks",
    "task_kinds",
    "grpo_task_kinds",
    "max_tasks",
    "reward",
    "synth",
    "warm_start",
    *SECTIONS,
}

# Rollout keys the kit itself handles; every other key of the ``rollout`` section is a field of
# ``toolkit.agent.loop.RolloutConfig`` (max_turns, max_new_tokens, max_context_tokens,
# max_tool_output_tokens, temperature, finish_tool, ...), passed through unchanged.
KIT_ROLLOUT_KEYS = {"first_turn_only"}  # multi-turn tasks: train on the first user turn only (Bespoke)


def rollout_fields() -> set[str]:
    """Field names of the agent loop's RolloutConfig."""
    from dataclasses import fields

    from toolkit.agent.loop import RolloutConfig

    return {f.name for f in fields(RolloutConfig)}


class RecipeError(ValueError):
    """A recipe that cannot be used; the message names the recipe and the key."""


class RecipeChangeError(RecipeError):
    """``--resume`` with a recipe that differs from the run's ``recipe.json``; the message names the keys."""


@dataclass
class Recipe:
    name: str
    model: str
    reward: str | list[str]
    tasks: str | None = None
    eval_tasks: str | None = None
    description: str = ""
    dtype: str | None = None
    backend: str = "auto"
    seed: int = 0
    task_kinds: list[str] | None = None
    grpo_task_kinds: list[str] | None = None  # GRPO's share of the tasks; None = all of task_kinds
    max_tasks: int | None = None
    reward_config: dict[str, Any] = field(default_factory=dict)
    lora: dict[str, Any] = field(default_factory=dict)
    sft: dict[str, Any] | None = None
    # An adapter folder to start from instead of training the warm start: copied into the run as its
    # sft/adapter, the sft section then says how it was made (issue 49's frozen warm start, one for
    # every GRPO seed). None: the sft section trains it. Omitted from to_dict when None.
    warm_start: str | None = None
    rft: dict[str, Any] | None = None  # None: no RFT round (toolkit.train.rft); omitted from to_dict
    synth: dict[str, Any] | None = None  # generate tasks when no task files are named (mcp-rl synth)
    rollout: dict[str, Any] = field(default_factory=dict)
    grpo: dict[str, Any] = field(default_factory=dict)
    grpo_sampling: dict[str, Any] = field(default_factory=dict)  # toolkit.train.batching.SamplingConfig
    eval: dict[str, Any] = field(default_factory=dict)

    def loop_config(self, **overrides: Any) -> Any:
        """The agent loop's ``RolloutConfig`` from the ``rollout`` section (plus overrides)."""
        from toolkit.agent.loop import RolloutConfig

        values = {k: v for k, v in self.rollout.items() if k not in KIT_ROLLOUT_KEYS}
        values.update(overrides)
        return RolloutConfig(**values)

    def to_dict(self) -> dict[str, Any]:
        data = copy.deepcopy(self.__dict__)
        if data["rft"] is None:  # a recipe without the section is written (recipe.json) as before it existed
            del data["rft"]
        if data["warm_start"] is None:  # likewise: recipe.json as before the key existed
            del data["warm_start"]
        return data


@functools.cache  # one loader class, not a new one for every value read
def _yaml_loader() -> Any:
    """PyYAML's safe loader reading numbers as YAML 1.2 does. PyYAML follows YAML 1.1, where a float
    needs a dot and a signed exponent: ``2e-4`` and ``1.0e5`` are strings there, and a learning rate
    written that way reached the optimizer as text and failed after the warm start (run 18)."""
    import yaml

    class RecipeLoader(yaml.SafeLoader):
        pass

    RecipeLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
        list("-+0123456789."),
    )
    return RecipeLoader


def load_yaml(text: str) -> Any:
    """A recipe file or a ``--set`` value: YAML, with ``2e-4`` and ``1e5`` read as numbers."""
    loader = _yaml_loader()(text)  # a SafeLoader subclass: no arbitrary objects
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def list_recipes() -> list[str]:
    """Names of the recipes shipped with the kit."""
    return sorted(p.stem for p in RECIPES_DIR.glob("*.yaml"))


def load_recipe(name_or_path: str | Path) -> Recipe:
    """A shipped recipe by name (``bespoke``, ``scale``, ``prove``, ``cpu-demo``) or a YAML file path.

    A recipe may start from another: ``base: cpu-learn`` takes every key of that recipe and lays this
    file's keys over it, sections merged key by key (``rft: {num_generations: 2}`` adds one key to the
    base's ``rft``; a section set to ``null`` is emptied). The run's ``recipe.json`` is the merged whole."""
    data, name = _recipe_data(name_or_path, seen=())
    return recipe_from_dict(data, name=name)


def _recipe_path(name_or_path: str | Path, beside: Path | None = None) -> Path:
    path = Path(name_or_path)
    if path.suffix:
        return path if path.is_absolute() or beside is None else beside / path
    path = RECIPES_DIR / f"{name_or_path}.yaml"
    if not path.exists():
        raise RecipeError(f"unknown recipe {name_or_path!r}; shipped: {', '.join(list_recipes())}")
    return path


def _recipe_data(
    name_or_path: str | Path, seen: tuple[Path, ...], beside: Path | None = None
) -> tuple[dict, str]:
    """A recipe file's keys with its ``base`` chain merged in, and its name."""
    path = _recipe_path(name_or_path, beside)
    if path.resolve() in seen:
        chain = " -> ".join(p.stem for p in (*seen, path.resolve()))
        raise RecipeError(f"recipe {path}: its base chain comes back to itself ({chain})")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RecipeError(f"recipe {path}: cannot read it ({exc.strerror})") from exc
    data = load_yaml(text) or {}
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: a recipe is a mapping of keys, got {type(data).__name__}")
    # a run's recipe.json (JSON is YAML) carries the name of the recipe it was made from
    name = data.pop("name", None) or path.stem
    base = data.pop("base", None)
    if base is None:
        return data, name
    if not isinstance(base, str) or not base:
        raise RecipeError(f"recipe {path}: base must be a recipe name or a YAML path, got {base!r}")
    under, _ = _recipe_data(base, (*seen, path.resolve()), beside=path.parent)
    return _merged(under, data), name


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over`` laid on ``base``: mappings merged key by key, anything else (lists included) replaced."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def recipe_from_dict(data: dict[str, Any], name: str = "custom") -> Recipe:
    """Validate a recipe dict: unknown keys are errors (a typo must not silently do nothing)."""
    unknown = set(data) - TOP_LEVEL
    if unknown:
        raise RecipeError(f"recipe {name!r}: unknown key(s) {sorted(unknown)}; known: {sorted(TOP_LEVEL)}")
    for key in ("model", "reward"):
        if not data.get(key):
            raise RecipeError(f"recipe {name!r}: {key!r} is required")
    rollout = data.get("rollout") or {}
    known = rollout_fields() | KIT_ROLLOUT_KEYS
    bad = set(rollout) - known
    if bad:
        raise RecipeError(f"recipe {name!r}: unknown rollout key(s) {sorted(bad)}; known: {sorted(known)}")
    from toolkit.agent.output_cut import TOOL_OUTPUT_CUTS
    from toolkit.agent.tool_text import TOOL_FORMATS

    for key, allowed in (("tool_format", TOOL_FORMATS), ("tool_output_cut", TOOL_OUTPUT_CUTS)):
        if key in rollout and rollout[key] not in allowed:
            raise RecipeError(
                f"recipe {name!r}: rollout.{key} must be one of {', '.join(allowed)}, got {rollout[key]!r}"
            )
    rewards = data["reward"] if isinstance(data["reward"], list) else [data["reward"]]
    weights = (data.get("grpo") or {}).get("reward_weights")
    if weights is not None and len(weights) != len(rewards):
        raise RecipeError(
            f"recipe {name!r}: grpo.reward_weights has {len(weights)} weight(s) for {len(rewards)} reward(s)"
        )
    check_test_sets(name, data)
    check_sampling(name, data)
    check_rft(name, data)
    check_warm_start(name, data)
    from toolkit.train.backends import recipe_backend_choices

    if data.get("backend", "auto") not in recipe_backend_choices():
        raise RecipeError(f"recipe {name!r}: backend must be one of {', '.join(recipe_backend_choices())}")
    kwargs = {k: v for k, v in data.items() if v is not None or k in ("sft", "synth")}
    for key in ("tasks", "eval_tasks"):
        if isinstance(kwargs.get(key), str) and kwargs[key].startswith(KIT_DATA_PREFIX):
            kwargs[key] = str(DATA_DIR / kwargs[key][len(KIT_DATA_PREFIX) :])
    for section in ("lora", "rollout", "grpo", "grpo_sampling", "eval", "reward_config"):
        kwargs[section] = dict(kwargs.get(section) or {})
    return Recipe(name=name, **kwargs)


def check_warm_start(name: str, data: dict[str, Any]) -> None:
    """``warm_start``: a folder name, beside the sft section that made it (whose ``max_steps`` the GRPO
    step count goes on from). Whether the folder holds an adapter is checked when a run starts."""
    folder = data.get("warm_start")
    if folder is None:
        return
    if not isinstance(folder, str) or not folder:
        raise RecipeError(f"recipe {name!r}: warm_start must be an adapter folder, got {folder!r}")
    if not data.get("sft"):
        raise RecipeError(
            f"recipe {name!r}: warm_start needs the sft section that made the adapter (its max_steps)"
        )


def check_sampling(name: str, data: dict[str, Any]) -> None:
    """``grpo_sampling``: known keys and values (``toolkit.train.batching.SamplingConfig``), and a
    stratified order or dynamic sampling only where GRPO samples groups of several episodes."""
    from toolkit.train.batching import SamplingConfig

    section = data.get("grpo_sampling")
    if section is None:
        return
    if not isinstance(section, dict):
        raise RecipeError(f"recipe {name!r}: grpo_sampling must be a mapping, got {section!r}")
    try:
        SamplingConfig.from_recipe(section)
    except (TypeError, ValueError) as exc:
        raise RecipeError(f"recipe {name!r}: {exc}") from exc


def check_rft(name: str, data: dict[str, Any]) -> None:
    """``rft``: a mapping whose kit keys (``toolkit.train.rft.RftConfig``) hold values the round can use;
    its ``trl.SFTConfig`` keys are checked with TRL's fields by ``check_recipe_types``."""
    from toolkit.train.rft import RftConfig

    section = data.get("rft")
    if section is None:
        return
    if not isinstance(section, dict):
        raise RecipeError(f"recipe {name!r}: rft must be a mapping, got {section!r}")
    try:
        RftConfig.from_section(section)
    except (TypeError, ValueError) as exc:
        raise RecipeError(f"recipe {name!r}: {exc}") from exc


def check_test_sets(name: str, data: dict[str, Any]) -> None:
    """``eval.test_sets``: a list of ``{seed, n}``, tasks synthesised from seeds the run never saw.

    The point of a test set is that no choice was tuned on it, so its seed must differ from the synth
    seed the train and dev tasks come from, and each test seed may appear once."""
    sets = (data.get("eval") or {}).get("test_sets")
    if sets is None:
        return
    if not isinstance(sets, list) or not all(isinstance(s, dict) and "seed" in s for s in sets):
        raise RecipeError(f"recipe {name!r}: eval.test_sets must be a list of {{seed: INT, n: INT}}")
    synth = data.get("synth")
    if not synth:
        raise RecipeError(f"recipe {name!r}: eval.test_sets needs a synth section to generate the tasks")
    seeds = [s["seed"] for s in sets]
    if not all(isinstance(x, int) for x in seeds) or not all(
        isinstance(s.get("n", 1), int) and s.get("n", 1) > 0 for s in sets
    ):
        raise RecipeError(f"recipe {name!r}: eval.test_sets seeds and n must be positive integers")
    if synth.get("seed", 0) in seeds:
        raise RecipeError(
            f"recipe {name!r}: test seed {synth.get('seed', 0)} is the synth seed of the train and dev"
            " tasks; a test set must come from a seed the run never saw"
        )
    if len(set(seeds)) != len(seeds):
        raise RecipeError(f"recipe {name!r}: eval.test_sets repeats a seed: {seeds}")


def with_overrides(recipe: Recipe, overrides: dict[str, Any], *, unset: Iterable[str] = ()) -> Recipe:
    """A copy with dotted-key overrides applied, e.g. ``{"grpo.max_steps": 5, "model": "tiny-random"}``.

    A ``None`` value means "not given" (keep the recipe's); keys in ``unset`` are set to ``None``
    explicitly (``--set sft=null`` turns the warm start off)."""
    data = recipe.to_dict()
    name = data.pop("name")
    overrides = {**{k: v for k, v in overrides.items() if v is not None}, **dict.fromkeys(unset)}
    for dotted, value in overrides.items():
        target = data
        *parents, leaf = dotted.split(".")
        for part in parents:
            if target.get(part) is None:
                target[part] = {}
            target = target[part]
        target[leaf] = value
    return recipe_from_dict(data, name=name)


RECIPE_LABELS = ("name", "description")  # what a recipe is called and says about itself, not what runs


def recipe_changes(old: Recipe, new: Recipe) -> dict[str, dict[str, Any]]:
    """The settings in which ``new`` differs from ``old``, by dotted path: ``{"lora.r": {"old": 4, "new":
    8}}``, without ``"old"`` (or ``"new"``) where that recipe lacks the key. Compared as the recipes are
    written to ``recipe.json`` (JSON values); the name and the description are labels, not compared."""

    def plain(recipe: Recipe) -> dict[str, Any]:
        data = json.loads(json.dumps(recipe.to_dict()))
        return {k: v for k, v in data.items() if k not in RECIPE_LABELS}

    changes: dict[str, dict[str, Any]] = {}

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                sub = f"{path}.{key}" if path else key
                if key not in a:
                    changes[sub] = {"new": b[key]}
                elif key not in b:
                    changes[sub] = {"old": a[key]}
                else:
                    walk(a[key], b[key], sub)
        elif a != b or isinstance(a, bool) != isinstance(b, bool):  # True == 1 in Python, not here
            changes[path] = {"old": a, "new": b}

    walk(plain(old), plain(new), "")
    return changes


def describe_changes(changes: dict[str, dict[str, Any]], width: int = 60, most: int = 12) -> str:
    """``model: "a" -> "b"; lora.r: 4 -> 8; grpo.warmup_steps: (unset) -> 5`` (values as JSON, long ones
    cut; top-level keys first, then the sections' keys: the first ``most``, then how many more)."""

    def show(entry: dict[str, Any], side: str) -> str:
        if side not in entry:
            return "(unset)"
        text = json.dumps(entry[side], sort_keys=True)
        return text if len(text) <= width else text[: width - 3] + "..."

    keys = sorted(changes, key=lambda k: (k.count("."), k))[:most]
    shown = [f"{k}: {show(changes[k], 'old')} -> {show(changes[k], 'new')}" for k in keys]
    more = len(changes) - most
    return "; ".join(shown) + (f"; and {more} more key(s)" if more > 0 else "")


# ``lora`` keys only the Unsloth backend reads (FastLanguageModel.from_pretrained), not peft.LoraConfig
GPU_LORA_KEYS = ("load_in_4bit", "gpu_memory_utilization", "fast_inference")


def build_lora_config(recipe: Recipe) -> Any:
    """``peft.LoraConfig`` from the recipe's ``lora`` section (causal-LM task type)."""
    from peft import LoraConfig

    settings = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": "all-linear"}
    settings.update({k: v for k, v in recipe.lora.items() if k not in GPU_LORA_KEYS})
    return LoraConfig(task_type="CAUSAL_LM", **settings)


# GRPOConfig knobs the kit sets itself (rather than the recipe): the loop generates, the kit logs.
_KIT_GRPO = {"remove_unused_columns": False}
# GRPOConfig knobs the kit implements differently for LoRA (see toolkit.train.callbacks).
PEFT_REF_SYNC_KEYS = ("sync_ref_model", "ref_model_sync_steps", "ref_model_mixup_alpha")


def grpo_kwargs(
    recipe: Recipe, output_dir: str | Path, *, use_cpu: bool, report_to: str | list[str] = "none"
) -> dict:
    """The keyword arguments for ``trl.GRPOConfig``: the recipe's ``grpo`` section plus the kit's own."""
    kwargs = {"seed": recipe.seed, "report_to": report_to, "logging_steps": 1}
    kwargs.update(recipe.grpo)
    kwargs.update(_KIT_GRPO)
    kwargs["output_dir"] = str(output_dir)
    # The rollout loop owns the episode length; TRL's own cap is only used for its bookkeeping.
    loop = recipe.loop_config()
    kwargs.setdefault("max_completion_length", loop.max_context_tokens)
    kwargs.setdefault("temperature", loop.temperature)
    if use_cpu:
        kwargs["use_cpu"] = True
        kwargs.setdefault("gradient_checkpointing", False)  # recomputation only pays off on memory-bound GPUs
    for key in PEFT_REF_SYNC_KEYS:  # handled by the kit's PEFT reference-sync callback
        kwargs.pop(key, None)
    return kwargs


def build_grpo_config(
    recipe: Recipe, output_dir: str | Path, *, use_cpu: bool, report_to: Any = "none"
) -> Any:
    from toolkit.train.trl_adapter import grpo_config_class

    try:
        return grpo_config_class()(**grpo_kwargs(recipe, output_dir, use_cpu=use_cpu, report_to=report_to))
    except TypeError as exc:
        raise RecipeError(f"recipe {recipe.name!r}: bad grpo section: {exc}") from exc


def ref_sync_settings(recipe: Recipe) -> tuple[bool, int, float]:
    """(enabled, every N steps, mixup alpha) for the reference-model refresh (Bespoke's M = 100)."""
    g = recipe.grpo
    return (
        bool(g.get("sync_ref_model", False)),
        int(g.get("ref_model_sync_steps", 512)),
        float(g.get("ref_model_mixup_alpha", 1.0)),
    )


# ``sft`` keys the kit reads itself (not SFTConfig fields): the gold episodes of the first
# ``max_examples`` training tasks; ``one_call_per_turn``: the gold replay gives every call its own
# model turn (``toolkit.agent.policies.GoldPolicy``), so no gold turn holds two calls;
# ``drop_unfit_gold``: leave out gold episodes with a turn the sampler would cut (``toolkit.train.sft``)
SFT_KIT_KEYS = ("max_examples", "one_call_per_turn", "drop_unfit_gold")
# SFTConfig fields that say how long the warm start trains: the RFT round does not inherit them (its
# examples are other ones, fewer): it trains one epoch over what it kept unless its section says otherwise
SFT_LENGTH_KEYS = ("max_steps", "num_train_epochs")


def rft_kit_keys() -> tuple[str, ...]:
    from toolkit.train.rft import RftConfig

    return RftConfig.kit_keys()


def rft_training_section(recipe: Recipe) -> dict[str, Any]:
    """The ``trl.SFTConfig`` settings of the RFT round: the ``sft`` section's (optimizer, schedule,
    learning rate, batch size, ``max_length``, ``save_steps``...) without its length, one epoch, then the
    ``rft`` section's own ``SFTConfig`` keys over them (``learning_rate``, ``max_steps``,
    ``per_device_train_batch_size``, ...)."""
    kit = set(rft_kit_keys())
    section = {k: v for k, v in (recipe.sft or {}).items() if k not in SFT_KIT_KEYS + SFT_LENGTH_KEYS}
    section["num_train_epochs"] = 1
    section.update({k: v for k, v in (recipe.rft or {}).items() if k not in kit})
    return section


def rft_training_recipe(recipe: Recipe) -> Recipe:
    """``recipe`` with the RFT round's training settings as its ``sft`` section: what a backend builds
    the round's ``SFTConfig`` from (``backend.sft_config`` reads the ``sft`` section of its recipe)."""
    return dataclasses.replace(recipe, sft=rft_training_section(recipe))


def build_sft_config(
    recipe: Recipe, output_dir: str | Path, *, use_cpu: bool, report_to: Any = "none"
) -> Any:
    """``trl.SFTConfig`` from the recipe's ``sft`` section.

    The loss is on assistant tokens only, but through the rows themselves: ``toolkit.train.sft``
    tokenizes them with the template's generation markers and passes ``assistant_masks``, from which
    TRL builds the labels. (``assistant_only_loss=True`` would ask TRL to re-render a ``messages``
    column, which the pre-tokenized rows do not have.)"""
    from toolkit.train.trl_adapter import sft_config_class

    try:
        return sft_config_class()(**sft_kwargs(recipe, output_dir, use_cpu=use_cpu, report_to=report_to))
    except TypeError as exc:
        raise RecipeError(f"recipe {recipe.name!r}: bad sft section: {exc}") from exc


def sft_kwargs(recipe: Recipe, output_dir: str | Path, *, use_cpu: bool, report_to: Any = "none") -> dict:
    """The keyword arguments for ``trl.SFTConfig``: the recipe's ``sft`` section plus the kit's own."""
    if recipe.sft is None:
        raise RecipeError(f"recipe {recipe.name!r} has no sft section (no warm start)")
    kwargs = {"seed": recipe.seed, "report_to": report_to, "logging_steps": 1, "save_strategy": "no"}
    if recipe.sft.get("save_steps"):  # checkpoints let a killed warm start resume
        kwargs["save_strategy"] = "steps"
    kwargs.update({k: v for k, v in recipe.sft.items() if k not in SFT_KIT_KEYS})
    kwargs["output_dir"] = str(output_dir)
    kwargs["assistant_only_loss"] = False  # masks come with the rows (see build_sft_config)
    if use_cpu:
        kwargs["use_cpu"] = True
    return kwargs


# Fields whose Unsloth default (None) Unsloth itself resolves to TRL's default, and where passing TRL's value
# would change more: an explicit ``loss_type="dapo"`` turns on the DAPO paper's ``epsilon_high=0.28``
# (``unsloth/models/rl.py``, ``check_dr_grpo``); left unset, Unsloth resolves it to "dapo" without that.
UNSLOTH_RESOLVES = ("loss_type",)


def _same_default(a: Any, b: Any) -> bool:
    """Equal defaults: equal values of one type, or both "nothing" (None, {}, []: Unsloth's
    ``generation_kwargs={}`` for TRL's ``None``)."""
    empty = (None, {}, [])
    if any(a is e or (type(a) is type(e) and a == e) for e in empty):
        return any(b is e or (type(b) is type(e) and b == e) for e in empty)
    with contextlib.suppress(Exception):  # values that do not compare count as different
        return type(a) is type(b) and bool(a == b)
    return False


def _is_trls_own_config(cls: Any) -> bool:
    """TRL's own config dataclass, not one of Unsloth's: Unsloth's subclasses may carry TRL's name and module
    (its SFTConfig stand-in lives in ``trl.trainer.sft_trainer``) but hold ``_unsloth_patched_rl_config``
    in their own ``__dict__`` (``unsloth/models/rl.py``), or are named ``Unsloth...``."""
    return (
        cls.__module__.startswith("trl.")
        and dataclasses.is_dataclass(cls)
        and not cls.__dict__.get("_unsloth_patched_rl_config", False)
        and not cls.__name__.startswith("Unsloth")
    )


def stock_trainer_defaults(config_cls: Any, explicit: dict[str, Any]) -> dict[str, Any]:
    """TRL's own default of every field whose default ``config_cls`` changed and ``explicit`` leaves unset.

    Unsloth replaces ``trl.SFTConfig`` / ``trl.GRPOConfig`` by subclasses whose ``__init__`` defaults
    differ (``optim="adamw_8bit"``, ``weight_decay=0.001``, ``learning_rate=5e-5``, ``seed=3407``, ...:
    ``unsloth/models/rl.py``). Passing these values makes such a class train as TRL's does, so a recipe
    means the same thing on every backend. For TRL's own class the result is empty."""
    import inspect

    stock = next((c for c in config_cls.__mro__ if _is_trls_own_config(c)), None)
    if stock is None or stock is config_cls:
        return {}
    params = inspect.signature(config_cls.__init__).parameters
    pinned = {}
    for f in dataclasses.fields(stock):
        if not f.init or f.name in explicit or f.name not in params or f.name in UNSLOTH_RESOLVES:
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            continue
        theirs = params[f.name].default
        factory = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None)  # TRL's own default_factory
        if theirs is inspect.Parameter.empty or theirs is factory or _same_default(theirs, default):
            continue
        pinned[f.name] = default
    return pinned


_NUMBER_NAMES = {"float": float, "int": int}


def _number_type(annotation: Any) -> type | None:
    """``float`` or ``int`` when a config field takes a number (``None`` allowed), else ``None``."""
    if isinstance(annotation, str):  # postponed annotations: "float", "int | None", "Optional[int]"
        names = set(re.split(r"[|\[\], ]+", annotation.replace("Optional", ""))) - {"", "None"}
        return _NUMBER_NAMES.get(names.pop()) if len(names) == 1 else None
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _number_type(args[0]) if len(args) == 1 else None
    return annotation if annotation in (float, int) else None


def check_section_types(recipe_name: str, section: str, values: dict[str, Any], config_cls: Any) -> None:
    """Numbers where a config dataclass wants numbers, checked before any stage runs: a string or a
    boolean there would otherwise pass the dataclass and fail only when the trainer uses it, after the
    warm start and an evaluation (``learning_rate: 2e-4`` read as text by YAML 1.1 did: run 18)."""
    fields = {f.name: f.type for f in dataclasses.fields(config_cls)}
    for key, value in values.items():
        want = _number_type(fields.get(key))
        if want is None or value is None:
            continue
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if want is int:
            ok = ok and float(value).is_integer()
        if not ok:
            raise RecipeError(
                f"recipe {recipe_name!r}: {section}.{key} must be a number ({want.__name__}), got {value!r}"
            )


def check_recipe_types(recipe: Recipe) -> None:
    """Every key and number of the recipe, before any stage runs (imports TRL: called when a run starts,
    not when a recipe is read): the ``sft``, ``rft``, ``grpo`` and ``lora`` keys are fields of
    ``trl.SFTConfig`` (both), ``trl.GRPOConfig`` and ``peft.LoraConfig`` (or the kit's own), their numbers are numbers, counts are
    positive, and the ``synth`` settings and rewards build. Otherwise a typo in ``--set`` fails when its
    stage starts, after the warm start (``grpo.nosuch_knob``: 147 s)."""
    from peft import LoraConfig

    from toolkit.agent.loop import RolloutConfig
    from toolkit.train.batching import SamplingConfig
    from toolkit.train.trl_adapter import grpo_config_class, sft_config_class

    GRPOConfig, SFTConfig = grpo_config_class(), sft_config_class()  # noqa: N806 (the classes)

    def field_names(cls: Any) -> set[str]:
        return {f.name for f in dataclasses.fields(cls)}

    sections = [
        ("grpo", recipe.grpo, field_names(GRPOConfig)),
        ("lora", recipe.lora, field_names(LoraConfig) | set(GPU_LORA_KEYS)),
        ("eval", recipe.eval, set(EVAL_KEYS)),
        ("eval.rollout", recipe.eval.get("rollout") or {}, rollout_fields()),
    ]
    if recipe.sft:
        sections.append(("sft", recipe.sft, field_names(SFTConfig) | set(SFT_KIT_KEYS)))
    if recipe.rft:
        sections.append(("rft", recipe.rft, field_names(SFTConfig) | set(rft_kit_keys())))
    for section, values, known in sections:
        unknown = sorted(set(values) - known)
        if unknown:
            raise RecipeError(f"recipe {recipe.name!r}: unknown {section} key(s) {unknown}")
    if recipe.sft:
        check_section_types(recipe.name, "sft", recipe.sft, SFTConfig)
    if recipe.rft:
        check_section_types(recipe.name, "rft", recipe.rft, SFTConfig)
    check_section_types(recipe.name, "grpo", recipe.grpo, GRPOConfig)
    check_section_types(recipe.name, "rollout", recipe.rollout, RolloutConfig)
    check_section_types(recipe.name, "grpo_sampling", recipe.grpo_sampling, SamplingConfig)
    counts = {
        "max_tasks": recipe.max_tasks,
        "eval.n_tasks": recipe.eval.get("n_tasks"),
        "grpo.max_steps": recipe.grpo.get("max_steps"),
        "sft.max_steps": (recipe.sft or {}).get("max_steps"),
        "sft.max_examples": (recipe.sft or {}).get("max_examples"),
        "rft.max_steps": (recipe.rft or {}).get("max_steps"),
    }
    for key, value in counts.items():  # a negative count would act as a slice, or as "by epochs"
        if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and value > 0):
            raise RecipeError(f"recipe {recipe.name!r}: {key} must be a positive integer, got {value!r}")
    if recipe.synth:
        try:
            synth_config(recipe.synth)
        except (TypeError, ValueError) as exc:  # TypeError: a key SynthConfig does not have
            raise RecipeError(f"recipe {recipe.name!r}: bad synth section: {exc}") from exc
    check_rewards(recipe)


# ``eval`` keys (``toolkit.train.pipeline``): held-out tasks, the loop's overrides, merged weights, test sets
EVAL_KEYS = ("n_tasks", "rollout", "merge_adapter", "test_sets")


def synth_config(settings: dict[str, Any]) -> Any:
    """A recipe's ``synth`` section as ``toolkit.synth``'s ``SynthConfig`` (a key it lacks: TypeError)."""
    from toolkit.synth.config import make_config

    settings = dict(settings)
    preset = settings.pop("preset", "default")
    n, n_eval = settings.pop("n", 200), settings.pop("n_eval", 50)
    return make_config(preset, n_train=n, n_eval=n_eval, **settings)


def check_rewards(recipe: Recipe) -> None:
    """Build each of the recipe's rewards with its ``reward_config`` once, so that an unknown name or
    option fails now (nothing is scored or contacted)."""
    from toolkit.rewards.base import get_reward

    names = recipe.reward if isinstance(recipe.reward, list) else [recipe.reward]
    configs = {names[0]: recipe.reward_config} if isinstance(recipe.reward, str) else recipe.reward_config
    stray = sorted(set(configs) - set(names))
    if stray:
        raise RecipeError(f"recipe {recipe.name!r}: reward_config for {stray}, not among the rewards {names}")
    for name in names:
        try:
            get_reward(name, **(configs.get(name) or {}))
        except (KeyError, TypeError, ValueError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) else exc  # KeyError's str() adds quotes
            raise RecipeError(f"recipe {recipe.name!r}: reward {name!r}: {message}") from exc


def first_step_learning_rate(section: dict[str, Any], config_cls: Any) -> float:
    """The learning rate of the first optimizer step under a ``sft``/``grpo`` section's schedule, from
    transformers' own scheduler as the Trainer builds it (``get_scheduler`` with the section's
    ``lr_scheduler_type``, ``warmup_steps`` and ``lr_scheduler_kwargs``, the config class's defaults for
    what the section leaves out). Every transformers warmup starts at 0: with ``warmup_steps: 2`` the
    first step multiplies the learning rate by 0/2, the second by 1/2."""
    import torch
    from transformers import get_scheduler

    defaults = {f.name: f.default for f in dataclasses.fields(config_cls)}
    values = {**defaults, **{k: v for k, v in section.items() if k in defaults}}
    steps = int(values.get("max_steps") or 0)
    steps = steps if steps > 0 else 1000  # only a warmup given as a ratio depends on it
    warmup = values.get("warmup_steps") or 0
    warmup = int(warmup) if warmup >= 1 else math.ceil(steps * warmup)
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=float(values["learning_rate"]))
    scheduler = get_scheduler(
        values["lr_scheduler_type"],
        optimizer=optimizer,
        num_warmup_steps=warmup,
        num_training_steps=steps,
        scheduler_specific_kwargs=values.get("lr_scheduler_kwargs") or {},
    )
    return float(scheduler.get_last_lr()[0])


def schedule_warnings(recipe: Recipe) -> list[str]:
    """One line per training section whose first optimizer step runs at learning rate 0 (a warmup):
    that step costs its whole batch (a GRPO step's generation included) and changes nothing."""
    from toolkit.train.trl_adapter import grpo_config_class, sft_config_class

    GRPOConfig, SFTConfig = grpo_config_class(), sft_config_class()  # noqa: N806 (the classes)

    from toolkit.train.rft import RftConfig

    sections = [("sft", recipe.sft, SFTConfig), ("grpo", recipe.grpo, GRPOConfig)]
    if RftConfig.from_section(recipe.rft).on:
        sections.insert(1, ("rft", rft_training_section(recipe), SFTConfig))
    out = []
    for section, values, cls in sections:
        if values is None:
            continue
        if first_step_learning_rate(values, cls) == 0.0:
            out.append(
                f"recipe {recipe.name!r}: the first {section} step runs at learning rate 0 "
                f"({values.get('lr_scheduler_type', 'linear')}, warmup_steps {values.get('warmup_steps')}):"
                " it changes nothing. No warmup (e.g. lr_scheduler_type: constant) makes every step count"
            )
    return out


# Knobs shown side by side in notebook 04 (recipe section, key, label).
TABLE_KEYS = (
    ("", "model", "model"),
    ("", "reward", "reward"),
    ("lora", "r", "LoRA rank"),
    ("grpo", "beta", "KL beta"),
    ("grpo", "sync_ref_model", "ref refresh"),
    ("grpo", "ref_model_sync_steps", "ref refresh every"),
    ("grpo", "num_iterations", "mu (updates per batch)"),
    ("grpo", "mask_truncated_completions", "overlong filtering"),
    ("grpo", "learning_rate", "learning rate"),
    ("grpo", "lr_scheduler_type", "schedule"),
    ("grpo", "warmup_steps", "warmup steps"),
    ("grpo", "max_grad_norm", "max grad norm"),
    ("grpo", "num_generations", "group size"),
    ("grpo", "per_device_train_batch_size", "completions / device step"),
    ("rollout", "max_turns", "turn cap"),
    ("rollout", "max_tool_output_tokens", "tool output cap (tokens)"),
    ("rollout", "tool_output_cut", "tool output cut"),
)


def recipe_table(names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """``{label: {recipe: value}}`` for the knobs that differ between the write-ups (for a DataFrame)."""
    recipes = [load_recipe(n) for n in (names or list_recipes())]
    table: dict[str, dict[str, Any]] = {}
    for section, key, label in TABLE_KEYS:
        table[label] = {
            r.name: ((getattr(r, section) or {}) if section else r.to_dict()).get(key, "-") for r in recipes
        }
    table["SFT warm start"] = {r.name: "yes" if r.sft else "no" for r in recipes}
    return table
