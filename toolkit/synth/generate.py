"""The synthesis pipeline: sample templates, ground them in the world, add distractors, replay, dedup.

``generate(config)`` returns the train and eval tasks plus a summary. Everything is driven by
``random.Random`` streams seeded from ``config.seed`` (string seeds hash with SHA-512, independent of
PYTHONHASHSEED), records are sorted where order could vary, and replay results are collected in task
order, so the same config gives byte-identical JSONL.

Splits: the eval split holds tasks that use at least one held-out element (a template marked
``eval_only``, a held-out phrasing, or a held-out combination of servers) on worlds with their own
seeds; the train split never uses any of them.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolkit.records import GoldCall, Task
from toolkit.synth.base import Draft
from toolkit.synth.config import CORE_SERVERS, KINDS, SynthConfig
from toolkit.synth.dedup import NearDuplicateFilter, task_signature
from toolkit.synth.prove_mix import apply_prove_mix, pool_size, realised_shares
from toolkit.synth.replay import OpenEpisode, validate_tasks_in_one_episode_sync, validate_tasks_sync
from toolkit.synth.rubric import build_rubric
from toolkit.synth.templates import Ctx, Skip, Template, all_drills, all_templates
from toolkit.toolbox import ToolSpec

# Server combinations whose multi-server tasks are held out for eval (sorted tuples).
EVAL_SERVER_COMBOS: tuple[tuple[str, ...], ...] = (
    ("calendar", "directory"),
    ("directory", "helpdesk"),
    ("crm", "shop"),
)


@dataclass
class SynthResult:
    train: list[Task]
    eval: list[Task]
    summary: dict[str, Any]  # deterministic: counts only
    timings: dict[str, float] = field(default_factory=dict)  # seconds; not written to the data files


def world_seeds(config: SynthConfig, split: str) -> list[int]:
    base = config.seed * 1000 + (500 if split == "eval" else 0)
    return [base + i for i in range(max(1, config.n_worlds))]


def held_out_elements(template: Template, draft: Draft) -> list[str]:
    """Which held-out elements a draft uses: "template", "phrasing", "servers"."""
    out = []
    if template.eval_only:
        out.append("template")
    if any(p.startswith("e") for p in draft.phrasing.split("+")):
        out.append("phrasing")
    if tuple(sorted(set(draft.servers))) in EVAL_SERVER_COMBOS:
        out.append("servers")
    return out


def pick_distractors(
    rng: random.Random, needed: Sequence[str], specs: Mapping[str, ToolSpec], config: SynthConfig, short: bool
) -> list[str]:
    """3-8 (configurable) enabled tools the task does not need: some from the needed servers (same
    domain, wrong tool), the rest from one or two other servers; plus, when the config asks for
    them, every tool of ``distractor_servers`` further servers."""
    lo, hi = config.min_distractors, config.max_distractors
    if short:
        hi = max(lo, min(hi, lo + 2))
    n = rng.randint(lo, hi)
    needed_set = set(needed)
    needed_servers = sorted({specs[t].server for t in needed if t in specs})
    same = sorted(t for t, s in specs.items() if s.server in needed_servers and t not in needed_set)
    servers = sorted({s.server for s in specs.values()} - set(needed_servers))
    others = rng.sample(servers, min(len(servers), rng.randint(1, 2))) if servers else []
    other = sorted(t for t, s in specs.items() if s.server in others)
    n_same = min(len(same), round(n * config.same_server_distractor_share) if needed else 0)
    chosen = rng.sample(same, n_same)
    chosen += rng.sample(other, min(len(other), n - n_same))
    if config.distractor_servers:  # whole unneeded servers, every tool of them enabled
        spare = [s for s in servers if s not in others]
        whole = rng.sample(spare, min(len(spare), config.distractor_servers))
        chosen += [t for t, s in specs.items() if s.server in whole and t not in chosen]
    return sorted(chosen)


def draft_to_task(
    draft: Draft,
    split: str,
    rng: random.Random,
    specs: Mapping[str, ToolSpec],
    config: SynthConfig,
    short: bool,
) -> Task:
    needed = sorted({s.name for s in draft.steps} | set(draft.metadata.get("enable_tools", [])))
    tools = sorted(set(needed) | set(pick_distractors(rng, needed, specs, config, short)))
    servers = sorted({specs[t].server for t in tools if t in specs} | set(draft.servers))
    meta = {
        "kind": draft.kind,
        "template": draft.template,
        "chain_length": draft.chain_length,
        "phrasing": draft.phrasing,
        "needed_servers": sorted(set(draft.servers)),
        "needed_tools": needed,
        "n_distractors": len(tools) - len(needed),
        "reference_answer": draft.reference_answer,
        **{k: v for k, v in draft.metadata.items() if k != "enable_tools"},
    }
    return Task(
        id="",
        split=split,
        prompt=draft.prompt,
        servers=servers,
        tools=tools,
        seed=draft.world_seed,
        gold=[
            GoldCall(name=s.name, arguments=s.arguments, depends_on=list(s.depends_on)) for s in draft.steps
        ],
        answers={a.key: a.value for a in draft.answers},
        rubric=build_rubric(draft),
        metadata=meta,
    )


def _weighted(rng: random.Random, weights: Mapping[str, float]) -> str:
    names = sorted(k for k, w in weights.items() if w > 0)
    if not names:
        raise ValueError("no task kind has a positive weight and a usable template")
    return rng.choices(names, weights=[weights[k] for k in names])[0]


def select_servers(server_set: str, specs: Mapping[str, ToolSpec]) -> list[str]:
    """The servers a config's ``server_set`` names, among those ``specs`` has tools of."""
    available = sorted({s.server for s in specs.values()})
    if server_set == "all":
        return available
    if server_set == "core":
        return [s for s in available if s in CORE_SERVERS]
    names = sorted({n.strip() for n in server_set.split(",") if n.strip()})
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ValueError(
            f"unknown server(s) {unknown} in server_set {server_set!r}; "
            f"use core, all, or names from: {', '.join(available)}"
        )
    return names


def usable_templates(
    templates: Mapping[str, Template], config: SynthConfig, servers: Sequence[str]
) -> dict[str, Template]:
    """Templates the config can draw: a positive kind weight, a chain length in range, and every
    server they need in the server set."""
    allowed = set(servers)
    return {
        tid: t
        for tid, t in templates.items()
        if config.kind_weights.get(t.kind, 0) > 0
        and set(t.servers) <= allowed
        and (
            t.kind in ("clarify", "abstain")
            or (t.calls[1] >= config.min_calls and t.calls[0] <= config.max_calls)
        )
    }


Replayer = Callable[[list[Task], list[Any]], tuple[list[bool], Counter[str], dict[int, str]]]


def _replayer(open_episode: OpenEpisode, world_fn: Callable[[int], Any], shared: bool) -> Replayer:
    """How a batch is replay-validated: each task in its own episode, or (the kit's servers) all of
    them in one episode whose state is reset per task; both give the same verdicts."""
    if shared:
        return lambda batch, recomputes: validate_tasks_in_one_episode_sync(
            batch, world_fn, recomputes=recomputes
        )
    return lambda batch, recomputes: validate_tasks_sync(batch, open_episode, recomputes=recomputes)


def default_env() -> tuple[Callable[[int], Any], Mapping[str, ToolSpec], OpenEpisode]:
    """The kit's environment library: world generator, every tool spec, episode opener."""
    from toolkit.envs import open_episode
    from toolkit.envs.registry import server_names, tool_specs
    from toolkit.envs.state import base_world

    # BFCL servers have their own tasks (toolkit/synth/bfcl_tasks.py); the kit's domain servers share a world.
    specs = {s.name: s for s in tool_specs([n for n in server_names() if not n.startswith("bfcl")])}
    return base_world, specs, open_episode


def generate(
    config: SynthConfig,
    *,
    templates: Mapping[str, Template] | None = None,
    env: tuple[Callable[[int], Any], Mapping[str, ToolSpec], OpenEpisode] | None = None,
    progress: bool = False,
    shared_episode: bool | None = None,
) -> SynthResult:
    """Generate ``config.n_train`` train and ``config.n_eval`` eval tasks (fewer only if the template
    pool runs dry; the summary says so).

    ``shared_episode``: replay each batch in one episode with its state reset per task (default for
    the kit's own servers; same verdicts as one episode per task, which ``False`` forces)."""
    world_fn, specs, open_episode = env or default_env()
    if shared_episode is None:  # the kit's own servers can replay a batch in one episode
        from toolkit.envs import open_episode as kit_open_episode

        shared_episode = open_episode is kit_open_episode
    replay = _replayer(open_episode, world_fn, shared_episode)
    servers = select_servers(config.server_set, specs)
    # Distractors, the fingerprint and ``ctx.tools`` see only the set's tools.
    specs = {name: spec for name, spec in specs.items() if spec.server in servers}
    templates = dict(templates if templates is not None else all_templates())
    tool_names = frozenset(specs)
    usable = usable_templates(templates, config, servers)
    drills = usable_templates(all_drills(), config, servers) if config.drill_share > 0 else {}
    summary: dict[str, Any] = {"config": config.to_dict(), "env": env_fingerprint(specs), "splits": {}}
    timings: dict[str, float] = {}
    out: dict[str, list[Task]] = {}
    bar = _progress_bar(config.n_train + config.n_eval, progress)
    for split, target in (("train", config.n_train), ("eval", config.n_eval)):
        t0 = time.perf_counter()
        drawn = pool_size(target) if config.mix == "prove" else target
        tasks, stats = _generate_split(
            split, drawn, config, usable, world_fn, specs, tool_names, frozenset(servers), replay, bar
        )
        if config.mix == "prove":  # PROVE's proportions, distractors and schema variants
            tasks, stats["prove_mix"] = apply_prove_mix(tasks, target, specs, f"{config.seed}/{split}")
            stats["prove_mix"]["realised"] = realised_shares(tasks, specs)
            stats["target"] = target
        if split == "train" and drills:  # added to the split as drawn, which stays as it was
            extra, stats["drills"] = _generate_split(
                split, round(config.drill_share * len(tasks)), config, drills, world_fn, specs,
                tool_names, frozenset(servers), replay, None, stream="drill",
            )  # fmt: skip
            tasks = interleave(tasks, extra)
        for i, task in enumerate(tasks, start=1):
            task.id = f"{split}-s{config.seed}-{i:05d}"
        out[split] = tasks
        summary["splits"][split] = stats | describe(tasks)
        timings[split] = time.perf_counter() - t0
    if bar is not None:
        bar.close()
    return SynthResult(train=out["train"], eval=out["eval"], summary=summary, timings=timings)


def interleave(tasks: list[Task], extra: list[Task]) -> list[Task]:
    """``extra`` spread evenly through ``tasks`` (their order kept), so that every prefix of the
    result (an SFT ``max_examples``, a GRPO pool) holds its share of both."""
    out: list[Task] = []
    for i, task in enumerate(tasks):
        out.append(task)
        lo, hi = i * len(extra) // len(tasks), (i + 1) * len(extra) // len(tasks)
        out.extend(extra[lo:hi])
    return out


def _generate_split(
    split: str,
    target: int,
    config: SynthConfig,
    templates: Mapping[str, Template],
    world_fn: Callable[[int], Any],
    specs: Mapping[str, ToolSpec],
    tool_names: frozenset[str],
    servers: frozenset[str],
    replay: Replayer,
    bar: Any,
    stream: str = "",
) -> tuple[list[Task], dict[str, Any]]:
    """``stream`` names the random stream (default: the split's); drills draw from their own."""
    pool = {tid: t for tid, t in templates.items() if split == "eval" or not t.eval_only}
    by_kind: dict[str, list[str]] = {}
    for tid in sorted(pool):
        by_kind.setdefault(pool[tid].kind, []).append(tid)
    weights = {k: config.kind_weights.get(k, 0.0) for k in KINDS if k in by_kind}
    seeds = world_seeds(config, split)
    paraphraser = _paraphraser(config)
    kept: list[Task] = []
    signatures: set[str] = set()
    stats: Counter[str] = Counter()
    drops: Counter[str] = Counter()
    examples: list[str] = []  # why replays failed (first few), for debugging templates
    leaked: Counter[str] = Counter()  # drafts dropped because an earlier hop states the answer
    near_dups = NearDuplicateFilter(config.near_duplicate_jaccard)
    attempt = 0
    max_attempts = 40 * max(target, 10)
    while len(kept) < target and attempt < max_attempts:
        need = target - len(kept)
        batch: list[Task] = []
        recomputes = []
        for _ in range(need + need // 4 + 4):
            rng = random.Random(f"synth/{config.seed}/{stream or split}/{attempt}")
            attempt += 1
            short = rng.random() < config.short_share
            kind = _weighted(rng, weights)
            choices = [t for t in by_kind[kind] if not short or pool[t].calls[0] <= 2]
            if split == "eval" and rng.random() < config.eval_template_share:
                choices = [
                    t for t in sorted(pool) if pool[t].eval_only and (not short or pool[t].calls[0] <= 2)
                ]
            if not choices:
                stats["skipped_no_short_template"] += 1
                continue
            tpl = pool[choices[rng.randrange(len(choices))]]
            world_seed = seeds[rng.randrange(len(seeds))]
            ctx = Ctx(
                world=world_fn(world_seed),
                rng=rng,
                split=split,
                world_seed=world_seed,
                tools=tool_names,
                servers=servers,
                min_calls=config.min_calls,
                max_calls=2 if short else config.max_calls,
            )
            try:
                draft = tpl.build(ctx)
            except Skip:
                stats["skipped_by_template"] += 1
                continue
            draft.world_seed, draft.phrasing = world_seed, draft.phrasing or ctx.phrasing
            draft.template, draft.kind = tpl.id, tpl.kind
            if not config.min_calls <= draft.chain_length <= config.max_calls and draft.kind not in (
                "clarify",
                "abstain",
            ):
                stats["skipped_chain_length"] += 1
                continue
            if short and draft.chain_length > 2:
                stats["skipped_not_short"] += 1
                continue
            held = held_out_elements(tpl, draft)
            if (split == "train") == bool(held):
                stats["skipped_split"] += 1
                continue
            if paraphraser is not None:
                draft.prompt, accepted = paraphraser(draft.prompt, draft.keep, attempt)
                stats["paraphrased" if accepted else "paraphrase_rejected"] += 1
            task = draft_to_task(draft, split, rng, specs, config, short)
            if split == "eval":
                task.metadata["held_out"] = held
            sig = task_signature(task)
            if sig in signatures:
                drops["duplicate"] += 1
                continue
            signatures.add(sig)
            batch.append(task)
            recomputes.append(draft.recompute)
        if not batch:
            continue
        if config.validate:
            ok, replay_drops, details = replay(batch, recomputes)
            drops.update({f"replay_{k}": v for k, v in replay_drops.items()})
            for i, why in sorted(details.items()):
                if why.startswith("answer_leaked"):
                    leaked[batch[i].metadata["template"]] += 1
                if len(examples) < 10:
                    examples.append(f"{batch[i].metadata['template']}: {why}"[:300])
            batch = [t for t, good in zip(batch, ok, strict=True) if good]
        before = len(kept)
        # Incremental: the same as re-filtering kept + batch (kept tasks always pass again).
        fresh = [t for t in batch if near_dups.admit(t)]
        drops["near_duplicate"] += len(batch) - len(fresh)
        kept = (kept + fresh)[:target]
        if bar is not None:
            bar.update(len(kept) - before)
    stats_out = {"target": target, "generated": len(kept), "attempts": attempt, **dict(sorted(stats.items()))}
    stats_out["drops"] = dict(sorted(drops.items()))
    stats_out["drop_examples"] = examples
    stats_out["leaked_by_template"] = dict(sorted(leaked.items()))
    return kept, stats_out


def env_fingerprint(specs: Mapping[str, ToolSpec]) -> dict[str, Any]:
    """What the tasks depend on besides the config: the tool library (names, schemas, servers). A
    change here changes the distractors and the replays, so committed data must be regenerated."""
    import hashlib
    import json

    lib = [[n, specs[n].server, specs[n].input_schema] for n in sorted(specs)]
    digest = hashlib.sha256(json.dumps(lib, sort_keys=True).encode()).hexdigest()[:16]
    return {"tools": len(specs), "tools_sha256": digest}


def _paraphraser(config: SynthConfig) -> Callable[[str, list[str], int], tuple[str, bool]] | None:
    if not config.paraphrase_model:
        return None
    from toolkit.synth.paraphrase import make_client, paraphrase

    client = make_client(config.paraphrase_base_url)
    model = config.paraphrase_model
    return lambda prompt, keep, seed: paraphrase(prompt, keep, client, model, seed)


def _progress_bar(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc="synth", unit="task")


def describe(tasks: Sequence[Task]) -> dict[str, Any]:
    """Counts by kind, chain length, needed server, rubric category, essential share, template."""
    kinds = Counter(t.metadata.get("kind") for t in tasks)
    lengths = Counter(len(t.gold) for t in tasks)
    servers = Counter(s for t in tasks for s in t.metadata.get("needed_servers", []))
    cats = Counter(r.category for t in tasks for r in t.rubric)
    essential = sum(r.essential for t in tasks for r in t.rubric)
    n_items = sum(len(t.rubric) for t in tasks)
    held = Counter(h for t in tasks for h in t.metadata.get("held_out", []))
    return {
        "tasks": len(tasks),
        "by_kind": dict(sorted(kinds.items())),
        "by_chain_length": {str(k): v for k, v in sorted(lengths.items())},
        "by_server": dict(sorted(servers.items())),
        "rubric_items_by_category": dict(sorted(cats.items())),
        "rubric_items": n_items,
        "essential_share": round(essential / n_items, 4) if n_items else 0.0,
        "templates": len({t.metadata.get("template") for t in tasks}),
        "held_out": dict(sorted(held.items())),
        "mean_tools_enabled": round(sum(len(t.tools) for t in tasks) / len(tasks), 2) if tasks else 0.0,
        "mean_prompt_chars": round(sum(len(t.prompt) for t in tasks) / len(tasks), 1) if tasks else 0.0,
    }
