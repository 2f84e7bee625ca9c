"""A learning claim's evaluations: a warm start and its GRPO adapters on test sets, greedy and sampled, in
the layout ``toolkit.eval.claim`` reads (``toolkit.runs.ClaimFolder``).

``bench.reproduce_claim`` evaluates the adapters it trained this way; ``mcp-rl eval-claim`` and notebook 05
evaluate shipped ones (``mcp-rl ship``) on test sets of seeds no run has used, with the same code::

    mcp-rl eval-claim data/adapters/cpu-learn-rft runs/review --test-seeds 4101,4102 --tasks 300 --samples 4
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toolkit.eval.claim import WARM_START, compute_claim, read_root
from toolkit.records import Task, read_jsonl, write_jsonl
from toolkit.runs import ClaimFolder, grpo_seed_name
from toolkit.train.runlog import log


class ClaimEvaluator:
    """Greedy and sampled evaluations of adapters with the recipe's backend (made once, reused; each
    adapter's engine is released after it). ``samples`` episodes a task for the sampled metric; 0: greedy
    only."""

    def __init__(self, recipe: Any, samples: int, backend: str | None = None):
        if samples == 1:
            raise ValueError("samples: 0 (greedy only) or at least 2 (a sampled pass rate)")
        self.recipe, self.samples, self.backend_name = recipe, samples, backend
        self._backend = None

    @property
    def backend(self) -> Any:
        if self._backend is None:
            from toolkit.train.pipeline import choose_backend, make_backend

            self._backend = make_backend(choose_backend(self.recipe, self.backend_name), self.recipe)
        return self._backend

    def close(self) -> None:
        """Stop the backend's engine, if one was made (a later evaluation makes it again)."""
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    def __enter__(self) -> ClaimEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def greedy(self, adapter: Path, label: str, tasks: list[Task], folder: Path) -> None:
        """``mcp-rl eval``'s results of ``adapter`` in ``folder``; kept when done before."""
        from toolkit.train.run_eval import eval_loop_config, evaluate_adapter

        evaluate_adapter(self.backend, adapter, label, tasks, folder, eval_loop_config(self.recipe))

    def sampled(self, adapter: Path, label: str, tasks: list[Task], out: Path) -> None:
        """``samples`` scored episodes per task at the rollout temperature into ``out``
        (``toolkit.eval.sampling`` rows); kept when done before, written whole or not at all."""
        if out.exists() or not self.samples:
            return
        from toolkit.eval.sampling import sample_scores

        started = time.time()
        temperature = float(self.recipe.rollout.get("temperature", 1.0))
        log(f"sampling {label}: {len(tasks)} tasks x {self.samples} at temperature {temperature}")
        policy = self.backend.eval_policy(adapter, label)
        try:
            rows = sample_scores(
                tasks, policy, self.recipe.loop_config(temperature=temperature), self.samples
            )
        finally:
            self.backend.release()
        out.parent.mkdir(parents=True, exist_ok=True)
        partial = out.with_suffix(".partial")
        write_jsonl(partial, rows)
        partial.rename(out)  # a killed run samples again rather than read half a file
        log(f"sampled {label} -> {out} ({time.time() - started:.0f} s)")


def claim_test_set(recipe: Any, seed: int, n_tasks: int, root: Path) -> list[Task]:
    """The test set of ``seed`` in ``root``: synthesized once from the recipe's synth settings (its eval
    split from that seed, less any task whose prompt the recipe trains on), then read back."""
    from toolkit.train.task_sources import held_out_set

    claim = ClaimFolder(root)
    task_file = claim.test_tasks(seed)
    if not task_file.exists():
        tasks = held_out_set(recipe, seed, n_tasks, claim.test_synth)
        if len(tasks) < n_tasks:
            raise ValueError(f"test seed {seed}: only {len(tasks)} tasks of {n_tasks} after the filter")
        write_jsonl(task_file, tasks)
    tasks = read_jsonl(task_file, Task)
    if len(tasks) != n_tasks:
        raise ValueError(f"{task_file}: {len(tasks)} tasks, not {n_tasks}: another call's test set")
    return tasks


def evaluate_test_sets(
    recipe: Any,
    adapters: dict[str, Path],
    seeds: Sequence[int],
    n_tasks: int,
    root: Path,
    evaluator: ClaimEvaluator,
) -> None:
    """Every adapter (label -> folder: ``warm_start``, ``grpo-seed<S>``) on every test set, greedy and
    sampled, into ``root``; what is done already is kept, so a stopped evaluation goes on where it was."""
    if WARM_START not in adapters or len(adapters) < 2:
        raise ValueError(
            f"a claim evaluates {WARM_START} and at least one GRPO adapter, got {sorted(adapters)}"
        )
    claim = ClaimFolder(root)
    for seed in seeds:
        tasks = claim_test_set(recipe, seed, n_tasks, root)
        evaluated = claim.evaluation(seed, WARM_START).parent
        others = sorted(p.name for p in evaluated.glob("*") if p.is_dir() and p.name not in adapters)
        if others:  # the claim reads every adapter folder of a test set
            raise ValueError(f"{evaluated} holds evaluations of other adapters ({', '.join(others)})")
        for label, adapter in adapters.items():
            folder = claim.evaluation(seed, label)
            evaluator.greedy(adapter, label, tasks, folder)
            evaluator.sampled(adapter, label, tasks, folder / "samples.jsonl")


def shipped_claim_adapters(shipped: Any) -> dict[str, Path]:
    """A shipped folder's adapters by claim label: a claim's warm start and GRPO seeds, or a pair's warm
    start and GRPO adapter (a claim of one GRPO seed, the recipe's)."""
    if shipped.grpo_seeds:
        return {
            WARM_START: shipped.warm_start,
            **{grpo_seed_name(s): shipped.layout.grpo_seed(s) for s in shipped.grpo_seeds},
        }
    return {WARM_START: shipped.warm_start, grpo_seed_name(shipped.recipe().seed): shipped.grpo}


def evaluate_shipped_claim(
    shipped: Any,
    seeds: Sequence[int],
    n_tasks: int,
    root: Path,
    samples: int = 0,
    backend: str | None = None,
) -> dict[str, Any]:
    """``shipped`` (``toolkit.train.ship.load_shipped``) evaluated on the test sets of ``seeds`` into
    ``root``, and the claim computed from them (``toolkit.eval.claim.compute_claim``): the mean over its
    GRPO seeds of GRPO - warm start, paired by task, with the guards."""
    recipe = shipped.recipe()
    root = Path(root)
    stale = [p for seed, p in ClaimFolder(root).test_task_files().items() if seed not in seeds]
    if stale:  # read_root reads every test set in root: one of another call would join this claim
        raise ValueError(
            f"{root} holds other test sets ({', '.join(p.name for p in stale)}): use a new folder"
        )
    # evaluations are kept across calls by adapter label: another shipped folder's under the same labels
    # would be read as these adapters'
    source = {"folder": str(Path(shipped.folder).resolve()), "sha256": shipped.record.get("sha256")}
    source_file = root / "shipped.json"
    if source_file.exists() and json.loads(source_file.read_text()) != source:
        raise ValueError(
            f"{source_file}: {root} holds another shipped folder's evaluations: use a new folder"
        )
    root.mkdir(parents=True, exist_ok=True)
    source_file.write_text(json.dumps(source, indent=1) + "\n")
    with ClaimEvaluator(recipe, samples, backend) as evaluator:
        evaluate_test_sets(recipe, shipped_claim_adapters(shipped), seeds, n_tasks, root, evaluator)
    return compute_claim(*read_root(root))
