"""Issue 49's learning claim end to end, resumable: the protocol of docs/cpu-proof/README.md as one command.

    python -m bench.reproduce_claim runs/claim --out docs/cpu-proof/claim.json      (make reproduce-claim)

The recipe is ``cpu-learn-rft`` (``--recipe``): issue 31's ``cpu-learn`` with a round of rejection-sampling
fine-tuning before GRPO. The stages, in order; each is skipped when its outputs exist, so a killed run goes
on where it stopped (run it again with the same arguments):

1. **warm**: the recipe's SFT warm start at each length (30, 60, 120 steps) into ``ROOT/warm/sft-<N>``,
   each evaluated on the dev set (the recipe's eval split) greedy (``eval/dev``) and sampled, k episodes
   per task at the rollout temperature (``eval/dev/samples.jsonl``).
2. **freeze**: the length with the best greedy dev pass@0.75 (ties: the sampled metric, then the shorter)
   is copied to ``ROOT/warm_start``; ``ROOT/warm_start.json`` records the choice, every length's dev
   numbers and the sha256 of every file. On a later start the copy is checked against those hashes.
3. **grpo**: the recipe trained from the frozen warm start (its ``warm_start`` key) once per GRPO seed
   (the recipe's ``seed`` and ``rollout.seed``; nothing else differs) into ``ROOT/grpo/seed-<S>``: its
   RFT round where the recipe has one (``rft``), then GRPO.
4. **test**: each test set (seeds 3101 and 3102, 300 tasks: the recipe's synth settings from a seed no run
   has used) into ``ROOT/tasks/test-seed<T>.jsonl``; the warm start and every GRPO adapter evaluated on it
   greedy and sampled into ``ROOT/eval/test-seed<T>/<adapter>/{results,samples}.jsonl``.
5. **claim**: ``toolkit.eval.claim`` over ROOT, written to ``--out``.

Each training stage (a warm start, a GRPO seed with its RFT round) runs in a process of its own, so that
what one trainer leaves in memory does not add to the next one's on a 24 GB machine.

``--status`` says where a run of it stands, stage by stage, from ROOT alone (a run spans sessions):

    python -m bench.reproduce_claim runs/claim --status

``--keep DIR`` carries a run across machines whose disks do not last (a session's machine keeps only what
was committed): on start, the files DIR holds and ROOT lacks are copied into ROOT; after each stage, and
with ``--keep-now`` alone (after a run was stopped part-way), ROOT's kept files
(``ClaimFolder.kept_files``: adapters, summaries, samples, test sets, evaluations, and the last complete
checkpoint of a GRPO seed stopped part-way) are copied into DIR, to be committed. Nothing trained or
evaluated changes by it; a GRPO seed stopped part-way goes on from its carried checkpoint, any other stage
starts again from its last kept output.

The protocol's numbers are the defaults. Smaller ones (``--sft-lengths``, ``--grpo-seeds``, ...) make a
rehearsal, not the claim: the values, and the recipe's settings as merged, are written to
``ROOT/protocol.json`` when the root is made, and a later start with other values or an edited recipe is
refused (a changed protocol needs a new root).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from toolkit.argtypes import distinct_ints, positive_int
from toolkit.eval.claim import WARM_START
from toolkit.records import dumps, read_jsonl
from toolkit.runs import ClaimFolder, grpo_seed_name
from toolkit.train.claim_eval import ClaimEvaluator, evaluate_test_sets

# The recipe's settings that shape its GRPO stage and nothing before it (the warm start, the RFT rounds):
# a protocol that differs from an earlier root in these alone may reuse that root's work (--reuse-rounds).
GRPO_ONLY = frozenset({"grpo", "grpo_sampling", "grpo_task_kinds"})
# The protocol's values the reused warm start was chosen and evaluated with.
REUSE_NEEDS_SAME = ("sft_lengths", "samples", "dev_tasks")

SFT_LENGTHS = (30, 60, 120)
GRPO_SEEDS = (0, 1, 2)
TEST_SEEDS = (3101, 3102)
TEST_TASKS = 300
SAMPLES = 4


def say(message: str, started: float | None = None) -> None:
    took = f" ({time.time() - started:.0f} s)" if started is not None else ""
    print(f"[claim] {message}{took}", flush=True)


# ---- the protocol and its root ------------------------------------------------------------------------


def protocol(args: argparse.Namespace) -> dict[str, Any]:
    """What the root is bound to: the protocol's numbers and the recipe's settings as merged (a recipe
    file edited between two starts is a changed protocol, as a changed flag is)."""
    from toolkit.train.config import RECIPE_LABELS

    settings = json.loads(json.dumps(base_recipe(args).to_dict()))
    return {
        "recipe": str(args.recipe),
        "recipe_settings": {k: v for k, v in settings.items() if k not in RECIPE_LABELS},
        "sft_lengths": list(args.sft_lengths),
        "grpo_seeds": list(args.grpo_seeds),
        "test_seeds": list(args.test_seeds),
        "test_tasks": args.test_tasks,
        "samples": args.samples,
        "dev_tasks": args.dev_tasks,
        "set": list(args.set),
        # only where given: the roots made before the flag existed keep the protocol they were bound to
        **({"reuse_rounds": str(args.reuse_rounds)} if getattr(args, "reuse_rounds", None) else {}),
    }


def open_root(root: Path, wanted: dict[str, Any]) -> None:
    """Write ``protocol.json`` in a new root; refuse a root made with other values."""
    path = ClaimFolder(root).protocol_file
    if path.exists():
        had = json.loads(path.read_text())
        if had != wanted:
            changed = sorted(k for k in set(had) | set(wanted) if had.get(k) != wanted.get(k))
            raise SystemExit(
                f"{root} was started with another protocol ({', '.join(changed)} differ: {path}); "
                "a changed protocol needs a new root"
            )
        return
    root.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(wanted, indent=1) + "\n")


def base_recipe(args: argparse.Namespace) -> Any:
    """The recipe with the ``--set`` overrides: what every stage starts from."""
    from toolkit.cli.train import parse_set_items
    from toolkit.train.config import load_recipe, with_overrides

    overrides, unset = parse_set_items(args.set)
    return with_overrides(load_recipe(args.recipe), overrides, unset=unset)


def derived(recipe: Any, **overrides: Any) -> Any:
    """The recipe with dotted-key overrides (``derived(r, **{"sft.max_steps": 30})``)."""
    from toolkit.train.config import with_overrides

    return with_overrides(recipe, overrides)


def sha256_tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# ---- an earlier root's warm start and RFT rounds (--reuse-rounds) ---------------------------------------


def reuse_refusals(source: dict[str, Any], wanted: dict[str, Any]) -> list[str]:
    """What forbids a root of protocol ``wanted`` to reuse the warm start and RFT rounds of a root of
    protocol ``source`` (both ``protocol()``'s dicts); empty: nothing. GRPO settings, GRPO seeds and test
    seeds may differ: none of them shapes the work reused."""
    refusals = [k for k in REUSE_NEEDS_SAME if source.get(k) != wanted.get(k)]
    had, want = source.get("recipe_settings") or {}, wanted.get("recipe_settings") or {}
    refusals += [
        f"recipe {k}"
        for k in sorted(set(had) | set(want))
        if k not in GRPO_ONLY and had.get(k) != want.get(k)
    ]
    return refusals


def _without_grpo(summary: dict[str, Any]) -> dict[str, Any]:
    """A reused run's summary as its rounds left it: what the earlier root's GRPO reported dropped."""
    kept = {k: v for k, v in summary.items() if not k.startswith("grpo") and k != "recipe_changes"}
    kept["timings_s"] = {
        k: v for k, v in (summary.get("timings_s") or {}).items() if not k.startswith("grpo")
    }
    return kept


def _frozen_hashes(claim: ClaimFolder) -> dict[str, str]:
    return json.loads(claim.warm_start_record.read_text())["sha256"]


def reuse_stage(root: Path, source: Path, args: argparse.Namespace) -> list[str]:
    """0. (``--reuse-rounds SRC``) copy into ROOT, once, the frozen warm start of an earlier root (or of its
    ``--keep`` folder) and every GRPO seed's finished RFT rounds, when SRC's protocol differs from this one
    in its GRPO stage, GRPO seeds and test seeds alone: they are what this recipe would train again (the
    same settings, seeds and tasks), at about 55 minutes a seed on two cores. A seed whose rounds SRC does
    not hold, or that ROOT has begun, is left to the grpo stage. Returns what was reused."""
    from toolkit.runs import has_adapter
    from toolkit.train.rft import RftConfig

    src, claim = ClaimFolder(source), ClaimFolder(root)
    if not src.protocol_file.is_file():
        raise SystemExit(f"--reuse-rounds {source}: no {src.protocol_file.name} there (not a claim's root)")
    wanted = protocol(args)
    refusals = reuse_refusals(json.loads(src.protocol_file.read_text()), wanted)
    if refusals:
        raise SystemExit(
            f"--reuse-rounds {source}: its protocol differs in what the reused work depends on "
            f"({', '.join(refusals)}); only the GRPO stage, GRPO seeds and test seeds may differ"
        )
    if not src.warm_start_record.is_file():
        raise SystemExit(
            f"--reuse-rounds {source}: no {src.warm_start_record.name} there: nothing frozen to reuse"
        )
    reused = []
    if not claim.warm_start_record.exists():
        shutil.copytree(src.warm_start, claim.warm_start)
        shutil.copy2(src.warm_start_record, claim.warm_start_record)
        for dev in sorted(src.root.glob("warm/sft-*/eval")):  # the lengths' dev numbers, for --status
            shutil.copytree(dev, root / dev.relative_to(src.root), dirs_exist_ok=True)
        reused.append("the frozen warm start")
    elif _frozen_hashes(claim) != _frozen_hashes(src):
        raise SystemExit(
            f"--reuse-rounds {source}: {claim.warm_start_record} froze another warm start than "
            f"{src.warm_start_record}; rounds trained from that one are not this root's"
        )
    section = wanted["recipe_settings"].get("rft")
    rounds = RftConfig.from_section(section).rounds if section else 0
    for seed in args.grpo_seeds if rounds else ():
        have, run = src.grpo_run(seed), claim.grpo_run(seed)
        if run.root.exists() or not all(has_adapter(have.rft_round(k).adapter) for k in range(1, rounds + 1)):
            continue
        for k in range(1, rounds + 1):
            one = have.rft_round(k)
            shutil.copytree(one.path, run.rft_round(k).path, ignore=shutil.ignore_patterns("sample-parts"))
        shutil.copytree(have.tasks.path, run.tasks.path)
        summary = json.loads(have.summary_file.read_text())
        run.summary_file.write_text(json.dumps(_without_grpo(summary), indent=1) + "\n")
        rows = [
            line
            for line in have.metrics_file.read_text().splitlines()
            if json.loads(line).get("phase") != "grpo"
        ]
        run.metrics_file.write_text("".join(line + "\n" for line in rows))
        reused.append(f"seed {seed}'s {rounds} RFT round{'s' if rounds > 1 else ''}")
    if reused:
        say(f"reused from {source}: {', '.join(reused)}")
    return reused


# ---- carried between machines (--keep) ------------------------------------------------------------------


def _same(a: Path, b: Path) -> bool:
    return a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()


def _megabytes(paths: Sequence[Path]) -> str:
    return f"{sum(p.stat().st_size for p in paths) / 1e6:.1f} MB"


def restore_kept(root: Path, keep: Path) -> list[Path]:
    """Copy into ROOT the files KEEP holds and ROOT lacks; never overwrite (ROOT may be further on)."""
    if not keep.is_dir():
        return []
    restored = []
    for src in sorted(p for p in keep.rglob("*") if p.is_file()):
        dest = root / src.relative_to(keep)
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
            restored.append(dest)
    if restored:
        say(f"restored {len(restored)} kept files ({_megabytes(restored)}) from {keep} into {root}")
    return restored


def keep_outputs(root: Path, keep: Path) -> list[Path]:
    """Copy ROOT's kept files that KEEP lacks or holds otherwise into KEEP, and drop from KEEP the files
    ROOT has but no longer carries (an RFT round's samples once its adapter is there); returns what was
    copied."""
    kept = ClaimFolder(root).kept_files()
    copied = []
    for src in kept:
        dest = keep / src.relative_to(root)
        if dest.exists() and _same(src, dest):
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest)
        copied.append(dest)
    carried = {p.relative_to(root) for p in kept}
    dropped = [
        p
        for p in sorted(keep.rglob("*"))
        if p.is_file() and p.relative_to(keep) not in carried and (root / p.relative_to(keep)).is_file()
    ]
    for path in dropped:
        path.unlink()
    if copied or dropped:
        say(
            f"kept {len(copied)} new or changed files ({_megabytes(copied)}) in {keep}"
            + (f", dropped {len(dropped)} no longer carried" if dropped else "")
            + ": commit them"
        )
    return copied


# ---- evaluations ---------------------------------------------------------------------------------------


def pass_rates(folder: Path) -> tuple[float, float]:
    """(greedy pass@0.75, sampled mean pass) of an evaluation folder (results.jsonl, samples.jsonl)."""
    from toolkit.eval.claim import sampled_pass
    from toolkit.eval.metrics import task_passed
    from toolkit.records import SampleRow, read_task_results

    results = read_task_results(folder / "results.jsonl")
    greedy = float(np.mean([task_passed(r) for r in results])) if results else 0.0
    per_task, _ = sampled_pass(read_jsonl(folder / "samples.jsonl", SampleRow))
    return greedy, float(np.mean(list(per_task.values()))) if per_task else 0.0


def choose_warm_start(dev: dict[int, tuple[float, float]]) -> int:
    """The SFT length with the best greedy dev pass; ties: the sampled metric, then the shorter."""
    return min(dev, key=lambda n: (-dev[n][0], -dev[n][1], n))


def train_in_child(recipe: Any, out: Path, **kwargs: Any) -> None:
    """``run_recipe(recipe, out, resume=True, **kwargs)`` in a process of its own: the memory a trainer
    leaves behind (an SFT run held 13.5 GB RSS here) goes with the process instead of adding to the next
    stage's (a GRPO update peaks near 11 GB on a 24 GB machine). A failed stage stops the claim."""
    import multiprocessing

    child = multiprocessing.get_context("spawn").Process(
        target=_train, args=(recipe.to_dict(), str(out), kwargs), name=f"claim-train-{out.name}"
    )
    child.start()
    child.join()
    if child.exitcode != 0:
        raise SystemExit(f"training into {out} failed (exit code {child.exitcode}); its log is above")


def _train(recipe: dict[str, Any], out: str, kwargs: dict[str, Any]) -> None:
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import run_recipe
    from toolkit.train.quiet import quiet_libraries

    quiet_libraries()  # a spawned process starts afresh: as the parent, before the libraries load
    name = recipe.pop("name", "custom")
    try:
        run_recipe(recipe_from_dict(recipe, name=name), out, resume=True, **kwargs)
    finally:
        reap_children()


def reap_children(timeout: float = 30.0) -> list[str]:
    """Stop this process's multiprocessing children, naming each: a vLLM engine a run leaves running is a
    non-daemon child, which multiprocessing joins at exit, so the stage would never end (GRPO seed 0 of
    the claim sat idle 17 minutes after its last line so). ``run_recipe`` now closes the backend it made
    (``TrainBackend.close``), so this finds nothing; it stays as the stage's guard, and says what it stops."""
    import multiprocessing

    stopped = []
    for child in multiprocessing.active_children():
        stopped.append(f"{child.name} (pid {child.pid})")
        child.terminate()
        child.join(timeout)
        if child.is_alive():
            child.kill()
            child.join(timeout)
    if stopped:
        say(f"stopped what the stage left running: {', '.join(stopped)}")
    return stopped


# ---- the stages ----------------------------------------------------------------------------------------


def warm_stage(root: Path, base: Any, args: argparse.Namespace, evaluator: ClaimEvaluator) -> dict:
    """1. one warm start per SFT length, each on the dev set; returns length -> (greedy, sampled)."""
    from toolkit.runs import has_adapter
    from toolkit.train.task_sources import read_tasks, resolve_task_files

    record = ClaimFolder(root).warm_start_record
    if record.exists():  # frozen: the lengths' runs are done (on another machine, perhaps: --keep)
        kept = json.loads(record.read_text())["dev"]
        return {int(n): (d["greedy_pass"], d["sampled_pass"]) for n, d in kept.items()}
    dev: dict[int, tuple[float, float]] = {}
    for steps in args.sft_lengths:
        run = ClaimFolder(root).warm_run(steps)
        out = run.root
        recipe = derived(base, **{"sft.max_steps": steps})
        if not has_adapter(run.sft_adapter):
            started = time.time()
            say(f"warm start, {steps} SFT steps, into {out}")
            train_in_child(recipe, out, stop_after="sft")
            say(f"warm start of {steps} steps done", started)
        tasks = read_tasks(resolve_task_files(recipe, out)[1], "eval")[: args.dev_tasks]
        folder = run.eval_named("dev")
        evaluator.greedy(run.sft_adapter, f"sft-{steps}", tasks, folder)
        evaluator.sampled(run.sft_adapter, f"sft-{steps}", tasks, folder / "samples.jsonl")
        dev[steps] = pass_rates(folder)
        say(f"sft-{steps} on {len(tasks)} dev tasks: greedy {dev[steps][0]:.3f}, sampled {dev[steps][1]:.3f}")
    return dev


def freeze_stage(root: Path, dev: dict[int, tuple[float, float]]) -> int:
    """2. copy the chosen warm start to ROOT/warm_start once; later starts check it is unchanged."""
    claim = ClaimFolder(root)
    frozen, record = claim.warm_start, claim.warm_start_record
    if record.exists():
        kept = json.loads(record.read_text())
        if sha256_tree(frozen) != kept["sha256"]:
            raise SystemExit(f"{frozen} differs from the hashes in {record}: the frozen warm start changed")
        say(f"frozen warm start: {kept['sft_steps']} SFT steps ({record})")
        return int(kept["sft_steps"])
    steps = choose_warm_start(dev)
    source = claim.warm_run(steps).sft_adapter
    shutil.copytree(source, frozen)
    record.write_text(
        json.dumps(
            {
                "sft_steps": steps,
                "source": str(source),
                "dev": {str(n): {"greedy_pass": g, "sampled_pass": s} for n, (g, s) in sorted(dev.items())},
                "rule": "best greedy dev pass@0.75; ties: sampled, then fewer steps",
                "sha256": sha256_tree(frozen),
            },
            indent=1,
        )
        + "\n"
    )
    say(f"froze the {steps}-step warm start into {frozen}")
    return steps


def grpo_stage(root: Path, base: Any, args: argparse.Namespace, sft_steps: int) -> dict[int, Path]:
    """3. GRPO from the frozen warm start, once per seed (each kept when done, with ``--keep``); returns
    seed -> adapter."""
    from toolkit.runs import has_adapter

    claim = ClaimFolder(root)
    adapters = {}
    for seed in args.grpo_seeds:
        run = claim.grpo_run(seed)
        out = run.root
        if not (has_adapter(run.adapter) and run.summary_file.exists()):
            started = time.time()
            say(f"GRPO seed {seed} from the frozen warm start, into {out}")
            # sft.max_steps: what the frozen adapter was trained with (the run's step count goes on from it);
            # rollout.seed with seed: the sampler's seed is the training seed's, as in the dev-set sweeps
            overrides = {
                "seed": seed,
                "rollout.seed": seed,
                "warm_start": str(claim.warm_start),
                "sft.max_steps": sft_steps,
            }
            train_in_child(derived(base, **overrides), out)
            say(f"GRPO seed {seed} done", started)
            if args.keep:
                keep_outputs(root, args.keep)
        adapters[seed] = run.adapter
    return adapters


def test_stage(
    root: Path, recipe: Any, args: argparse.Namespace, evaluator: ClaimEvaluator, adapters: dict[str, Path]
) -> None:
    """4. each test set synthesized once, every adapter evaluated on it greedy and sampled."""
    try:
        evaluate_test_sets(recipe, adapters, args.test_seeds, args.test_tasks, root, evaluator)
    except ValueError as exc:  # a test set short of tasks after the filter, or another run's files
        raise SystemExit(str(exc)) from exc


def claim_stage(root: Path, out: Path) -> dict[str, Any]:
    """5. the claim over ROOT (``toolkit.eval.claim``)."""
    from toolkit.eval.claim import compute_claim, read_root

    claim = compute_claim(*read_root(root))
    claim["protocol"] = json.loads(ClaimFolder(root).protocol_file.read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dumps(claim, indent=1, sort_keys=True) + "\n")
    met = sum(claim["criteria"].values())
    say(f"criteria met: {met} of {len(claim['criteria'])}; wrote {out}")
    return claim


def reproduce(args: argparse.Namespace) -> dict[str, Any]:
    root: Path = args.root
    if args.keep:
        restore_kept(root, args.keep)
    open_root(root, protocol(args))
    if args.reuse_rounds:
        reuse_stage(root, args.reuse_rounds, args)
    recipe = base_recipe(args)
    if not recipe.sft:
        raise SystemExit(f"recipe {args.recipe}: the protocol needs an sft section (the warm start)")
    started = time.time()
    with ClaimEvaluator(recipe, args.samples) as evaluator:
        dev = warm_stage(root, recipe, args, evaluator)
        sft_steps = freeze_stage(root, dev)
        if args.keep:
            keep_outputs(root, args.keep)
        grpo = grpo_stage(root, recipe, args, sft_steps)
        adapters = {
            WARM_START: ClaimFolder(root).warm_start,
            **{grpo_seed_name(s): a for s, a in grpo.items()},
        }
        test_stage(root, recipe, args, evaluator, adapters)
    if args.keep:
        keep_outputs(root, args.keep)
    claim = claim_stage(root, args.out)
    say("every stage done", started)
    return claim


# ---- where a run of the protocol stands -----------------------------------------------------------------


def _last_checkpoint(folder: Path) -> int | None:
    """The step of a trainer's last kept checkpoint in ``folder`` (None: none)."""
    from toolkit.train.resume import last_checkpoint

    found = last_checkpoint(folder)
    return None if found is None else int(Path(found).name.rsplit("-", 1)[1])


def _training(max_steps: int, adapter: Path, folder: Path) -> str:
    """``done``, ``at checkpoint N of M``, ``started, no checkpoint yet`` or ``not started`` for one
    trainer's stage (its final ``adapter``, its output ``folder``)."""
    from toolkit.runs import has_adapter

    if has_adapter(adapter):
        return "done"
    kept = _last_checkpoint(folder)
    if kept is not None:
        return f"at checkpoint {kept} of {max_steps}"
    return "started, no checkpoint yet" if folder.exists() else "not started"


def _evaluated(folder: Path) -> str:
    from toolkit.runs import EVAL_MARKER

    greedy = "greedy done" if (folder / EVAL_MARKER).is_file() else "greedy not done"
    return f"{greedy}, {'sampled done' if (folder / 'samples.jsonl').is_file() else 'sampled not done'}"


def status(root: Path) -> list[str]:
    """Where a run of the protocol stands, stage by stage, read from ROOT alone (nothing runs)."""
    from toolkit.runs import has_adapter
    from toolkit.train.rft import RftConfig

    claim = ClaimFolder(root)
    if not claim.protocol_file.is_file():
        return [f"{root}: not started (no {claim.protocol_file.name})"]
    p = json.loads(claim.protocol_file.read_text())
    lines = [
        f"protocol: recipe {p['recipe']}; SFT lengths {p['sft_lengths']}; GRPO seeds {p['grpo_seeds']}; "
        f"test seeds {p['test_seeds']} x {p['test_tasks']} tasks; {p['samples']} samples a task"
    ]
    if p.get("reuse_rounds"):
        lines[0] += f"; the warm start and the RFT rounds it held reused from {p['reuse_rounds']}"
    settings = p.get("recipe_settings") or {}
    grpo_steps = int((settings.get("grpo") or {}).get("max_steps", 0))
    for steps in p["sft_lengths"]:
        run = claim.warm_run(steps)
        training = _training(steps, run.sft_adapter, run.sft)
        if claim.warm_start_record.is_file() and not has_adapter(run.sft_adapter):
            training = "done on another machine (its run not kept; the frozen copy stands for it)"
        line = f"warm start sft-{steps}: {training}"
        dev = run.eval_named("dev")
        if (dev / "results.jsonl").is_file() and (dev / "samples.jsonl").is_file():
            greedy, sampled = pass_rates(dev)
            line += f"; dev greedy {greedy:.3f}, sampled {sampled:.3f}"
        elif dev.exists():
            line += f"; dev {_evaluated(dev)}"
        lines.append(line)
    if claim.warm_start_record.is_file():
        frozen = json.loads(claim.warm_start_record.read_text())
        lines.append(f"frozen warm start: {frozen['sft_steps']} SFT steps ({claim.warm_start_record})")
    else:
        lines.append("frozen warm start: not yet")
    for seed in p["grpo_seeds"]:
        run = claim.grpo_run(seed)
        if not run.root.exists():
            lines.append(f"GRPO seed {seed}: not started")
            continue
        parts = []
        rounds = RftConfig.from_section(settings.get("rft")).rounds if settings.get("rft") else 0
        for k in range(1, rounds + 1):
            name, one = ("RFT round" if rounds == 1 else f"RFT round {k}"), run.rft_round(k)
            if has_adapter(one.adapter):
                parts.append(f"{name} done")
                continue
            sampled = len(list(one.sample_parts.glob("*.jsonl"))) if one.sample_parts.is_dir() else 0
            parts.append(
                f"{name}: {sampled} sample parts" + (", sampled" if one.samples_file.is_file() else "")
            )
            break  # a later round cannot have started
        parts.append(f"GRPO {_training(grpo_steps, run.adapter, run.grpo)}")
        lines.append(f"GRPO seed {seed}: " + "; ".join(parts))
    labels = [WARM_START, *(grpo_seed_name(s) for s in p["grpo_seeds"])]
    for seed in p["test_seeds"]:
        have = "tasks written" if claim.test_tasks(seed).is_file() else "tasks not written"
        done = [f"{label} {_evaluated(claim.evaluation(seed, label))}" for label in labels]
        lines.append(f"test seed {seed}: {have}; " + "; ".join(done))
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.reproduce_claim", description=__doc__.split("\n")[0]
    )
    parser.add_argument("root", type=Path, help="the claim's folder (runs, tasks, evaluations); resumable")
    parser.add_argument("--out", type=Path, help="the claim.json to write (required, but with --status)")
    parser.add_argument(
        "--recipe", default="cpu-learn-rft", help="recipe name or YAML path (default cpu-learn-rft)"
    )
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="recipe override")
    parser.add_argument(
        "--sft-lengths", type=distinct_ints, default=list(SFT_LENGTHS), help="default 30,60,120"
    )
    parser.add_argument("--grpo-seeds", type=distinct_ints, default=list(GRPO_SEEDS), help="default 0,1,2")
    parser.add_argument(
        "--test-seeds", type=distinct_ints, default=list(TEST_SEEDS), help="default 3101,3102"
    )
    parser.add_argument(
        "--test-tasks", type=positive_int, default=TEST_TASKS, help="tasks per test seed (300)"
    )
    parser.add_argument("--samples", type=positive_int, default=SAMPLES, help="sampled episodes per task (4)")
    parser.add_argument("--dev-tasks", type=positive_int, default=None, help="only the first N dev tasks")
    parser.add_argument("--verbose", action="store_true", help="show the libraries' logs and warnings")
    parser.add_argument(
        "--status", action="store_true", help="say where a run of the protocol in ROOT stands; run nothing"
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="a folder (committed) that carries the run across machines: restored into ROOT on start, "
        "each finished stage's outputs copied into it",
    )
    parser.add_argument(
        "--reuse-rounds",
        type=Path,
        metavar="SRC",
        help="an earlier claim's root (or its --keep folder) whose protocol differs in the GRPO stage, GRPO "
        "seeds and test seeds alone: its frozen warm start and finished RFT rounds are copied in, not trained",
    )
    parser.add_argument(
        "--keep-now", action="store_true", help="copy ROOT's outputs into --keep now and run nothing"
    )
    args = parser.parse_args(argv)
    if args.keep_now:
        if args.keep is None:
            parser.error("--keep-now needs --keep DIR")
        if not ClaimFolder(args.root).protocol_file.is_file():
            parser.error(f"{args.root} holds no run of the protocol (no protocol.json)")
        keep_outputs(args.root, args.keep)
        return
    if args.status:
        print("\n".join(status(args.root)))
        return
    if args.out is None:
        parser.error("--out is required (the claim.json to write)")
    if args.samples < 2:
        parser.error("--samples must be at least 2 (a sampled pass rate)")
    from toolkit.train.quiet import VERBOSE_ENV, quiet_libraries

    if args.verbose:  # the training stages run in processes of their own: they read it from the environment
        os.environ[VERBOSE_ENV] = "1"
    quiet_libraries(args.verbose or None)  # before vLLM, TRL or transformers are imported, as mcp-rl train
    reproduce(args)


if __name__ == "__main__":  # vLLM's engine starts in a spawned process: the guard keeps it from re-running
    main()
