"""Evaluation suites and ``run_eval``: run a policy on a suite's tasks, score, aggregate, write results.

Suites (``SUITES``):

- ``kit-eval``: the held-out synthesized tasks (data/tasks/eval.jsonl: held-out templates and server
  combinations), scored with the programmatic rubric reward (Scale: fraction of essential items passed)
  and MCP-Atlas claim scoring (fulfilled 1 / partial 0.5).
- ``bfcl-base``, ``bfcl-miss-func``, ``bfcl-miss-param``, ``bfcl-long-context``: the BFCL v4 multi-turn
  categories shipped in ``bfcl-eval``, run through the kit's MCP-exposed BFCL servers by the same agent
  loop, scored by BFCL's official checker (state + response check) through the ``bfcl`` reward.

An eval output folder holds ``results.jsonl`` (one TaskResult per task), ``trajectories.jsonl``,
``results.json`` (aggregates with bootstrap CIs + the run's config) and ``viewer.html``.
"""

from __future__ import annotations

import importlib.metadata
import platform
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.eval.metrics import aggregate, first_call_well_formed, task_passed
from toolkit.eval.watch import Progress, check_endpoint
from toolkit.paths import DATA_DIR
from toolkit.records import (
    FINISH_TOOL,
    RewardResult,
    Task,
    TaskResult,
    Trajectory,
    dumps,
    read_jsonl,
    write_jsonl,
)

KIT_EVAL_TASKS = DATA_DIR / "tasks" / "eval.jsonl"
# Versions recorded with every run, so a number can be traced to the code that produced it.
VERSIONED_PACKAGES = ("mcp-rl-kit", "torch", "transformers", "trl", "peft", "mcp", "bfcl-eval", "numpy")

Rollout = Callable[[list[Task]], list[Trajectory]]
Scorer = Callable[[Task, Trajectory], RewardResult]


@dataclass(frozen=True)
class Suite:
    """A named set of tasks and how to score them. ``rewards``: reward names, the first is primary."""

    name: str
    description: str
    rewards: tuple[str, ...]
    bfcl_category: str | None = None  # BFCL test category (bfcl-eval's name), None for kit-eval
    # BFCL: which split of the kit's 50/50 split (toolkit.synth.bfcl_tasks.split_of) to evaluate on;
    # "eval" keeps scenarios that training never sees, None runs the whole category.
    split: str | None = "eval"
    # Agent-loop settings this suite needs (under the caller's): BFCL prompts carry every function doc
    # of their classes and reach ~4.2k tokens before the first turn, over the loop's 4096 default.
    loop_defaults: tuple[tuple[str, Any], ...] = ()

    def load_tasks(self, limit: int | None = None, tasks_file: str | Path | None = None) -> list[Task]:
        """The suite's tasks, the first ``limit`` of them (the order is the file's, so deterministic)."""
        if self.bfcl_category:
            from toolkit.synth.bfcl_tasks import load_bfcl_tasks

            return list(load_bfcl_tasks(self.bfcl_category, limit=limit, split=self.split))
        path = Path(tasks_file or KIT_EVAL_TASKS)
        if not path.exists():
            raise FileNotFoundError(f"{path}: no held-out tasks; generate them with `mcp-rl synth`")
        every = read_jsonl(path, Task)
        tasks = [t for t in every if t.split == "eval"]
        if not tasks:  # evaluating on training tasks would report memorisation as skill
            splits = sorted({t.split for t in every})
            raise ValueError(
                f"{path}: no held-out tasks (split 'eval'); the file has {len(every)} task(s) with split(s) "
                f"{splits or 'none'}. Generate held-out tasks with `mcp-rl synth --n-eval N`."
            )
        return tasks[:limit] if limit is not None else tasks


BFCL_LOOP_DEFAULTS = (("max_context_tokens", 8192),)  # SmolLM2 and Qwen2.5 take 8k+ contexts

SUITES: dict[str, Suite] = {
    "kit-eval": Suite(
        "kit-eval", "held-out synthesized tasks; rubric + MCP-Atlas claim scoring", ("rubric", "atlas")
    ),
    **{
        name: Suite(name, f"BFCL v4 {category}", ("bfcl",), category, loop_defaults=BFCL_LOOP_DEFAULTS)
        for name, category in (
            ("bfcl-base", "multi_turn_base"),
            ("bfcl-miss-func", "multi_turn_miss_func"),
            ("bfcl-miss-param", "multi_turn_miss_param"),
            ("bfcl-long-context", "multi_turn_long_context"),
        )
    },
}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise KeyError(f"unknown suite {name!r}; known: {', '.join(SUITES)}")
    return SUITES[name]


# ---- scoring -----------------------------------------------------------------------------------------


def _rubric_items(task: Task, result: RewardResult | None) -> list[dict[str, Any]]:
    """Rubric items of the task with the grader's verdict (``passed`` only for ``pass``)."""
    verdicts = {}
    if result is not None:
        for g in result.details.get("items", []):
            if isinstance(g, dict) and "id" in g:
                verdicts[g["id"]] = g
    items = []
    for it in task.rubric:
        g = verdicts.get(it.id, {})
        items.append(
            {
                "id": it.id,
                "text": it.text,
                "category": it.category,
                "essential": it.essential,
                "check": (it.check or {}).get("type"),
                "verdict": g.get("verdict"),
                "passed": g.get("verdict") == "pass",
                "reason": g.get("reason", ""),
            }
        )
    return items


def task_result(suite: Suite, task: Task, traj: Trajectory, scorers: dict[str, Scorer]) -> TaskResult:
    """Score one trajectory with the suite's rewards. A reward that raises is recorded as the task's
    ``error`` (score 0) instead of ending the run."""
    calls = [c for c in traj.calls if c.name != FINISH_TOOL]
    scores: dict[str, RewardResult] = {}
    errors = []
    for name in suite.rewards:
        try:
            scores[name] = scorers[name](task, traj)
        except Exception as exc:  # one broken score must not lose the run
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
    primary = scores.get(suite.rewards[0])
    if traj.stop_reason == "error" and not errors:
        errors.append(f"episode: {traj.metadata.get('error', 'stopped with an error')}")
    category = suite.bfcl_category or str(
        task.metadata.get("kind") or task.metadata.get("template") or "task"
    )
    return TaskResult(
        task_id=task.id,
        suite=suite.name,
        category=category,
        score=float(primary.score) if primary else 0.0,
        correct=(bool(primary and primary.score >= 1.0) if suite.bfcl_category else None),
        atlas_score=float(scores["atlas"].score) if "atlas" in scores else None,
        rubric=_rubric_items(task, scores.get("rubric")) if "rubric" in suite.rewards else [],
        n_calls=len(calls),
        n_failed_calls=sum(not c.ok for c in calls),
        stop_reason=traj.stop_reason,
        tool_counts=dict(Counter(c.name for c in calls)),
        error="; ".join(errors) or None,
        details={name: _score_details(r) for name, r in scores.items()},
        first_call_well_formed=first_call_well_formed(traj),
        n_gold_calls=None if suite.bfcl_category else len(task.gold),
    )


def _score_details(result: Any) -> dict[str, Any]:
    """Score and breakdown of one reward, plus its count of rubric items a judge left ungraded."""
    out = {"score": result.score, "breakdown": result.breakdown}
    if result.details.get("ungraded"):
        out["ungraded"] = int(result.details["ungraded"])
    return out


def default_scorers(suite: Suite) -> dict[str, Scorer]:
    from toolkit.rewards import get_reward

    return {name: get_reward(name) for name in suite.rewards}


# ---- rollout -----------------------------------------------------------------------------------------


# Evaluation samples greedily unless told otherwise: the numbers then depend on the model, not the draw.
EVAL_LOOP_DEFAULTS: dict[str, Any] = {"temperature": 0.0}
# Smoke runs (CI, notebooks with SMOKE=True): two generations of 48 tokens per user turn at most.
SMOKE_LOOP_CONFIG: dict[str, Any] = {"max_turns": 2, "max_new_tokens": 48}


def loop_settings(
    loop_config: dict[str, Any] | None, seed: int, suite: Suite | None = None
) -> dict[str, Any]:
    """The agent-loop settings an eval run uses (``RolloutConfig`` fields), as recorded in results.json:
    the loop's defaults, then greedy decoding, the suite's needs, the seed, and ``loop_config`` last."""
    from dataclasses import asdict

    from toolkit.agent.loop import RolloutConfig

    suite_defaults = dict(suite.loop_defaults) if suite else {}
    return asdict(
        RolloutConfig(**{**EVAL_LOOP_DEFAULTS, **suite_defaults, "seed": seed, **(loop_config or {})})
    )


def default_rollout(
    policy_spec: str,
    adapter: str | None = None,
    seed: int = 0,
    suite: Suite | None = None,
    **loop_config: Any,
) -> Rollout:
    """Rollout through the kit's agent loop with ``make_policy(policy_spec)`` (``gold`` or a model);
    ``loop_config`` holds ``toolkit.agent.loop.RolloutConfig`` fields (iteration cap, token budgets...)."""
    from toolkit.agent.loop import RolloutConfig, rollout
    from toolkit.agent.policies import make_policy

    config = RolloutConfig(**loop_settings(loop_config, seed, suite))
    context = config.max_context_tokens if policy_spec.startswith("vllm:") else None  # the engine's length
    policy = make_policy(policy_spec, adapter=adapter, max_context_tokens=context)

    def run(tasks: list[Task]) -> list[Trajectory]:
        return rollout(tasks, policy, config)  # also works inside Jupyter's running event loop

    run.close = getattr(policy, "close", lambda: None)  # type: ignore[attr-defined]  # frees a vLLM engine
    return run


# ---- the run -----------------------------------------------------------------------------------------


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def check_servers(tasks: Sequence[Task]) -> None:
    """Refuse, before any episode, tasks that name a server the kit cannot build: each of their
    episodes would end in an error that only the trajectories record."""
    from toolkit.envs.recipe import task_recipes
    from toolkit.envs.registry import server_names

    # a server that is not the kit's (own, MCP-Atlas, npm, PyPI) comes with how to start it
    named = {(t.id, s) for t in tasks for s in set(t.servers) - {r.name for r in task_recipes(t)}}
    known = server_names()
    unknown = sorted((task_id, name) for task_id, name in named if name not in known)
    if unknown:
        names = ", ".join(sorted({f"'{name}'" for _, name in unknown}))
        n_tasks = len({task_id for task_id, _ in unknown})
        raise ValueError(
            f"unknown server {names} in {n_tasks} of {len(tasks)} tasks (first: {unknown[0][0]}). "
            f"Known: {', '.join(known)}"
        )


def run_label(policy_spec: str, adapter: str | None) -> str:
    """A short run name: the policy, plus the adapter folder when there is one."""
    return f"{policy_spec}+{Path(adapter).name}" if adapter else policy_spec


def run_eval(
    policy_spec: str,
    suite: str,
    out_dir: str | Path,
    adapter: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    *,
    tasks: Sequence[Task] | None = None,
    tasks_file: str | Path | None = None,
    rollout: Rollout | None = None,
    scorers: dict[str, Scorer] | None = None,
    label: str | None = None,
    n_boot: int = 2000,
    viewer: bool = True,
    loop_config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Evaluate ``policy_spec`` (``gold`` or a model name) on ``suite``; write the output folder and
    return the results.json content.

    ``tasks`` / ``tasks_file`` override the suite's tasks; ``rollout`` and ``scorers`` replace the agent
    loop and the rewards (tests, hosted models); ``loop_config`` goes to ``run_episodes``.
    """
    from toolkit.agent.loop import check_environment, policy_failure, watch_episodes

    spec = get_suite(suite)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    task_list = list(tasks) if tasks is not None else spec.load_tasks(limit, tasks_file)
    if tasks is not None and limit is not None:
        task_list = task_list[:limit]
    if not task_list:
        raise ValueError(f"suite {suite!r} has no tasks to run")
    check_servers(task_list)

    started = time.time()
    scorers = scorers or default_scorers(spec)
    by_task = {task.id: task for task in task_list}
    scored: dict[int, TaskResult] = {}  # id(trajectory) -> its result, scored as its episode finished

    def finished(traj: Trajectory) -> None:  # scored at once, for the progress line's pass rate
        task = by_task.get(traj.task_id)
        if task is not None:  # one of this run's episodes
            scored[id(traj)] = result = task_result(spec, task, traj, scorers)
            progress.episode(task_passed(result), traj.stop_reason == "error")

    rollout_given = rollout is not None
    rollout = rollout or default_rollout(policy_spec, adapter, seed, spec, **(loop_config or {}))
    try:
        with Progress(len(task_list), "eval") as progress, watch_episodes(finished):
            trajs = rollout(task_list)
    finally:
        if not rollout_given:
            rollout.close()  # type: ignore[attr-defined]  # the engine this run started (vLLM), if any
    if len(trajs) != len(task_list):
        raise RuntimeError(f"rollout returned {len(trajs)} trajectories for {len(task_list)} tasks")
    rollout_s = time.time() - started
    by_id = {t.task_id: t for t in trajs}
    ordered = [by_id.get(task.id, trajs[i]) for i, task in enumerate(task_list)]
    failures = [why for why in map(policy_failure, ordered) if why is not None]
    check_endpoint(failures, len(ordered), f"policy endpoint {policy_spec}", "eval")
    check_environment(ordered)  # a server that failed an episode: an error, not a score

    results = [
        scored.get(id(traj)) or task_result(spec, task, traj, scorers)
        for task, traj in zip(task_list, ordered, strict=True)
    ]

    write_jsonl(out / "trajectories.jsonl", ordered)
    write_jsonl(out / "results.jsonl", [r.to_dict() for r in results])
    label = label or run_label(policy_spec, adapter)
    summary = {
        "suite": spec.name,
        "label": label,
        "config": {
            "policy": policy_spec,
            "model": None if policy_spec == "gold" else policy_spec,
            "adapter": str(adapter) if adapter else None,
            "seed": seed,
            "limit": limit,
            "n_tasks": len(task_list),
            "rewards": list(spec.rewards),
            "bfcl_category": spec.bfcl_category,
            "split": spec.split if spec.bfcl_category else "eval",
            "tasks_file": str(tasks_file)
            if tasks_file
            else (None if spec.bfcl_category else str(KIT_EVAL_TASKS)),
            "loop_config": loop_settings(loop_config, seed, spec)
            if not rollout_given
            else (loop_config or {}),
            "versions": package_versions(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "rollout_seconds": round(rollout_s, 3),
            "total_seconds": round(time.time() - started, 3),
        },
        "aggregate": aggregate(results, n_boot=n_boot, seed=seed),
        "endpoint_failures": len(failures),  # episodes the policy's backend failed (scored 0, as errors)
    }
    (out / "results.json").write_text(dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if viewer:
        from toolkit.eval.viewer import ViewerRun, write_viewer

        write_viewer([ViewerRun(label, results, ordered)], out / "viewer.html", title=f"{spec.name}: {label}")
    return summary
