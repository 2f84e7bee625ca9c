"""Where a training run keeps what: the one place that knows a run folder's layout (``mcp-rl train --out``),
and that of the two folders made from a run (a published record, a shipped adapter pair).

A run folder (``RunFolder``):

- ``recipe.json``: the recipe as run (``--resume`` continues with it)
- ``summary.json``: what the run reported (comparisons, timings, the test sets, the learning curve)
- ``metrics.jsonl``: one JSON object per logged step (``phase``: sft | rft | grpo)
- ``tasks/``: tasks synthesised for the run (``train.jsonl``, ``eval.jsonl``), ``tasks/test-seed<S>/``
- ``sft/``: the warm start's trainer output, its adapter in ``sft/adapter/``
- ``rft/``: the rejection-sampling round (recipe section ``rft``, off by default): ``samples.jsonl``
  (every episode it sampled; ``sample-parts/`` while it samples), its checkpoints, its adapter in
  ``rft/adapter/`` (GRPO starts from it)
- ``rft-<k>/``: round k >= 2 of ``rft.rounds``, laid out as ``rft/`` (GRPO starts from the last round's
  adapter)
- ``grpo/``: TRL's output: ``checkpoint-N/``, the rollout log ``rollouts.jsonl``, the screened pool
  ``pool.jsonl``
- ``adapter/``: the final LoRA adapter (``merged/``: the base model with it merged)
- ``eval/``: ``toolkit.eval.run_eval`` folders: ``sft/`` (or ``base/`` without a warm start) and ``grpo/``,
  ``curve/step-N/``, ``test-seed<S>/{sft|base,grpo}/``, ``adapter/`` (the closing command's)

A published record (``mcp-rl publish``) keeps the run's ``summary.json``, ``recipe.json`` and
``metrics.jsonl`` under the same names, so ``RunFolder`` reads it too. A shipped pair (``ShippedFolder``,
``mcp-rl ship``): ``recipe.json``, ``record.json``, ``warm_start/`` (the run's ``sft/adapter``) and
``grpo/`` (its ``adapter``); shipped from a claim's root, ``grpo-seed<S>/`` for each GRPO seed instead of
``grpo/`` (``record.json`` names the sides it holds).

A claim's root (``ClaimFolder``, ``python -m bench.reproduce_claim``, issue 49): ``protocol.json``,
``warm/sft-<N>/`` (a run per SFT length), ``warm_start/`` (the frozen adapter) with ``warm_start.json``,
``grpo/seed-<S>/`` (a run per GRPO seed), ``tasks/test-seed<T>.jsonl`` and
``eval/test-seed<T>/<adapter>/`` (``toolkit.eval.claim`` reads these two), ``test-synth/`` (where the
test sets were synthesised). ``ClaimFolder.kept_files``: what a run of it carries between machines.

A lever measured alone (``LeverFolder``, ``python -m bench.lever_rft``, issue 49): ``run/`` (the run that
applies it), ``dev/warm_start/``, ``dev/<lever>/`` (the dev set before and after) and ``dev/check/`` (the
warm start evaluated again on a few tasks, when a stored evaluation is reused).

Levers side by side (``SweepFolder``, ``python -m bench.lever_sweep``, issue 49): ``<arm>/run/`` (the arm's
run; none for ``warm``, the warm start itself), ``<arm>/dev/`` (its greedy evaluation on the dev set) and
``<arm>/dev/samples.jsonl`` (its sampled episodes), ``<arm>/arm.json`` (what it was started with),
``logs/<arm>.log`` (each arm runs in its own process)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ADAPTER_MARKER = "adapter_config.json"  # PEFT writes it with every adapter: the adapter is there
EVAL_MARKER = "results.json"  # run_eval writes it last: the evaluation finished


def seed_set_name(seed: int | str) -> str:
    """A test set's name, in ``tasks/``, in ``eval/`` and in ``summary.json``-derived records."""
    return f"test-seed{seed}"


GRPO_SEED_PREFIX = "grpo-seed"


def grpo_seed_name(seed: int | str) -> str:
    """A claim's GRPO adapter of one training seed: its evaluations' label and its shipped folder."""
    return f"{GRPO_SEED_PREFIX}{seed}"


def has_adapter(folder: Path) -> bool:
    return (folder / ADAPTER_MARKER).is_file()


@dataclass(frozen=True)
class TaskFolder:
    """A task set's folder (``mcp-rl synth --out``, a run's ``tasks/``): train and eval split, summary."""

    path: Path

    @property
    def train(self) -> Path:
        return self.path / "train.jsonl"

    @property
    def eval(self) -> Path:
        return self.path / "eval.jsonl"

    @property
    def summary(self) -> Path:
        return self.path / "summary.json"

    def complete(self) -> bool:
        return self.train.exists() and self.eval.exists()


@dataclass(frozen=True)
class RftRoundFolder:
    """One RFT round's folder (``RunFolder.rft_round``): its trainer output (checkpoints), the sampled
    episodes, its adapter."""

    path: Path

    @property
    def samples_file(self) -> Path:
        return self.path / "samples.jsonl"

    @property
    def sample_parts(self) -> Path:
        """The round's episodes part by part while it samples (gone once ``samples.jsonl`` holds them)."""
        return self.path / "sample-parts"

    @property
    def adapter(self) -> Path:
        return self.path / "adapter"


@dataclass(frozen=True)
class RunFolder:
    """A training run's folder: every path of its layout (module docstring)."""

    root: Path

    def __init__(self, root: str | Path):
        object.__setattr__(self, "root", Path(root))

    def __fspath__(self) -> str:  # where a path is expected, the folder itself
        return str(self.root)

    # the run's record
    @property
    def recipe_file(self) -> Path:
        return self.root / "recipe.json"

    @property
    def summary_file(self) -> Path:
        return self.root / "summary.json"

    @property
    def metrics_file(self) -> Path:
        return self.root / "metrics.jsonl"

    def published_files(self) -> list[Path]:
        """What ``mcp-rl publish`` keeps of a run (the record a reader checks the claim with)."""
        return [self.summary_file, self.recipe_file, self.metrics_file]

    # tasks
    @property
    def tasks(self) -> TaskFolder:
        return TaskFolder(self.root / "tasks")

    def test_tasks(self, seed: int) -> TaskFolder:
        return TaskFolder(self.root / "tasks" / seed_set_name(seed))

    # training
    @property
    def sft(self) -> Path:
        """The warm start's trainer output (its checkpoints)."""
        return self.root / "sft"

    @property
    def sft_adapter(self) -> Path:
        return self.sft / "adapter"

    @property
    def rft(self) -> Path:
        """The rejection-sampling round's trainer output (``toolkit.train.rft``): its checkpoints, the
        sampled episodes, its adapter."""
        return self.root / "rft"

    @property
    def rft_samples_file(self) -> Path:
        return self.rft_round(1).samples_file

    @property
    def rft_sample_parts(self) -> Path:
        return self.rft_round(1).sample_parts

    @property
    def rft_adapter(self) -> Path:
        """The first round's adapter (``rft_round(k).adapter`` for round k)."""
        return self.rft_round(1).adapter

    def rft_round(self, k: int) -> RftRoundFolder:
        """Round ``k`` of ``rft.rounds`` (from 1): the first is ``rft/``, a later one ``rft-<k>/``."""
        if k < 1:
            raise ValueError(f"RFT rounds count from 1, got {k}")
        return RftRoundFolder(self.rft if k == 1 else self.root / f"rft-{k}")

    @property
    def grpo(self) -> Path:
        """GRPO's trainer output: checkpoints, the rollout log, the screened pool."""
        return self.root / "grpo"

    @property
    def rollouts_file(self) -> Path:
        return self.grpo / "rollouts.jsonl"

    @property
    def pool_file(self) -> Path:
        return self.grpo / "pool.jsonl"

    def checkpoint(self, step: int) -> Path:
        return self.grpo / f"checkpoint-{step}"

    def checkpoints(self, with_adapter: bool = True) -> list[tuple[int, Path]]:
        """``(step, folder)`` of GRPO's checkpoints, by step; ``with_adapter``: those that hold an adapter."""
        found = []
        for ckpt in self.grpo.glob("checkpoint-*"):
            step = ckpt.name.removeprefix("checkpoint-")
            if step.isdigit() and (has_adapter(ckpt) or not with_adapter):
                found.append((int(step), ckpt))
        return sorted(found)

    @property
    def adapter(self) -> Path:
        """The final (GRPO) adapter."""
        return self.root / "adapter"

    @property
    def merged(self) -> Path:
        return self.root / "merged"

    # evaluations
    @property
    def eval(self) -> Path:
        return self.root / "eval"

    def eval_before(self, warm: bool, test_seed: int | str | None = None) -> Path:
        """The evaluation before GRPO: the warm start's (``sft``) or, without one, the base model's; on the
        dev set, or on the test set of ``test_seed``."""
        return self._eval_set(test_seed) / ("sft" if warm else "base")

    def eval_after(self, test_seed: int | str | None = None) -> Path:
        """The evaluation of the GRPO adapter, on the dev set or on the test set of ``test_seed``."""
        return self._eval_set(test_seed) / "grpo"

    def evaluated_warm_start(self) -> bool:
        """Whether the run's evaluation before GRPO was of a warm start (``eval/sft``) or the base model."""
        return self.eval_before(warm=True).is_dir()

    def eval_test(self, seed: int | str) -> Path:
        return self.eval / seed_set_name(seed)

    def eval_curve(self, step: int) -> Path:
        return self.eval / "curve" / f"step-{step}"

    def eval_named(self, name: str) -> Path:
        """An evaluation folder by name (``dev``, ``test-seed<S>``: re-evaluations such as bench.regrade)."""
        return self.eval / name

    @property
    def eval_adapter(self) -> Path:
        """Where the run's closing ``mcp-rl eval`` command evaluates the final adapter."""
        return self.eval / "adapter"

    def _eval_set(self, test_seed: int | str | None) -> Path:
        return self.eval if test_seed is None else self.eval_test(test_seed)

    def outputs(self) -> list[str]:
        """The outputs a resumed run reuses, as found (relative to the run): tasks, warm start, RFT adapter,
        evaluations, last checkpoint, adapter."""
        found = [self.tasks.train, self.sft_adapter, self.rft_adapter, self.eval_before(False)]
        found += [self.eval_before(True)]
        found += [ckpt for _, ckpt in self.checkpoints()[-1:]]
        found += [self.adapter, self.eval_after()]
        return [p.relative_to(self.root).as_posix() for p in found if p.exists()]


@dataclass(frozen=True)
class ShippedFolder:
    """A shipped adapter pair (``mcp-rl ship``): the run's recipe, a record, and two adapters."""

    root: Path

    def __init__(self, root: str | Path):
        object.__setattr__(self, "root", Path(root))

    def __fspath__(self) -> str:  # where a path is expected, the folder itself
        return str(self.root)

    SIDES = ("warm_start", "grpo")

    @property
    def recipe_file(self) -> Path:
        return self.root / "recipe.json"

    @property
    def record_file(self) -> Path:
        return self.root / "record.json"

    @property
    def warm_start(self) -> Path:
        return self.root / "warm_start"

    @property
    def grpo(self) -> Path:
        return self.root / "grpo"

    def side(self, name: str) -> Path:
        """A shipped adapter's folder: ``warm_start``, ``grpo``, or ``grpo-seed<S>`` (a claim's)."""
        if name not in self.SIDES and not name.startswith(GRPO_SEED_PREFIX):
            raise KeyError(f"no shipped side {name!r}: warm_start, grpo or {GRPO_SEED_PREFIX}<S>")
        return self.root / name

    def grpo_seed(self, seed: int | str) -> Path:
        """A claim's GRPO adapter of one training seed."""
        return self.root / grpo_seed_name(seed)

    def curve(self, side: str) -> Path:
        """A claim's training metrics of one side (``warm_start``: its SFT; ``grpo-seed<S>``: the seed's RFT
        round and GRPO), copied from the run's ``metrics.jsonl``."""
        return self.root / "curves" / f"{self.side(side).name}.jsonl"

    @staticmethod
    def sources(run: RunFolder) -> dict[str, Path]:
        """Each shipped side's adapter in the run it comes from."""
        return {"warm_start": run.sft_adapter, "grpo": run.adapter}

    def relative(self, path: Path) -> str:
        """A shipped file's name in the record (``warm_start/adapter_config.json``)."""
        return path.relative_to(self.root).as_posix()


@dataclass(frozen=True)
class ClaimFolder:
    """A learning claim's root (module docstring): the runs it trains and the evaluations it reads."""

    root: Path

    def __init__(self, root: str | Path):
        object.__setattr__(self, "root", Path(root))

    @property
    def protocol_file(self) -> Path:
        return self.root / "protocol.json"

    def warm_run(self, sft_steps: int) -> RunFolder:
        return RunFolder(self.root / "warm" / f"sft-{sft_steps}")

    @property
    def warm_start(self) -> Path:
        """The frozen warm start every GRPO seed starts from."""
        return self.root / "warm_start"

    @property
    def warm_start_record(self) -> Path:
        return self.root / "warm_start.json"

    def grpo_run(self, seed: int) -> RunFolder:
        return RunFolder(self.root / "grpo" / f"seed-{seed}")

    def test_tasks(self, seed: int) -> Path:
        return self.root / "tasks" / f"{seed_set_name(seed)}.jsonl"

    def test_task_files(self) -> dict[int, Path]:
        """The test sets written so far: seed -> task file."""
        prefix = seed_set_name("")
        return {
            int(p.stem.removeprefix(prefix)): p
            for p in sorted((self.root / "tasks").glob(f"{prefix}*.jsonl"))
            if p.stem.removeprefix(prefix).isdigit()
        }

    @property
    def test_synth(self) -> Path:
        """Where the test sets are synthesised (a run-like folder: its tasks/)."""
        return self.root / "test-synth"

    def evaluation(self, seed: int, adapter: str) -> Path:
        """An adapter's greedy results and samples on a test set."""
        return self.root / "eval" / seed_set_name(seed) / adapter

    def kept_files(self) -> list[Path]:
        """The files a run of the protocol carries from one machine to the next (``bench.reproduce_claim
        --keep``): every file in the root but trainer checkpoints, merged models, RFT sample parts (a
        round's ``samples.jsonl`` holds them once written; it is kept until the round's adapter is
        there, about 7 MB), vLLM's per-step adapters, evaluation viewers (``toolkit.eval.viewer`` makes
        them again from the results), the warm starts' own runs (the frozen copy and its record stand for
        them; their dev evaluations are kept) and each GRPO seed's ``sft/`` (its copy of the frozen warm
        start, copied again on resume). One checkpoint is carried: a GRPO seed stopped part-way keeps its
        last complete one (``last_complete_checkpoint``, 60 MB with the optimizer's state) and its
        rollouts, so that the next machine goes on from it instead of step 0 (the recipes save every few
        steps for this); once the seed's adapter is there, no checkpoint of it is carried. What a later
        stage reads, and small enough to commit but for the adapters (about 23 MB each)."""
        carried = set()  # the one checkpoint folder carried for each GRPO seed stopped part-way
        for seed in self.root.glob("grpo/seed-*"):
            run = RunFolder(seed)
            last = None if (run.adapter / ADAPTER_MARKER).is_file() else last_complete_checkpoint(run.grpo)
            carried |= {last} if last else set()
        kept = []
        for path in sorted(self.root.rglob("*")):
            parts = path.relative_to(self.root).parts
            if not path.is_file() or any(p in _NOT_KEPT for p in parts):
                continue
            if parts[0] == "warm" and (len(parts) < 3 or parts[2] != "eval"):
                continue
            if parts[0] == "grpo" and len(parts) > 2 and parts[2] == "sft":
                continue
            if any(p.startswith("checkpoint-") for p in parts) and carried.isdisjoint(path.parents):
                continue
            if path.name == "samples.jsonl" and (path.parent / "adapter" / ADAPTER_MARKER).is_file():
                continue  # an RFT round done: its summary has the counts; the samples only spare resampling
            kept.append(path)
        return kept


def last_complete_checkpoint(folder: Path) -> Path | None:
    """The highest-numbered ``checkpoint-N`` in a trainer's output ``folder`` that holds its
    ``trainer_state.json`` (the Trainer writes it after the weights and the optimizer's state, so a save
    cut short by a stop has none); None: no such checkpoint."""
    found = [
        (int(p.name.removeprefix("checkpoint-")), p)
        for p in folder.glob("checkpoint-*")
        if p.name.removeprefix("checkpoint-").isdigit() and (p / "trainer_state.json").is_file()
    ]
    return max(found)[1] if found else None


# Folder and file names a claim's root never carries between machines (ClaimFolder.kept_files).
_NOT_KEPT = frozenset({"merged", "sample-parts", "vllm-lora", "viewer.html"})


@dataclass(frozen=True)
class LeverFolder:
    """A lever measured alone on the dev set (module docstring): its run and the evaluations it compares."""

    root: Path

    def __init__(self, root: str | Path):
        object.__setattr__(self, "root", Path(root))

    @property
    def run(self) -> RunFolder:
        return RunFolder(self.root / "run")

    @property
    def before(self) -> Path:
        """The warm start's dev-set evaluation."""
        return self.root / "dev" / "warm_start"

    def after(self, lever: str) -> Path:
        """The lever's adapter on the dev set."""
        return self.root / "dev" / lever

    @property
    def check(self) -> Path:
        """The warm start evaluated again on a few tasks, to check a reused stored evaluation."""
        return self.root / "dev" / "check"


@dataclass(frozen=True)
class SweepFolder:
    """Levers measured side by side on the dev set (module docstring): one folder per arm."""

    root: Path

    def __init__(self, root: str | Path):
        object.__setattr__(self, "root", Path(root))

    def run(self, arm: str) -> RunFolder:
        return RunFolder(self.root / arm / "run")

    def dev(self, arm: str) -> Path:
        """The arm's adapter evaluated greedily on the dev set."""
        return self.root / arm / "dev"

    def samples(self, arm: str) -> Path:
        """The arm's sampled dev-set episodes (``bench.gain_zones``' rows)."""
        return self.dev(arm) / "samples.jsonl"

    def spec(self, arm: str) -> Path:
        """What the arm was started with (recipe, dev tasks, samples): a rerun must match it."""
        return self.root / arm / "arm.json"

    def log(self, arm: str) -> Path:
        return self.root / "logs" / f"{arm}.log"
