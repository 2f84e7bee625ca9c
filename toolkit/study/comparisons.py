"""What notebook 03 shows, as functions: the rewards side by side on named scenarios, judge-vs-program
calibration, and the share of zero-variance GRPO groups each reward leaves.

Tasks come from ``data/tasks/`` (the shipped sample) when present, else from the kit's
example tasks. Gold trajectories of synthesized tasks are executed in real episodes; groups of
"policy samples" are the AGENT area's rollouts when a trajectories file is given, else perturbations of
the gold trajectory (``toolkit.study.perturb``), re-executed for real when the tasks are synthesized.
"""

from __future__ import annotations

import random
import statistics
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.records import Task, Trajectory, read_jsonl
from toolkit.rewards.base import Reward, binarize, get_reward
from toolkit.study.perturb import SCENARIOS, sample_group, scenario

PROGRAMMATIC = ("rubric", "atlas", "prove", "graduated", "toolrl")


def load_tasks(
    data_dir: str | Path | None = None, limit: int | None = None, seed: int = 0
) -> tuple[list[Task], str]:
    """``(tasks, source)``: synthesized tasks from ``data_dir`` (default: the shipped sample, ``data/tasks``), preferring
    multi-step ones first, or the example tasks when none are there."""
    from toolkit.paths import DATA_DIR

    folder = Path(data_dir) if data_dir else DATA_DIR / "tasks"
    files = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    tasks = [t for f in files for t in read_jsonl(f, Task)]
    if not tasks:
        from toolkit.study.examples import example_tasks

        return example_tasks()[:limit] if limit else example_tasks(), "examples"
    rng = random.Random(seed)
    rng.shuffle(tasks)
    tasks.sort(key=lambda t: -min(len(t.gold), 3))  # a mix led by multi-step tasks
    return (tasks[:limit] if limit else tasks), str(folder)


def gold_trajectories(tasks: Sequence[Task], source: str) -> list[Trajectory]:
    """Gold trajectories: executed in episodes for synthesized tasks, hand-written for the examples."""
    if source == "examples":
        from toolkit.study.examples import example_gold

        return [example_gold(t) for t in tasks]
    from toolkit.rewards.replay import replay_gold

    return [replay_gold(t) for t in tasks]


def default_rewards(tool_schemas: Any = None) -> dict[str, Reward]:
    """The programmatic rewards plus the binary 'all essential rubric items passed' baseline."""
    out = {
        n: get_reward(n, **({"tool_schemas": tool_schemas} if n == "prove" and tool_schemas else {}))
        for n in PROGRAMMATIC
    }
    out["binary"] = binarize(out["rubric"], name="binary")
    return out


def scenario_table(
    tasks: Sequence[Task], golds: Sequence[Trajectory], rewards: dict[str, Reward], execute: bool = False
):
    """Mean score of each reward (columns) on each named scenario (rows) over ``tasks``, as a
    DataFrame; each score is divided by the reward's maximum so the columns compare (ToolRL: /4)."""
    import pandas as pd

    rows = []
    for name in SCENARIOS:
        trajs = [scenario(t, g, name) for t, g in zip(tasks, golds, strict=True)]
        if execute:
            from toolkit.rewards.replay import reexecute

            trajs = [
                reexecute(t, tr) if name != "gold" else g
                for t, tr, g in zip(tasks, trajs, golds, strict=True)
            ]
        row = {"scenario": name}
        for rname, r in rewards.items():
            scores = [res.score for res in r.batch(list(tasks), trajs)]
            row[rname] = statistics.fmean(scores) / r.range[1]
        rows.append(row)
    return pd.DataFrame(rows).set_index("scenario")


def sample_groups(
    tasks: Sequence[Task],
    golds: Sequence[Trajectory],
    group_size: int,
    seed: int = 0,
    execute: bool = False,
    rollouts: str | Path | None = None,
    min_edits: int = 0,
    max_edits: int = 3,
) -> list[tuple[Task, list[Trajectory]]]:
    """GRPO-style groups: the rollouts in ``rollouts`` (a trajectories JSONL; grouped by task id), or
    ``group_size`` perturbations of each gold trajectory (re-executed when ``execute``)."""
    if rollouts:
        by_id = {t.id: t for t in tasks}
        grouped: dict[str, list[Trajectory]] = defaultdict(list)
        for tr in read_jsonl(rollouts, Trajectory):
            if tr.task_id in by_id:
                grouped[tr.task_id].append(tr)
        return [(by_id[k], v) for k, v in grouped.items() if len(v) > 1]
    rng = random.Random(seed)
    groups = []
    for task, gold in zip(tasks, golds, strict=True):
        group = sample_group(task, gold, group_size, rng, max_edits=max_edits, min_edits=min_edits)
        if execute:
            from toolkit.rewards.replay import reexecute

            group = [reexecute(task, tr) for tr in group]
        groups.append((task, group))
    return groups


def zero_variance_table(groups: Sequence[tuple[Task, list[Trajectory]]], rewards: dict[str, Reward]):
    """Per reward: the share of groups whose scores are all equal (no GRPO advantage, no gradient),
    and the mean within-group standard deviation relative to the reward's range."""
    import pandas as pd

    rows = []
    for name, r in rewards.items():
        lo, hi = r.range
        span = (hi - lo) if hi - lo < float("inf") else 1.0
        flat, stds = 0, []
        for task, group in groups:
            scores = [res.score for res in r.batch([task] * len(group), group)]
            sd = statistics.pstdev(scores)
            flat += sd < 1e-9
            stds.append(sd / span)
        rows.append(
            {
                "reward": name,
                "zero_variance_share": flat / len(groups),
                "mean_group_std": statistics.fmean(stds),
            }
        )
    return pd.DataFrame(rows).set_index("reward")


def judge_grader(noise: float = 0.1, local_model: str | None = None, timeout: float = 600.0):
    """``(grader, label, server)``: a real judge when ``MCP_RL_JUDGE_BASE_URL`` / ``MCP_RL_JUDGE_MODEL``
    are set (key in ``MCP_RL_JUDGE_API_KEY_ENV``'s variable, default OPENAI_API_KEY); else a local
    transformers model served in-process when ``local_model`` names one (``LocalModelJudge``); else the
    local STAND-IN (``toolkit.rewards.standin``, a heuristic, not a model). Close ``server`` when done."""
    import logging
    import os

    from toolkit.rewards.judge import JudgeGrader

    for name in ("httpx", "httpx2"):  # one INFO line per request otherwise, when the root logger is at INFO
        logging.getLogger(name).setLevel(logging.WARNING)

    if os.environ.get("MCP_RL_JUDGE_BASE_URL") and os.environ.get("MCP_RL_JUDGE_MODEL"):
        key_env = os.environ.get("MCP_RL_JUDGE_API_KEY_ENV", "OPENAI_API_KEY")
        grader = JudgeGrader(api_key_env=key_env if os.environ.get(key_env) else None)
        return grader, f"LLM judge {grader.model}", None
    if local_model:
        from toolkit.rewards.local_judge import LocalModelJudge

        server = LocalModelJudge(local_model).__enter__()
        return (
            JudgeGrader(timeout=timeout, **server.judge_config()),
            f"local model {local_model} (in-process)",
            server,
        )
    from toolkit.rewards.standin import StandInJudge

    server = StandInJudge(noise=noise).__enter__()
    grader = JudgeGrader(**server.judge_config())
    return grader, f"STAND-IN heuristic judge (no LLM; noise={noise})", server


def calibration_frames(report: dict[str, Any]):
    """The calibration report as a DataFrame: one row overall, one per rubric category."""
    import pandas as pd

    rows = [{"category": "overall", **report["overall"]}]
    rows += [{"category": c, **v} for c, v in report["per_category"].items()]
    return pd.DataFrame(rows).set_index("category")


def zero_variance_by_policy(
    tasks: Sequence[Task],
    golds: Sequence[Trajectory],
    rewards: dict[str, Reward],
    group_size: int,
    policies: dict[str, tuple[int, int]],
    seed: int = 0,
    execute: bool = False,
):
    """Zero-variance share per reward (rows) for several simulated policy strengths (columns), each
    ``name: (min_edits, max_edits)`` perturbations per sample. Returns ``(table, groups_by_policy)``."""
    import pandas as pd

    cols, groups_by = {}, {}
    for name, (lo, hi) in policies.items():
        groups = sample_groups(
            tasks, golds, group_size, seed=seed, execute=execute, min_edits=lo, max_edits=hi
        )
        groups_by[name] = groups
        cols[name] = zero_variance_table(groups, rewards)["zero_variance_share"]
    return pd.DataFrame(cols), groups_by


def plot_zero_variance(table, ax=None):
    """Bar chart of the zero-variance share per reward (one bar group per reward, one bar per column)."""
    import matplotlib.pyplot as plt

    ax = ax or plt.subplots(figsize=(7, 3))[1]
    data = table[["zero_variance_share"]] if "zero_variance_share" in table else table
    data.plot.bar(ax=ax, legend=data.shape[1] > 1)
    ax.set_ylabel("groups with zero variance")
    ax.set_ylim(0, 1)
    ax.set_title("GRPO groups with no learning signal, per reward")
    ax.tick_params(axis="x", rotation=0)
    return ax
