"""Issue 49's levers side by side on the dev set: the frozen warm start (arm ``warm``) against arms that
each change the recipe (an RFT round, RFT then GRPO, GRPO alone, other seeds), every arm trained and
evaluated in its own process, ``--parallel`` at a time (a GPU holds several; two cores hold one).

    python -m bench.lever_sweep ROOT --out sweep.json --set tasks=T.jsonl --set eval_tasks=E.jsonl \\
        --arm rft-s0:stop=rft,rft.num_generations=2,rft.max_tasks=96 \\
        --arm rft-s1:stop=rft,rft.num_generations=2,rft.max_tasks=96,seed=1 \\
        --arm rft-grpo:rft.num_generations=2,rft.max_tasks=96 --parallel 4 --sampled 4

- An arm is ``NAME:KEY=VALUE,...``: recipe overrides as ``--set`` takes them (values parsed as YAML), on
  top of the recipe (``--recipe``, ``--set``) started from ``--warm-start`` (its SFT stage skipped).
  ``stop=rft`` stops after the RFT round (``run_recipe(stop_after="rft")``: the round's adapter is the
  arm's); otherwise the whole recipe runs, GRPO included, without its own evaluations.
- Every arm's adapter, and the warm start, is evaluated greedily on the first ``--dev-tasks`` dev tasks
  (the recipe's ``eval_tasks``) and, with ``--sampled K``, K episodes per task at the rollout temperature.
  Every arm must read the same task files, so the recipe must name them (a run's ``tasks/``).
- ``--deadline S``: arms still running after S seconds are stopped (their process group killed) and
  reported as unfinished; the command then exits 1, as it does when an arm fails, after writing what the
  finished arms show. Run it again with the same arguments to go on: every stage is kept once done.
- Out: per arm, after - warm start paired by task: greedy pass@0.75 in the claim's groups (in-template,
  held-out templates, all), per kind, the claim's guards (``bench.lever_rft.difference``), and the mean
  pass over the K samples in the same groups; the run's RFT counts and stage timings; every arm's status;
  for arms that differ only in ``seed`` / ``rollout.seed``, the mean over those seeds (``seed_means``).
- ``--report``: run nothing, compare what ROOT holds (the arms as given) and write ``--out``.

Layout: ``toolkit.runs.SweepFolder`` (``ROOT/<arm>/run``, ``ROOT/<arm>/dev``, ``ROOT/logs/<arm>.log``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.lever_rft import SHIPPED_WARM_START, difference, source_commit
from bench.reproduce_claim import base_recipe, derived
from toolkit.argtypes import positive_int
from toolkit.records import dumps, read_jsonl, read_task_results
from toolkit.train.claim_eval import ClaimEvaluator

WARM = "warm"  # the arm that is the warm start itself
STOPS = ("rft", "grpo")  # where an arm's run ends: after the RFT round, or the whole recipe
PROGRESS_EVERY_S = 30.0


def say(message: str, started: float | None = None) -> None:
    took = f" ({time.time() - started:.0f} s)" if started is not None else ""
    print(f"[sweep] {message}{took}", flush=True)


@dataclass(frozen=True)
class Arm:
    name: str
    stop: str = "grpo"
    overrides: dict[str, Any] = field(default_factory=dict)
    unset: tuple[str, ...] = ()


def parse_arm(text: str) -> Arm:
    """``NAME:KEY=VALUE,...`` (``stop=rft|grpo`` among them) -> Arm; a clear ValueError otherwise."""
    from toolkit.cli.train import parse_set_items

    name, _, rest = text.partition(":")
    if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name) or name == WARM or name == "logs":
        raise ValueError(
            f"--arm {text!r}: a name of lower-case letters, digits, '-', '_', '.' (not {WARM!r}) comes first"
        )
    items = [item for item in rest.split(",") if item.strip()]
    stop = "grpo"
    stops = [i for i in items if i.partition("=")[0].strip() == "stop"]
    if len(stops) > 1:
        raise ValueError(f"--arm {name}: stop= given {len(stops)} times")
    for item in stops:
        stop = item.partition("=")[2].strip()
        if stop not in STOPS:
            raise ValueError(f"--arm {name}: stop must be one of {', '.join(STOPS)}, got {stop!r}")
        items.remove(item)
    overrides, unset = parse_set_items(items)  # none at all: the recipe's GRPO from the warm start
    return Arm(name, stop, overrides, tuple(unset))


def arm_named(args: argparse.Namespace, name: str) -> Arm:
    return next(a for a in map(parse_arm, args.arm) if a.name == name)


def arm_recipe(args: argparse.Namespace, arm: Arm | None) -> Any:
    from toolkit.train.config import with_overrides

    recipe = derived(base_recipe(args), warm_start=str(args.warm_start))
    if arm is not None:
        recipe = with_overrides(recipe, arm.overrides, unset=list(arm.unset))
    return recipe


def dev_tasks(args: argparse.Namespace, recipe: Any) -> list:
    from toolkit.train.task_sources import read_tasks

    if not recipe.tasks or not recipe.eval_tasks:
        raise SystemExit(
            "lever_sweep compares every arm on the same tasks: name the task files with"
            " --set tasks=FILE --set eval_tasks=FILE (a run's tasks/train.jsonl and tasks/eval.jsonl)"
        )
    return read_tasks(recipe.eval_tasks, "eval")[: args.dev_tasks]


def check_args(args: argparse.Namespace, arms: list[Arm]) -> None:
    """Everything an arm would find wrong, found before any process starts (nothing written)."""
    from toolkit.runs import has_adapter
    from toolkit.train.config import check_recipe_types

    if not has_adapter(args.warm_start):
        raise SystemExit(f"--warm-start {args.warm_start} holds no adapter")
    names = [a.name for a in arms]
    if len(set(names)) != len(names):
        raise SystemExit(f"--arm names must differ: {names}")
    for arm in [None, *arms]:
        recipe = arm_recipe(args, arm)
        check_recipe_types(recipe)
        dev_tasks(args, recipe)


# ---- one arm, in its own process ------------------------------------------------------------------------


def arm_spec(args: argparse.Namespace, recipe: Any, tasks: list) -> dict[str, Any]:
    return {
        "recipe": json.loads(dumps(recipe.to_dict())),
        "warm_start": str(args.warm_start),
        "dev_tasks": [t.id for t in tasks],
        "sampled": args.sampled,
    }


def check_spec(path: Path, spec: dict[str, Any]) -> None:
    """The arm's first start writes what it runs with; a later start with anything else is refused (its
    kept stages would be another arm's results under this arm's name)."""
    if path.exists():
        kept = json.loads(path.read_text())
        changed = sorted(k for k in spec if kept.get(k) != spec[k])
        if changed:
            raise SystemExit(
                f"{path}: this arm was started with other {', '.join(changed)}; use another ROOT or arm name"
            )
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(spec, indent=1, sort_keys=True) + "\n")


def run_arm(args: argparse.Namespace, name: str) -> None:
    """Train the arm (unless ``warm`` or done) and evaluate its adapter on the dev set."""
    from toolkit.runs import SweepFolder, has_adapter
    from toolkit.train.pipeline import run_recipe, set_threads
    from toolkit.train.rft import last_round_adapter

    set_threads(None)  # $MCP_RL_THREADS: several arms share the machine's cores
    folder = SweepFolder(args.root)
    arm = None if name == WARM else arm_named(args, name)
    recipe = arm_recipe(args, arm)
    tasks = dev_tasks(args, recipe)
    check_spec(folder.spec(name), arm_spec(args, recipe, tasks))
    if arm is None:
        adapter = args.warm_start
    else:
        run = folder.run(name)
        adapter = last_round_adapter(run, recipe.rft) if arm.stop == "rft" else run.adapter
        if not has_adapter(adapter):
            started = time.time()
            say(f"{name}: training ({arm.stop} last) into {run.root}")
            stop_after = "rft" if arm.stop == "rft" else None
            run_recipe(recipe, run.root, resume=run.recipe_file.exists(), stop_after=stop_after)
            say(f"{name}: trained", started)
        if not has_adapter(adapter):  # rft.if_none_kept: skip, say, kept no episode and made no round
            raise SystemExit(f"{name}: the run made no adapter at {adapter}; see {run.summary_file}")
    with ClaimEvaluator(recipe, samples=args.sampled) as evaluator:
        evaluator.greedy(adapter, name, tasks, folder.dev(name))
        if args.sampled:
            evaluator.sampled(adapter, name, tasks, folder.samples(name))
    say(f"{name}: done")


# ---- the arms side by side ------------------------------------------------------------------------------


def child_command(args: argparse.Namespace, name: str) -> list[str]:
    cmd = [sys.executable, "-m", "bench.lever_sweep", str(args.root), "--out", str(args.out)]
    cmd += [
        "--recipe",
        str(args.recipe),
        "--warm-start",
        str(args.warm_start),
        "--sampled",
        str(args.sampled),
    ]
    if args.dev_tasks:
        cmd += ["--dev-tasks", str(args.dev_tasks)]
    for item in args.set:
        cmd += ["--set", item]
    for item in args.arm:
        cmd += ["--arm", item]
    if args.verbose:
        cmd.append("--verbose")
    return [*cmd, "--only", name]


def last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][-160:] if lines else ""


def stop_groups(procs: list[subprocess.Popen], grace_s: float = 10.0) -> None:
    """Each arm's process group (the arm, and the engines and servers it started): SIGTERM to all of them,
    one grace period for all, then SIGKILL to what is left (bounded: 2 x ``grace_s`` however many)."""

    def alive(proc: subprocess.Popen) -> bool:
        proc.poll()  # reap the arm itself so that its group can empty
        try:
            os.killpg(proc.pid, 0)
            return True
        except ProcessLookupError:
            return False

    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = [p for p in procs if alive(p)]
        for proc in left:
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + grace_s
        while left and time.time() < deadline:
            time.sleep(0.1)
            left = [p for p in left if alive(p)]
        if not left:
            return


def run_all(args: argparse.Namespace, names: list[str]) -> dict[str, str]:
    """Every arm in its own process, ``--parallel`` at a time; returns name -> ok | failed (rc N) |
    unfinished (deadline)."""
    from toolkit.reaper import watch
    from toolkit.runs import SweepFolder

    watch()  # the arms carry this process's marker: killed in any way, it takes them (and theirs) along
    folder = SweepFolder(args.root)
    started, waiting = time.time(), list(names)
    running: dict[str, subprocess.Popen] = {}
    status: dict[str, str] = {}
    last_report = 0.0
    try:
        while waiting or running:
            for name, proc in list(running.items()):
                if proc.poll() is not None:
                    del running[name]
                    stop_groups(
                        [proc]
                    )  # what the arm started and left running (an engine, a server) goes too
                    status[name] = "ok" if proc.returncode == 0 else f"failed (rc {proc.returncode})"
                    say(f"{name}: {status[name]}; log {folder.log(name)}", started)
            if args.deadline and time.time() - started > args.deadline:
                stop_groups(list(running.values()))
                for name, proc in running.items():
                    status[name] = "ok" if proc.returncode == 0 else "unfinished (deadline)"
                    say(f"{name}: {status[name]} at the deadline; log {folder.log(name)}", started)
                for name in waiting:
                    status[name] = "unfinished (deadline)"
                running.clear()
                waiting.clear()
                break
            while waiting and len(running) < args.parallel:
                name = waiting.pop(0)
                log_path = folder.log(name)
                log_path.parent.mkdir(parents=True, exist_ok=True)
                with log_path.open("a") as log:  # the child keeps its own copy of the descriptor
                    log.write(f"[sweep] {name}: started {time.strftime('%Y-%m-%d %H:%M:%S')}\n")
                    log.flush()  # an earlier sweep's lines are not read as this one's progress
                    running[name] = subprocess.Popen(
                        child_command(args, name),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                say(f"{name}: started ({len(running)} running, {len(waiting)} waiting)", started)
            if running and time.time() - last_report >= PROGRESS_EVERY_S:
                last_report = time.time()
                for name in running:
                    line = last_line(folder.log(name)).removeprefix(f"[sweep] {name}: ")  # said once
                    say(f"{name}: {line}", started)
            time.sleep(1.0)
    finally:  # an interrupted sweep leaves no arm behind
        stop_groups(list(running.values()))
    return status


def sampled_block(tasks: list, before: Path, after: Path) -> dict[str, Any] | None:
    """The mean pass over each task's samples, after - before, in the claim's groups (None: no samples)."""
    from toolkit.eval.claim import GROUPS, sampled_pass, seed_mean_difference, template_group
    from toolkit.records import SampleRow

    if not (before.exists() and after.exists()):
        return None
    (b, kb), (a, ka) = (sampled_pass(read_jsonl(p, SampleRow)) for p in (before, after))
    out: dict[str, Any] = {"k": min(kb, ka)}
    for group in GROUPS:
        ids = [t.id for t in tasks if group == "all" or template_group(t) == group]
        missing = [i for i in ids if i not in b or i not in a]
        if missing:
            raise SystemExit(
                f"{before} or {after}: no samples of {len(missing)} dev tasks ({missing[0]}, ...)"
            )
        block = np.array([b[i] for i in ids]), np.array([[a[i] for i in ids]])
        out[group] = seed_mean_difference(*block) if ids else None
    return out


def compare(args: argparse.Namespace, names: list[str], status: dict[str, str]) -> dict[str, Any]:
    from toolkit.runs import EVAL_MARKER, SweepFolder
    from toolkit.train.device import machine_line, probe
    from toolkit.train.rft import round_summaries

    folder = SweepFolder(args.root)
    tasks = dev_tasks(args, arm_recipe(args, None))
    out: dict[str, Any] = {
        "commit": args.commit,
        # --report reads arms run elsewhere (a lent GPU): the machine it names is only the report's
        ("report_made_on" if args.report else "machine"): machine_line(probe()),
        "recipe": str(args.recipe),
        "set": list(args.set),
        "warm_start": str(args.warm_start),
        "dev_tasks": len(tasks),
        "sampled_k": args.sampled,
        "status": status,
        "warm": None,
        "arms": {},
        "seed_means": {},
    }
    warm = folder.dev(WARM)
    if not (warm / EVAL_MARKER).exists():
        return out
    before = read_task_results(warm / "results.jsonl")
    out["warm"] = warm_block(tasks, before, folder.samples(WARM))
    for name in names:
        if name == WARM or not (folder.dev(name) / EVAL_MARKER).exists():
            continue
        arm = arm_named(args, name)
        summary_file = folder.run(name).summary_file
        summary = json.loads(summary_file.read_text()) if summary_file.exists() else {}
        out["arms"][name] = {
            "stop": arm.stop,
            "overrides": arm.overrides,
            **round_summaries(summary),
            "timings_s": summary.get("timings_s"),
            **difference(tasks, before, read_task_results(folder.dev(name) / "results.jsonl")),
            "sampled": sampled_block(tasks, folder.samples(WARM), folder.samples(name)),
        }
    out["seed_means"] = seed_means(args, tasks, before)
    return out


def warm_block(tasks: list, results: list, samples: Path) -> dict[str, Any]:
    """The warm start's own dev-set levels: greedy pass@0.75 per group and, when sampled, the mean pass."""
    from toolkit.eval.claim import GROUPS, greedy_row, sampled_pass, template_group
    from toolkit.records import SampleRow

    passed = {r.task_id: greedy_row(r)["pass"] for r in results}
    per_task = sampled_pass(read_jsonl(samples, SampleRow))[0] if samples.exists() else None
    out: dict[str, Any] = {}
    for group in GROUPS:
        ids = [t.id for t in tasks if group == "all" or template_group(t) == group]
        out[group] = {
            "n_tasks": len(ids),
            "greedy": float(np.mean([passed[i] for i in ids])) if ids else None,
            "sampled": float(np.mean([per_task[i] for i in ids])) if ids and per_task else None,
        }
    return out


SEED_KEYS = ("seed", "rollout.seed")  # what arms that are seeds of one recipe may differ in


def seed_means(args: argparse.Namespace, tasks: list, before: list) -> dict[str, Any]:
    """Arms that differ only in their seeds (``SEED_KEYS``), two or more of them evaluated: the mean over
    them of after - warm start, paired by task, CI by bootstrap over tasks (the claim's rule), per group."""
    from toolkit.eval.claim import GROUPS, greedy_row, seed_mean_difference, template_group
    from toolkit.runs import EVAL_MARKER, SweepFolder

    folder = SweepFolder(args.root)
    groups: dict[str, list[str]] = {}
    for arm in map(parse_arm, args.arm):
        if (folder.dev(arm.name) / EVAL_MARKER).exists():
            rest = {k: v for k, v in arm.overrides.items() if k not in SEED_KEYS}
            key = json.dumps([arm.stop, rest, sorted(arm.unset)], sort_keys=True)
            groups.setdefault(key, []).append(arm.name)

    def passes(results: list) -> dict[str, float]:
        return {r.task_id: greedy_row(r)["pass"] for r in results}

    warm = passes(before)
    out: dict[str, Any] = {}
    for names in (n for n in groups.values() if len(n) >= 2):
        after = [passes(read_task_results(folder.dev(n) / "results.jsonl")) for n in names]
        block: dict[str, Any] = {"arms": names}
        for group in GROUPS:
            ids = [t.id for t in tasks if group == "all" or template_group(t) == group]
            if ids:
                block[group] = seed_mean_difference(
                    np.array([warm[i] for i in ids]), np.array([[a[i] for i in ids] for a in after])
                )
        out["+".join(names)] = block
    return out


def reported_status(args: argparse.Namespace, names: list[str]) -> dict[str, str]:
    """``--report``: what ROOT holds of each arm (nothing was run)."""
    from toolkit.runs import EVAL_MARKER, SweepFolder

    folder = SweepFolder(args.root)
    return {
        n: "evaluated" if (folder.dev(n) / EVAL_MARKER).exists() else "no evaluation in ROOT" for n in names
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lever_sweep", description=__doc__.split("\n")[0])
    parser.add_argument("root", type=Path, help="the sweep's folder (one per arm, logs/); resumable")
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    parser.add_argument("--recipe", default="cpu-learn", help="recipe name or YAML path (default cpu-learn)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override")
    parser.add_argument("--warm-start", type=Path, default=SHIPPED_WARM_START, help="the frozen warm start")
    parser.add_argument("--arm", action="append", default=[], metavar="NAME:KEY=VALUE,...", help="an arm")
    parser.add_argument("--dev-tasks", type=positive_int, default=None, help="only the first N dev tasks")
    parser.add_argument(
        "--sampled", type=int, default=0, help="K sampled episodes per dev task (0: none; else at least 2)"
    )
    parser.add_argument("--parallel", type=positive_int, default=1, help="arms at a time (1)")
    parser.add_argument(
        "--deadline", type=float, default=0.0, help="stop arms still running after S s (0: none)"
    )
    parser.add_argument("--report", action="store_true", help="run nothing: compare what ROOT holds")
    parser.add_argument("--only", default=None, help=argparse.SUPPRESS)  # one arm, in this process
    parser.add_argument("--verbose", action="store_true", help="show the libraries' logs and warnings")
    args = parser.parse_args(argv)
    if args.sampled < 0 or args.sampled == 1:  # one sample is no sampled pass rate (ClaimEvaluator)
        parser.error("--sampled must be 0 (none) or at least 2")
    if args.deadline < 0:
        parser.error("--deadline must be 0 (none) or a positive number of seconds")
    from toolkit.train.quiet import quiet_libraries

    quiet_libraries(args.verbose or None)
    if args.only is not None:
        run_arm(args, args.only)
        return 0
    try:
        arms = [parse_arm(a) for a in args.arm]
        check_args(args, arms)
    except ValueError as exc:
        parser.error(str(exc))
    args.commit = source_commit()
    names = [WARM, *(a.name for a in arms)]
    started = time.time()
    say(f"{len(names)} arms ({', '.join(names)}), {args.parallel} at a time, into {args.root}")
    status = reported_status(args, names) if args.report else run_all(args, names)
    result = compare(args, names, status)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(result, indent=1, sort_keys=True) + "\n")
    for name, arm in result["arms"].items():
        g = arm["all"]["greedy"]
        s = arm["sampled"]["all"]["diff"] if arm.get("sampled") else None
        say(
            f"{name}: dev pass@0.75 {g['before']:.3f} -> {g['after']:.3f} ({g['diff']:+.3f}"
            f" [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}])"
            + (f", sampled mean pass {s:+.3f}" if s is not None else "")
        )
    for name, block in result["seed_means"].items():
        g = block["all"]
        say(f"{name}: seed mean {g['diff']:+.3f} [{g['ci_low']:+.3f}, {g['ci_high']:+.3f}]")
    if args.report:
        say(f"wrote {args.out}", started)
        return 0
    failed = {n: s for n, s in status.items() if s != "ok"}
    say(f"wrote {args.out}" + (f"; not ok: {failed}" if failed else ""), started)
    return 1 if failed else 0


if __name__ == "__main__":  # vLLM's engine starts in a spawned process: the guard keeps it from re-running
    sys.exit(main())
