"""`python -m bench.reproduce_claim` (make reproduce-claim): issue 49's protocol as one resumable command.

The rules are checked on their own (the choice of the warm start, the frozen copy and its hashes, a root
made with another protocol), then the whole command runs once on the tiny random model with the smallest
protocol (two SFT lengths, two GRPO seeds, one test set of 2 tasks, 2 samples a task) and once more to
show that a finished root is read back, not trained or evaluated again."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench import reproduce_claim as rc

REPO = Path(__file__).resolve().parent.parent


def test_the_warm_start_is_the_best_greedy_then_sampled_then_shorter():
    assert rc.choose_warm_start({30: (0.20, 0.10), 60: (0.25, 0.05), 120: (0.22, 0.30)}) == 60
    assert rc.choose_warm_start({30: (0.25, 0.10), 60: (0.25, 0.12), 120: (0.25, 0.12)}) == 60
    assert rc.choose_warm_start({120: (0.3, 0.2), 30: (0.3, 0.2)}) == 30


def test_a_root_refuses_another_protocol(tmp_path):
    args = argparse.Namespace(
        recipe="cpu-learn", sft_lengths=[30], grpo_seeds=[0], test_seeds=[3101], test_tasks=300,
        samples=4, dev_tasks=None, set=[],
    )  # fmt: skip
    rc.open_root(tmp_path / "root", rc.protocol(args))
    rc.open_root(tmp_path / "root", rc.protocol(args))  # the same: fine
    args.grpo_seeds = [0, 1]
    with pytest.raises(SystemExit, match="grpo_seeds differ"):
        rc.open_root(tmp_path / "root", rc.protocol(args))
    args.grpo_seeds, args.set = [0], ["grpo.max_steps=9"]  # the recipe's settings are bound too
    with pytest.raises(SystemExit, match="recipe_settings, set differ"):
        rc.open_root(tmp_path / "root", rc.protocol(args))


def test_the_frozen_warm_start_is_copied_once_and_checked_on_every_start(tmp_path):
    for steps in (1, 2):
        adapter = tmp_path / "warm" / f"sft-{steps}" / "sft" / "adapter"
        adapter.mkdir(parents=True)
        (adapter / "adapter_config.json").write_text(json.dumps({"steps": steps}))
    assert rc.freeze_stage(tmp_path, {1: (0.1, 0.2), 2: (0.3, 0.0)}) == 2
    record = json.loads((tmp_path / "warm_start.json").read_text())
    assert record["sft_steps"] == 2 and set(record["dev"]) == {"1", "2"}
    assert json.loads((tmp_path / "warm_start" / "adapter_config.json").read_text()) == {"steps": 2}
    # a later start keeps the choice, whatever the dev numbers now say
    assert rc.freeze_stage(tmp_path, {1: (0.9, 0.9), 2: (0.0, 0.0)}) == 2
    (tmp_path / "warm_start" / "adapter_config.json").write_text("{}")
    with pytest.raises(SystemExit, match="frozen warm start changed"):
        rc.freeze_stage(tmp_path, {})


def test_status_reads_where_a_stopped_run_stands_and_runs_nothing(tmp_path):
    root = tmp_path / "claim"
    assert rc.status(root) == [f"{root}: not started (no protocol.json)"]
    args = argparse.Namespace(
        recipe="cpu-learn-rft", sft_lengths=[30, 60], grpo_seeds=[0, 1], test_seeds=[3101], test_tasks=300,
        samples=4, dev_tasks=None, set=[],
    )  # fmt: skip
    rc.open_root(root, rc.protocol(args))
    (root / "warm" / "sft-30" / "sft" / "checkpoint-20").mkdir(parents=True)  # stopped mid-way
    (root / "warm" / "sft-60" / "sft").mkdir(parents=True)
    parts = root / "grpo" / "seed-0" / "rft" / "sample-parts"
    parts.mkdir(parents=True)
    for k in (1, 2):
        (parts / f"part-{k}.jsonl").write_text("")
    (root / "tasks").mkdir()
    (root / "tasks" / "test-seed3101.jsonl").write_text("")
    (root / "eval" / "test-seed3101" / "warm_start").mkdir(parents=True)
    (root / "eval" / "test-seed3101" / "warm_start" / "results.json").write_text("{}")
    done = subprocess.run(
        [sys.executable, "-m", "bench.reproduce_claim", str(root), "--status"],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "protocol: recipe cpu-learn-rft; SFT lengths [30, 60]; GRPO seeds [0, 1]; test seeds [3101] x 300 "
        "tasks; 4 samples a task",
        "warm start sft-30: at checkpoint 20 of 30",
        "warm start sft-60: started, no checkpoint yet",
        "frozen warm start: not yet",
        "GRPO seed 0: RFT round: 2 sample parts; GRPO not started",
        "GRPO seed 1: not started",
        "test seed 3101: tasks written; warm_start greedy done, sampled not done; grpo-seed0 greedy not "
        "done, sampled not done; grpo-seed1 greedy not done, sampled not done",
    ]
    assert sorted(p.name for p in root.iterdir()) == ["eval", "grpo", "protocol.json", "tasks", "warm"]


def test_status_names_each_rft_round_of_a_recipe_with_rounds(tmp_path):
    """``rft.rounds: 2``: the first round done, the second stopped while it sampled."""
    from toolkit.runs import ADAPTER_MARKER

    root = tmp_path / "claim"
    args = argparse.Namespace(
        recipe="cpu-learn-rft", sft_lengths=[30], grpo_seeds=[0], test_seeds=[3101], test_tasks=300,
        samples=4, dev_tasks=None, set=["rft.rounds=2"],
    )  # fmt: skip
    rc.open_root(root, rc.protocol(args))
    seed = root / "grpo" / "seed-0"
    (seed / "rft" / "adapter").mkdir(parents=True)
    (seed / "rft" / "adapter" / ADAPTER_MARKER).write_text("{}")
    (seed / "rft-2" / "sample-parts").mkdir(parents=True)
    (seed / "rft-2" / "sample-parts" / "part-0000.jsonl").write_text("")
    lines = rc.status(root)
    assert "GRPO seed 0: RFT round 1 done; RFT round 2: 1 sample parts; GRPO not started" in lines, lines


def test_a_root_is_kept_without_checkpoints_and_restored_on_another_machine(tmp_path):
    """``--keep``: what a later stage reads is copied out (changed files again, nothing twice); a new
    machine's empty root gets it back; a root further on than the kept folder is never overwritten."""
    root, keep = tmp_path / "claim", tmp_path / "kept"
    files = {
        "protocol.json": "{}",
        "warm_start.json": "{}",
        "warm_start/adapter_model.safetensors": "w",
        "warm/sft-120/sft/adapter/adapter_model.safetensors": "not kept: the frozen copy stands for it",
        "warm/sft-120/sft/checkpoint-60/optimizer.pt": "not kept",
        "warm/sft-120/tasks/train.jsonl": "not kept",
        "warm/sft-120/eval/dev/results.json": "{}",
        "warm/sft-120/eval/dev/viewer.html": "not kept: made again from the results",
        "grpo/seed-0/summary.json": '{"rft": {}}',
        "grpo/seed-0/tasks/train.jsonl": "t",
        "grpo/seed-0/sft/adapter/adapter_model.safetensors": "not kept: a copy of warm_start/",
        "grpo/seed-0/rft/samples.jsonl": "s",  # sampled, not fine-tuned yet: kept, so as not to sample again
        "grpo/seed-0/rft-2/sample-parts/part-0000.jsonl": "not kept",
        "grpo/seed-0/rft-2/checkpoint-10/adapter_config.json": "not kept",
        "grpo/seed-0/grpo/vllm-lora/step-0/adapter_config.json": "not kept",
        "grpo/seed-1/adapter/adapter_config.json": "{}",
        "grpo/seed-1/grpo/checkpoint-8/trainer_state.json": "not kept: the seed's adapter is there",
        "grpo/seed-1/grpo/rollouts.jsonl": "r",
        "grpo/seed-1/grpo/vllm-lora/step-8/adapter_config.json": "not kept",
        "grpo/seed-0/merged/model.safetensors": "not kept",
        "eval/test-seed6101/warm_start/results.jsonl": "r",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    kept = {k for k, v in files.items() if not v.startswith("not kept")}
    copied = rc.keep_outputs(root, keep)
    assert {str(p.relative_to(keep)) for p in copied} == kept
    assert {str(p.relative_to(keep)) for p in keep.rglob("*") if p.is_file()} == kept
    assert rc.keep_outputs(root, keep) == []  # nothing new
    (root / "grpo/seed-0/summary.json").write_text('{"rft": {}, "rft-2": {}}')  # round 2 done
    assert rc.keep_outputs(root, keep) == [keep / "grpo/seed-0/summary.json"]
    # round 1's adapter written: its samples (about 7 MB a round) are not carried any more
    (root / "grpo/seed-0/rft/adapter").mkdir()
    (root / "grpo/seed-0/rft/adapter/adapter_config.json").write_text("{}")
    kept.add("grpo/seed-0/rft/adapter/adapter_config.json")
    kept.remove("grpo/seed-0/rft/samples.jsonl")
    assert rc.keep_outputs(root, keep) == [keep / "grpo/seed-0/rft/adapter/adapter_config.json"]
    assert {str(p.relative_to(keep)) for p in keep.rglob("*") if p.is_file()} == kept

    fresh = tmp_path / "machine-2" / "claim"
    restored = rc.restore_kept(fresh, keep)
    assert {str(p.relative_to(fresh)) for p in restored} == kept
    assert (fresh / "grpo/seed-0/summary.json").read_text() == '{"rft": {}, "rft-2": {}}'
    (fresh / "eval/test-seed6101/warm_start/results.jsonl").write_text("further on")
    (fresh / "warm_start.json").unlink()
    assert rc.restore_kept(fresh, keep) == [fresh / "warm_start.json"]
    assert (fresh / "eval/test-seed6101/warm_start/results.jsonl").read_text() == "further on"
    assert rc.restore_kept(fresh, tmp_path / "no-such-folder") == []


def _args(**changes):
    base = dict(
        recipe="cpu-learn-rft2", sft_lengths=[120], grpo_seeds=[0, 1, 2], test_seeds=[6101, 6102],
        test_tasks=300, samples=4, dev_tasks=None, set=[], reuse_rounds=None,
    )  # fmt: skip
    return argparse.Namespace(**{**base, **changes})


def test_another_grpo_stage_may_reuse_the_rounds_but_nothing_before_it_may_differ():
    source = rc.protocol(_args())
    grpo = ["grpo_task_kinds=[lookup, write]", "grpo.max_steps=4", "grpo_sampling.min_spread=0.1"]
    assert rc.reuse_refusals(source, rc.protocol(_args(set=grpo, grpo_seeds=[3], test_seeds=[7101]))) == []
    assert rc.reuse_refusals(source, rc.protocol(_args(set=["rft.rounds=1"]))) == ["recipe rft"]
    assert rc.reuse_refusals(source, rc.protocol(_args(set=["rollout.temperature=0.7"]))) == [
        "recipe rollout"
    ]
    assert rc.reuse_refusals(source, rc.protocol(_args(samples=8, sft_lengths=[60]))) == [
        "sft_lengths",
        "samples",
    ]
    assert "reuse_rounds" not in source  # roots made before the flag keep the protocol they were bound to


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_reused_rounds_are_copied_once_without_the_earlier_grpo(tmp_path):
    src, root = tmp_path / "v2" / "kept", tmp_path / "claim-v3"
    metrics = [{"phase": "rft", "step": 121}, {"phase": "rft-2", "step": 150}, {"phase": "grpo", "step": 180}]
    summary = {"rft": {"kept": 194}, "rft-2": {"kept": 198}, "grpo_steps": 8, "recipe_changes": {"grpo": 1}}
    summary["timings_s"] = {"rft_s": 1613.0, "rft-2_s": 1628.0, "grpo_s": 3367.0}
    seed0 = {
        "grpo/seed-0/rft/adapter/adapter_config.json": "r1",
        "grpo/seed-0/rft/README.md": "card",
        "grpo/seed-0/rft-2/adapter/adapter_config.json": "r2",
        "grpo/seed-0/tasks/train.jsonl": "t",
        "grpo/seed-0/tasks/eval.jsonl": "d",
        "grpo/seed-0/summary.json": json.dumps(summary),
        "grpo/seed-0/metrics.jsonl": "".join(json.dumps(m) + "\n" for m in metrics),
        "grpo/seed-0/recipe.json": "{}",  # the earlier recipe: not this run's
        "grpo/seed-0/adapter/adapter_config.json": "earlier GRPO",
        "grpo/seed-0/grpo/rollouts.jsonl": "earlier GRPO",
    }
    _write(src, {
        "protocol.json": json.dumps(rc.protocol(_args())),
        "warm_start/adapter_config.json": "w",
        "warm/sft-120/eval/dev/results.jsonl": "dev",
        **seed0,
        "grpo/seed-1/rft/adapter/adapter_config.json": "round 2 not done",
        "grpo/seed-1/summary.json": "{}",
    })  # fmt: skip
    (src / "warm_start.json").write_text(
        json.dumps({"sft_steps": 120, "sha256": rc.sha256_tree(src / "warm_start")})
    )
    args = _args(set=["grpo.max_steps=4"], test_seeds=[7101, 7102], reuse_rounds=src)
    rc.open_root(root, rc.protocol(args))
    assert rc.reuse_stage(root, src, args) == ["the frozen warm start", "seed 0's 2 RFT rounds"]
    assert rc.status(root)[0].endswith(f"; the warm start and the RFT rounds it held reused from {src}")
    assert rc.status(root)[3] == "GRPO seed 0: RFT round 1 done; RFT round 2 done; GRPO not started"
    assert rc.freeze_stage(root, {}) == 120  # the copy passes the frozen record's hashes
    assert (root / "warm/sft-120/eval/dev/results.jsonl").read_text() == "dev"
    run = root / "grpo" / "seed-0"
    assert (run / "rft-2/adapter/adapter_config.json").read_text() == "r2"
    assert (run / "rft/README.md").is_file() and (run / "tasks/eval.jsonl").read_text() == "d"
    for earlier in ("recipe.json", "adapter", "grpo"):
        assert not (run / earlier).exists(), earlier
    assert json.loads((run / "summary.json").read_text()) == {
        "rft": {"kept": 194}, "rft-2": {"kept": 198}, "timings_s": {"rft_s": 1613.0, "rft-2_s": 1628.0}
    }  # fmt: skip
    assert [json.loads(x)["phase"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [
        "rft",
        "rft-2",
    ]
    assert not (root / "grpo" / "seed-1").exists() and not (root / "grpo" / "seed-2").exists()
    # once: a second start reuses nothing, and a run this root began is never overwritten
    (run / "rft-2/adapter/adapter_config.json").write_text("this root's")
    assert rc.reuse_stage(root, src, args) == []
    assert (run / "rft-2/adapter/adapter_config.json").read_text() == "this root's"


def test_reuse_is_refused_from_another_protocol_or_another_frozen_warm_start(tmp_path):
    src, root = tmp_path / "v2", tmp_path / "v3"
    with pytest.raises(SystemExit, match="no protocol.json there"):
        rc.reuse_stage(root, src, _args())
    _write(src, {"protocol.json": json.dumps(rc.protocol(_args())), "warm_start/a.json": "w"})
    with pytest.raises(SystemExit, match="no warm_start.json there"):
        rc.reuse_stage(root, src, _args())
    (src / "warm_start.json").write_text(json.dumps({"sha256": rc.sha256_tree(src / "warm_start")}))
    with pytest.raises(SystemExit, match=r"differs in what the reused work depends on \(recipe rft\)"):
        rc.reuse_stage(root, src, _args(set=["rft.rounds=1"]))
    _write(root, {"warm_start/a.json": "another"})
    (root / "warm_start.json").write_text(json.dumps({"sha256": rc.sha256_tree(root / "warm_start")}))
    with pytest.raises(SystemExit, match="froze another warm start"):
        rc.reuse_stage(root, src, _args())


def test_bad_protocol_values_are_refused_before_anything_runs(tmp_path):
    flags = (["--grpo-seeds", "0,0"], ["--sft-lengths", "x"], ["--samples", "1"], ["--test-tasks", "0"])
    for flag in (*flags, ["--keep-now"], ["--keep-now", "--keep", str(tmp_path / "k")]):
        done = subprocess.run(
            [sys.executable, "-m", "bench.reproduce_claim", str(tmp_path / "r"), "--out", "c.json", *flag],
            capture_output=True, text=True, cwd=REPO,
        )  # fmt: skip
        assert done.returncode == 2, (flag, done.stderr)
        assert not (tmp_path / "r").exists()


TINY = {
    "model": "tiny-random",
    "backend": "cpu",
    "reward": "rubric",
    "synth": {"preset": "cpu", "n": 12, "n_eval": 4, "seed": 1},
    "lora": {"r": 4, "lora_alpha": 8, "target_modules": "all-linear"},
    "rollout": {"max_turns": 2, "max_new_tokens": 6, "max_context_tokens": 2048, "temperature": 1.0},
    "sft": {"max_examples": 2, "max_steps": 1, "per_device_train_batch_size": 2, "learning_rate": 1e-3},
    "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1, "learning_rate": 1e-3},
}


@pytest.mark.integration
def test_the_smallest_protocol_runs_end_to_end_and_resumes(tmp_path):
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(yaml.safe_dump(TINY))
    root, out = tmp_path / "claim", tmp_path / "claim.json"
    cmd = [
        sys.executable,
        "-m",
        "bench.reproduce_claim",
        str(root),
        "--out",
        str(out),
        "--recipe",
        str(recipe),
    ]
    # one SFT length (the choice between lengths is tested above), two GRPO seeds
    cmd += ["--sft-lengths", "1", "--grpo-seeds", "0,1", "--test-seeds", "11", "--test-tasks", "2"]
    cmd += ["--samples", "2", "--dev-tasks", "2", "--keep", str(tmp_path / "kept")]
    env = {**os.environ, "MCP_RL_THREADS": "1"}
    first = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]

    frozen = json.loads((root / "warm_start.json").read_text())
    assert frozen["sft_steps"] == 1 and set(frozen["dev"]) == {"1"}
    for seed in (0, 1):
        recipe_json = json.loads((root / "grpo" / f"seed-{seed}" / "recipe.json").read_text())
        assert recipe_json["seed"] == seed and recipe_json["warm_start"] == str(root / "warm_start")
        assert recipe_json["rollout"]["seed"] == seed
    for adapter in ("warm_start", "grpo-seed0", "grpo-seed1"):
        folder = root / "eval" / "test-seed11" / adapter
        assert len((folder / "results.jsonl").read_text().splitlines()) == 2
        assert len((folder / "samples.jsonl").read_text().splitlines()) == 4  # 2 tasks x 2 samples
    claim = json.loads(out.read_text())
    assert [str(s) for s in claim["grpo_seeds"]] == ["0", "1"]
    assert claim["protocol"]["test_tasks"] == 2

    lines = rc.status(root)  # a finished root, read back stage by stage
    assert lines[1].startswith("warm start sft-1: done; dev greedy ")
    assert lines[2] == "frozen warm start: 1 SFT steps (" + str(root / "warm_start.json") + ")"
    assert lines[3:5] == ["GRPO seed 0: GRPO done", "GRPO seed 1: GRPO done"]
    assert lines[5] == (
        "test seed 11: tasks written; warm_start greedy done, sampled done; grpo-seed0 greedy done, "
        "sampled done; grpo-seed1 greedy done, sampled done"
    )

    again = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "warm start, " not in again.stdout and "GRPO seed 0 from" not in again.stdout
    assert "sampling " not in again.stdout and json.loads(out.read_text()) == claim
    assert (
        "Loading weights" not in first.stderr and "UserWarning" not in first.stderr
    )  # quiet, as mcp-rl train

    # a new machine: the root gone, the kept folder (committed) put back; nothing trained or evaluated again
    assert not list((tmp_path / "kept").rglob("checkpoint-*"))
    assert not (tmp_path / "kept" / "warm" / "sft-1" / "sft").exists()
    shutil.rmtree(root)
    moved = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    assert moved.returncode == 0, moved.stderr[-3000:]
    assert "restored " in moved.stdout and "warm start, " not in moved.stdout
    assert "GRPO seed 0 from" not in moved.stdout and "sampling " not in moved.stdout
    assert json.loads(out.read_text()) == claim
    assert rc.status(root)[1] == (
        "warm start sft-1: done on another machine (its run not kept; the frozen copy stands for it); "
        "dev greedy " + lines[1].split("dev greedy ")[1]
    )

    # another GRPO stage over this root's frozen warm start (--reuse-rounds; this recipe has no RFT round)
    v3 = tmp_path / "claim-v3"
    cmd3 = [*cmd[:3], str(v3), "--out", str(tmp_path / "claim-v3.json"), *cmd[6:]]
    cmd3 += ["--reuse-rounds", str(tmp_path / "kept"), "--set", "grpo.learning_rate=0.002"]
    cmd3[cmd3.index("--grpo-seeds") + 1], cmd3[cmd3.index("--keep") + 1] = "0", str(tmp_path / "kept-v3")
    reused = subprocess.run(cmd3, capture_output=True, text=True, cwd=REPO, env=env)
    assert reused.returncode == 0, reused.stdout[-3000:] + reused.stderr[-3000:]
    assert f"reused from {tmp_path / 'kept'}: the frozen warm start" in reused.stdout
    assert "[claim] warm start, " not in reused.stdout and "GRPO seed 0 from" in reused.stdout
    assert json.loads((v3 / "protocol.json").read_text())["reuse_rounds"] == str(tmp_path / "kept")
    assert json.loads((v3 / "grpo/seed-0/recipe.json").read_text())["grpo"]["learning_rate"] == 0.002


def test_a_training_stage_runs_in_its_own_process_and_its_failure_stops_the_claim(tmp_path):
    """The trainers run in a spawned process (their memory goes with it); one that fails (here: a task
    file that is not there) stops the claim with its exit code, and the parent is left as it was."""
    from toolkit.train.config import recipe_from_dict

    recipe = recipe_from_dict({**TINY, "tasks": str(tmp_path / "missing.jsonl")}, name="tiny")
    with pytest.raises(SystemExit, match=r"training into .*run failed \(exit code 1\)"):
        rc.train_in_child(recipe, tmp_path / "run", stop_after="sft")


def test_a_recipe_warm_start_is_checked_before_any_stage(tmp_path):
    from toolkit.train.config import RecipeError, recipe_from_dict
    from toolkit.train.pipeline import run_recipe

    with pytest.raises(RecipeError, match="warm_start needs the sft section"):
        recipe_from_dict({**TINY, "sft": None, "warm_start": str(tmp_path)})
    with pytest.raises(RecipeError, match="warm_start must be an adapter folder"):
        recipe_from_dict({**TINY, "warm_start": 3})
    recipe = recipe_from_dict({**TINY, "warm_start": str(tmp_path / "nothing")})
    with pytest.raises(FileNotFoundError, match="holds no adapter"):
        run_recipe(recipe, tmp_path / "run", backend="cpu")
    assert not (tmp_path / "run").exists()  # nothing written
    assert "warm_start" not in recipe_from_dict(TINY).to_dict()  # recipe.json as before the key


def _sleep_forever() -> None:
    import time

    while True:
        time.sleep(1)


def test_a_stage_ends_when_its_run_leaves_a_child_process_running(capsys):
    """Before: a GRPO stage's spawned process sat idle after its last line, multiprocessing joining the
    vLLM engine the run had left running (a non-daemon child). The stage now stops such children, by name."""
    import multiprocessing

    child = multiprocessing.get_context("spawn").Process(target=_sleep_forever, name="engine-core")
    child.start()
    stopped = rc.reap_children(timeout=10)
    assert stopped == [f"engine-core (pid {child.pid})"] and not child.is_alive()
    assert "stopped what the stage left running: engine-core" in capsys.readouterr().out
    assert rc.reap_children() == []


def test_a_grpo_stopped_part_way_carries_its_last_complete_checkpoint_until_its_adapter_is_there(tmp_path):
    """A GRPO seed spans machines: its last checkpoint that the Trainer finished writing (with
    ``trainer_state.json``) and its rollouts go into the kept folder, older checkpoints leave it, and once
    the adapter is written no checkpoint is carried; a new machine gets the checkpoint back, where
    ``last_checkpoint`` resumes from it."""
    from toolkit.runs import ADAPTER_MARKER
    from toolkit.train.resume import last_checkpoint

    root, keep = tmp_path / "claim", tmp_path / "kept"
    grpo = root / "grpo/seed-2/grpo"
    _write(root, {"protocol.json": "{}", "grpo/seed-2/grpo/rollouts.jsonl": "r"})
    for step in (2, 4):
        _write(
            grpo,
            {f"checkpoint-{step}/adapter_model.safetensors": "w", f"checkpoint-{step}/optimizer.pt": "o"},
        )
    (grpo / "checkpoint-2" / "trainer_state.json").write_text("{}")  # checkpoint-4 cut short by the stop

    def carried():
        return sorted(str(p.relative_to(keep)) for p in keep.rglob("*") if p.is_file())

    rc.keep_outputs(root, keep)
    assert carried() == [
        "grpo/seed-2/grpo/checkpoint-2/adapter_model.safetensors",
        "grpo/seed-2/grpo/checkpoint-2/optimizer.pt",
        "grpo/seed-2/grpo/checkpoint-2/trainer_state.json",
        "grpo/seed-2/grpo/rollouts.jsonl",
        "protocol.json",
    ]
    fresh = tmp_path / "machine-2" / "claim"
    rc.restore_kept(fresh, keep)
    assert last_checkpoint(fresh / "grpo/seed-2/grpo") == str(fresh / "grpo/seed-2/grpo/checkpoint-2")

    (grpo / "checkpoint-4" / "trainer_state.json").write_text("{}")  # saved in full on the next run
    rc.keep_outputs(root, keep)
    assert [p for p in carried() if "checkpoint" in p] == [
        "grpo/seed-2/grpo/checkpoint-4/adapter_model.safetensors",
        "grpo/seed-2/grpo/checkpoint-4/optimizer.pt",
        "grpo/seed-2/grpo/checkpoint-4/trainer_state.json",
    ]
    _write(root, {"grpo/seed-2/adapter/" + ADAPTER_MARKER: "{}"})  # GRPO done
    rc.keep_outputs(root, keep)
    assert [p for p in carried() if "checkpoint" in p] == []
    assert "grpo/seed-2/grpo/rollouts.jsonl" in carried()
