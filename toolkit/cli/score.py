"""`mcp-rl score`: score trajectories against their tasks with any registered reward; `mcp-rl rescore`:
re-score a GRPO run's rollout log (``<run>/grpo/rollouts.jsonl``) offline with several rewards."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from toolkit.records import RecordError, Task, Trajectory, dumps, read_jsonl


def register(subparsers: Any) -> None:
    from toolkit.rewards.base import list_rewards

    p = subparsers.add_parser(
        "score",
        help="score trajectories with a reward (per trajectory and aggregate)",
        description="Score each trajectory against its task (matched by task_id) with a reward.",
    )
    p.add_argument("--reward", required=True, choices=list_rewards(), help="reward name")
    p.add_argument("--tasks", required=True, help="tasks JSONL")
    p.add_argument("--trajectories", required=True, help="trajectories JSONL")
    p.add_argument(
        "--config",
        default="{}",
        help="reward config as JSON, e.g. '{\"alpha\": 0.3}' or, for rubric-judge, "
        '\'{"base_url": "http://127.0.0.1:8000/v1", "model": "M", "api_key_env": "JUDGE_KEY"}\'',
    )
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="rubric-judge only: also report the judge's agreement with the programmatic grader "
        "(accuracy, Cohen's kappa, overall and per rubric category)",
    )
    p.add_argument(
        "--judge-standin",
        action="store_true",
        help="rubric-judge / --calibrate: use the local stand-in judge (a keyword heuristic, NOT an LLM; "
        "for trying the pipeline without an endpoint)",
    )
    p.add_argument("--json", action="store_true", help="print everything as one JSON object")
    p.set_defaults(func=run_score)

    r = subparsers.add_parser(
        "rescore",
        help="re-score a GRPO rollout log (grpo/rollouts.jsonl) offline with several rewards",
        description="Score every logged episode against its task with each reward; print each reward's mean "
        "per drift pattern (turn cap, extra calls, retry after a failed call, ...) and how often two rewards "
        "order the episodes of a group differently. Successful calls are executed again in a fresh episode "
        "to recover the state diff the log does not keep.",
    )
    r.add_argument("--tasks", required=True, help="the run's tasks JSONL (e.g. <run>/tasks/train.jsonl)")
    r.add_argument("--rollouts", required=True, help="the rollout log (e.g. <run>/grpo/rollouts.jsonl)")
    r.add_argument(
        "--reward",
        nargs="+",
        default=["outcome", "cpu-demo"],
        help="reward names; 'cpu-demo' is the cpu-demo recipe's rubric + 0.5 prove-kit (beta 0)",
    )
    r.add_argument("--no-replay", action="store_true", help="do not re-execute calls (no state diffs)")
    r.add_argument("--out", help="also write every episode's scores here (JSONL)")
    r.add_argument("--json", action="store_true", help="print the summary as JSON")
    r.set_defaults(func=run_rescore)


def score_files(
    reward_name: str, tasks_path: str, trajs_path: str, config: dict[str, Any], calibrate: bool = False
) -> dict[str, Any]:
    """Per-trajectory results and aggregates (mean score, mean of each breakdown component); with
    ``calibrate`` (rubric-judge) also the judge-vs-programmatic calibration report."""
    from toolkit.rewards.base import get_reward

    tasks = {t.id: t for t in read_jsonl(tasks_path, Task)}
    trajs: list[Trajectory] = read_jsonl(trajs_path, Trajectory)
    for path, records, what in ((tasks_path, tasks, "tasks"), (trajs_path, trajs, "trajectories")):
        if not records:  # nothing to score is a mistake (wrong file, a rollout that wrote nothing)
            raise RecordError(f"{path}: no {what} in the file (it is empty)")
    missing = sorted({tr.task_id for tr in trajs} - set(tasks))
    if missing:
        raise RecordError(
            f"{trajs_path}: trajectories for unknown task id(s) {missing[:5]} (not in {tasks_path})"
        )
    reward = get_reward(reward_name, **config)
    results = reward.batch([tasks[tr.task_id] for tr in trajs], trajs)
    rows = [
        {
            "task_id": tr.task_id,
            "score": r.score,
            "breakdown": r.breakdown,
            "ungraded": r.details.get("ungraded", 0),
        }
        for tr, r in zip(trajs, results, strict=True)
    ]
    agg: dict[str, Any] = {"n": len(rows), "reward": reward.name, "range": list(reward.range)}
    if rows:
        agg["mean"] = sum(r["score"] for r in rows) / len(rows)
        agg["full_marks"] = sum(math.isclose(r["score"], reward.range[1]) for r in rows) / len(rows)
        keys = sorted({k for r in rows for k in r["breakdown"]})
        agg["components"] = {
            k: sum(r["breakdown"][k] for r in rows if k in r["breakdown"])
            / sum(k in r["breakdown"] for r in rows)
            for k in keys
        }
        agg["ungraded"] = sum(r["ungraded"] for r in rows)
    out: dict[str, Any] = {"aggregate": agg, "trajectories": rows}
    if calibrate:
        from toolkit.study.calibration import calibration_report

        grader = getattr(reward, "grader", None)
        if getattr(grader, "name", "") != "judge":
            raise ValueError("--calibrate needs --reward rubric-judge")
        out["calibration"] = calibration_report([tasks[tr.task_id] for tr in trajs], trajs, grader)
        out["judge_stats"] = dict(grader.stats)
    return out


def run_score(args: argparse.Namespace) -> int:
    try:
        config = json.loads(args.config)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--config is not valid JSON: {exc}") from exc
    if args.judge_standin:
        from toolkit.rewards.standin import StandInJudge

        with StandInJudge() as judge:
            print("note: judging with the local STAND-IN heuristic, not an LLM", file=sys.stderr)
            out = score_files(
                args.reward, args.tasks, args.trajectories, {**config, **judge.judge_config()}, args.calibrate
            )
    else:
        out = score_files(args.reward, args.tasks, args.trajectories, config, args.calibrate)
    if args.json:
        print(dumps(out, indent=1, default=str))
        return 0
    agg = out["aggregate"]
    print(f"{'task_id':<32} {'score':>8}  components")
    for row in out["trajectories"]:
        comps = " ".join(f"{k}={v:.3g}" for k, v in row["breakdown"].items() if "." not in k)
        print(f"{row['task_id']:<32} {row['score']:>8.3f}  {comps}")
    if agg["n"]:
        lo, hi = agg["range"]
        print(
            f"\n{agg['reward']}: n={agg['n']} mean={agg['mean']:.3f} full marks={agg['full_marks']:.1%} range=[{lo}, {hi}]"
        )
        print("components: " + " ".join(f"{k}={v:.3f}" for k, v in agg["components"].items()))
        if agg["ungraded"]:
            print(f"ungraded items: {agg['ungraded']}")
    else:
        print("no trajectories")
    if "calibration" in out:
        cal = out["calibration"]
        print(f"\njudge vs programmatic ({cal['ungraded']} ungraded)")
        print(f"{'category':<22} {'n':>5} {'accuracy':>9} {'kappa':>7}")
        for cat, row in [("overall", cal["overall"]), *cal["per_category"].items()]:
            print(f"{cat:<22} {row['n']:>5} {row['accuracy']:>9.3f} {row['kappa']:>7.3f}")
    return 0


def run_rescore(args: argparse.Namespace) -> int:
    from toolkit.records import write_jsonl
    from toolkit.rewards.base import get_reward, list_rewards
    from toolkit.study.drift import old_reward
    from toolkit.study.rescore import markdown_summary, rescore_rollouts

    rewards = {}
    for name in args.reward:
        if name == "cpu-demo":
            rewards[name] = old_reward()
        elif name in list_rewards():
            rewards[name] = get_reward(name)
        else:
            raise ValueError(f"unknown reward {name!r}; known: cpu-demo, {', '.join(list_rewards())}")
    out = rescore_rollouts(args.tasks, args.rollouts, rewards, replay=not args.no_replay)
    if args.out:
        write_jsonl(args.out, out["episodes"])
    if args.json:
        print(dumps(out["summary"], indent=1))
    else:
        summary = out["summary"]
        print(f"{summary['n']} episodes in {summary['groups']} groups (step, task)\n")
        print(markdown_summary(summary, list(rewards)))
    return 0
