"""``bench.lever_sweep``: arms parsed and checked before anything starts, every arm compared with the warm
start on the same tasks (greedy and sampled), and arms that overrun the deadline stopped with every process
they started, reported, and the command's exit status non-zero."""

from __future__ import annotations

import argparse
import json
import os
import sys

import pytest
from test_eval_claim import result  # a greedy result that passes or not, as the claim's tests build it
from test_lever_rft import TASKS

from bench import lever_sweep
from bench.lever_sweep import Arm, check_spec, compare, parse_arm, run_all, sampled_block
from toolkit.records import SampleRow, write_jsonl
from toolkit.runs import EVAL_MARKER, SweepFolder


def test_an_arm_is_a_name_a_stop_and_recipe_overrides():
    arm = parse_arm("rft-s1:stop=rft,rft.num_generations=2,seed=1,grpo_sampling.guide_share=0.5")
    assert arm == Arm(
        "rft-s1", "rft", {"rft.num_generations": 2, "seed": 1, "grpo_sampling.guide_share": 0.5}, ()
    )
    assert parse_arm("grpo") == Arm("grpo", "grpo", {}, ())  # the recipe's GRPO from the warm start
    assert parse_arm("x:warm_start=null").unset == ("warm_start",)
    for bad, match in (
        ("warm:seed=1", "a name of lower-case"),
        ("Big:seed=1", "a name of lower-case"),
        ("a:stop=sft", "stop must be one of rft, grpo"),
        ("a:seed", "KEY=VALUE"),
        ("a:stop=rft,seed=1,stop=grpo", "stop= given 2 times"),
    ):
        with pytest.raises(ValueError, match=match):
            parse_arm(bad)


def args_for(tmp_path, **extra) -> argparse.Namespace:
    values = {
        "root": tmp_path / "sweep",
        "out": tmp_path / "sweep.json",
        "recipe": "cpu-learn",
        "set": [],
        "warm_start": tmp_path / "warm",
        "arm": [],
        "dev_tasks": None,
        "sampled": 0,
        "parallel": 1,
        "deadline": 0.0,
        "verbose": False,
        "commit": None,
        "report": False,
    }
    values.update(extra)
    return argparse.Namespace(**values)


def test_bad_input_stops_the_sweep_before_any_process_starts(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match="holds no adapter"):
        lever_sweep.check_args(args_for(tmp_path), [])
    warm = tmp_path / "warm"
    warm.mkdir()
    (warm / "adapter_config.json").write_text("{}")
    with pytest.raises(SystemExit, match="names must differ"):
        lever_sweep.check_args(args_for(tmp_path), [parse_arm("a"), parse_arm("a:seed=1")])
    with pytest.raises(SystemExit, match="name the task files"):  # arms must share their tasks
        lever_sweep.check_args(args_for(tmp_path), [parse_arm("a")])
    assert not (tmp_path / "sweep").exists()


def write_eval(folder, passed: set[int], samples: list[tuple[int, float]] | None = None) -> None:
    folder.mkdir(parents=True)
    write_jsonl(folder / "results.jsonl", [result(t.id, i in passed) for i, t in enumerate(TASKS)])
    (folder / EVAL_MARKER).write_text("{}")
    if samples is not None:  # (task index, score) per sampled episode
        write_jsonl(
            folder / "samples.jsonl",
            [
                SampleRow(
                    task_id=TASKS[i].id, category=None, score=s, answer_failed=False, stop_reason="finish"
                )
                for i, s in samples
            ],
        )


def test_each_finished_arm_is_compared_with_the_warm_start_greedy_and_sampled(tmp_path, monkeypatch):
    arms = [
        "rft:stop=rft,seed=1",
        "rft2:stop=rft,seed=2,rollout.seed=2",
        "wide:stop=rft,rft.max_tasks=9",
        "late:seed=2",
    ]
    args = args_for(tmp_path, arm=arms, sampled=2)
    monkeypatch.setattr(lever_sweep, "dev_tasks", lambda args, recipe: TASKS)
    monkeypatch.setattr(lever_sweep, "arm_recipe", lambda args, arm: None)
    folder = SweepFolder(args.root)
    two = [(i, 0.0) for i in range(8) for _ in range(2)]
    write_eval(folder.dev("warm"), {0, 6}, samples=two)
    # rft: gains t1 and t3 greedily; one of t1's two samples passes
    write_eval(
        folder.dev("rft"),
        {0, 1, 3, 6},
        samples=[(i, float(i == 1 and k == 0)) for i in range(8) for k in range(2)],
    )
    (folder.run("rft").root).mkdir(parents=True)
    folder.run("rft").summary_file.write_text(json.dumps({"rft": {"kept": 5}, "timings_s": {"rft_s": 3}}))
    write_eval(folder.dev("rft2"), {0, 1, 6})
    write_eval(folder.dev("wide"), {0, 1, 2, 3, 6})
    status = {"warm": "ok", "rft": "ok", "rft2": "ok", "wide": "ok", "late": "unfinished (deadline)"}
    out = compare(args, list(status), status)
    assert (
        set(out["arms"]) == {"rft", "rft2", "wide"} and out["status"] == status
    )  # no results, no row: only its status
    rft = out["arms"]["rft"]
    assert rft["stop"] == "rft" and rft["overrides"] == {"seed": 1} and rft["rft"] == {"kept": 5}
    assert rft["all"]["greedy"]["diff"] == pytest.approx(2 / 8)
    assert rft["in_template"]["greedy"]["diff"] == pytest.approx(2 / 6)
    assert rft["sampled"]["k"] == 2
    assert rft["sampled"]["all"]["diff"] == pytest.approx(0.5 / 8)
    assert rft["sampled"]["held_out_templates"]["diff"] == pytest.approx(0.0)
    assert out["arms"]["rft2"]["sampled"] is None  # no samples: no sampled block
    # rft and rft2 differ only in their seeds: their mean is reported; wide is another recipe
    assert list(out["seed_means"]) == ["rft+rft2"]
    mean = out["seed_means"]["rft+rft2"]
    assert mean["all"]["diff"] == pytest.approx((2 / 8 + 1 / 8) / 2) and mean["all"]["n_seeds"] == 2
    assert mean["in_template"]["diff"] == pytest.approx((2 / 6 + 1 / 6) / 2)


def test_arms_over_the_deadline_are_stopped_with_their_children_and_failures_reported(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    pids.mkdir()
    # each fake arm starts a grandchild (an engine or a server, say) and records both pids
    spawn = (
        "import os, subprocess, sys, time; "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
        f"open(os.path.join({str(pids)!r}, sys.argv[1]), 'w').write(f'{{os.getpid()}} {{c.pid}}'); "
        "print('working', flush=True); "
        "sys.exit(3) if sys.argv[1] == 'bad' else time.sleep(300)"
    )

    def child(args, name):
        return [sys.executable, "-c", spawn, name]

    monkeypatch.setattr(lever_sweep, "child_command", child)
    args = args_for(tmp_path, parallel=2, deadline=10.0)  # time to start on a loaded machine
    status = run_all(args, ["bad", "slow", "queued"])
    # "bad" fails at once, "queued" takes its place, "slow" and "queued" run into the deadline
    assert status == {
        "bad": "failed (rc 3)",
        "slow": "unfinished (deadline)",
        "queued": "unfinished (deadline)",
    }
    assert "working" in SweepFolder(args.root).log("slow").read_text()
    for name in ("bad", "slow", "queued"):
        for pid in map(int, (pids / name).read_text().split()):
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)  # every arm, and every process an arm started, is gone


KILLED_SWEEP = """
import sys, time
from bench import lever_sweep
from test_lever_sweep import args_for
spawn = "import os, subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); open(sys.argv[1], 'w').write(f'{os.getpid()} {c.pid}'); time.sleep(300)"
lever_sweep.child_command = lambda args, name: [sys.executable, "-c", spawn, sys.argv[1] + "/" + name]
from pathlib import Path
lever_sweep.run_all(args_for(Path(sys.argv[1]), parallel=2), ["a", "b"])
"""


def test_a_sweep_killed_with_sigkill_leaves_no_arm_and_no_process_an_arm_started(tmp_path):
    import signal
    import subprocess
    import time
    from pathlib import Path

    tests = Path(__file__).parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests.parent), str(tests)])}
    sweep = subprocess.Popen([sys.executable, "-c", KILLED_SWEEP, str(tmp_path)], env=env)
    try:
        deadline = time.time() + 60
        while not all((tmp_path / n).exists() and (tmp_path / n).read_text() for n in "ab"):
            assert time.time() < deadline and sweep.poll() is None, "the arms never started"
            time.sleep(0.2)
        pids = [int(p) for n in "ab" for p in (tmp_path / n).read_text().split()]
        sweep.send_signal(signal.SIGKILL)
        sweep.wait()
        deadline = time.time() + 20
        alive = pids
        while alive and time.time() < deadline:
            time.sleep(0.2)
            alive = [p for p in pids if Path(f"/proc/{p}").exists() and "Z" not in stat_state(p)]
        assert not alive, f"left running after the sweep was killed: {alive}"
    finally:
        if sweep.poll() is None:
            sweep.kill()


def stat_state(pid: int) -> str:
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_a_group_without_tasks_has_no_sampled_block_and_missing_samples_are_an_error(tmp_path):
    in_template = TASKS[:6]  # t6 and t7 come from held-out templates
    rows = [SampleRow(task_id=t.id, score=1.0, answer_failed=False) for t in in_template]
    write_jsonl(tmp_path / "before.jsonl", rows)
    write_jsonl(tmp_path / "after.jsonl", rows)
    block = sampled_block(in_template, tmp_path / "before.jsonl", tmp_path / "after.jsonl")
    assert block["held_out_templates"] is None and block["all"]["diff"] == 0.0
    write_jsonl(tmp_path / "after.jsonl", rows[:-1])  # samples of other dev tasks than the warm start's
    with pytest.raises(SystemExit, match="no samples of 1 dev tasks"):
        sampled_block(in_template, tmp_path / "before.jsonl", tmp_path / "after.jsonl")


def test_an_arm_restarted_with_other_settings_is_refused(tmp_path):
    spec = {"recipe": {"seed": 1}, "warm_start": "w", "dev_tasks": ["t0", "t1"], "sampled": 4}
    path = tmp_path / "rft" / "arm.json"
    check_spec(path, spec)
    check_spec(path, dict(spec))  # the same arm goes on
    with pytest.raises(SystemExit, match="started with other dev_tasks, recipe"):
        check_spec(path, {**spec, "recipe": {"seed": 2}, "dev_tasks": ["t0"]})


def test_a_sweep_whose_warm_start_failed_writes_the_statuses_and_exits_1(tmp_path, monkeypatch):
    monkeypatch.setattr(lever_sweep, "check_args", lambda args, arms: None)
    monkeypatch.setattr(lever_sweep, "source_commit", lambda: "abc")
    monkeypatch.setattr(lever_sweep, "dev_tasks", lambda args, recipe: TASKS)
    monkeypatch.setattr(lever_sweep, "arm_recipe", lambda args, arm: None)
    statuses = {"warm": "failed (rc 1)", "rft": "ok"}
    monkeypatch.setattr(lever_sweep, "run_all", lambda args, names: statuses)
    out = tmp_path / "sweep.json"
    assert lever_sweep.main([str(tmp_path / "root"), "--out", str(out), "--arm", "rft:stop=rft"]) == 1
    written = json.loads(out.read_text())
    assert written["status"] == statuses and written["arms"] == {} and written["seed_means"] == {}


@pytest.mark.parametrize("sampled", ["-1", "1"])
def test_a_sampled_count_that_is_no_sampled_pass_rate_is_refused_at_the_command_line(
    tmp_path, sampled, capsys
):
    """Before: --sampled 1 passed the command line and each arm failed when its evaluation began."""
    with pytest.raises(SystemExit) as exit_:
        lever_sweep.main([str(tmp_path / "sweep"), "--out", str(tmp_path / "o.json"), "--sampled", sampled])
    assert exit_.value.code == 2 and "--sampled must be 0 (none) or at least 2" in capsys.readouterr().err
    assert not (tmp_path / "sweep").exists()
