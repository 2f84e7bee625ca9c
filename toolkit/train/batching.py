"""Several tasks per GRPO step: the order GRPO draws its tasks in, and dynamic sampling.

TRL forms one *generation batch* per optimizer step when ``steps_per_generation`` equals
``gradient_accumulation_steps`` (its default): ``per_device_train_batch_size * steps_per_generation``
episodes, i.e. ``generation_batch_size / num_generations`` distinct tasks with ``num_generations``
episodes each (``trl/trainer/grpo_config.py``; the ``RepeatSampler`` of ``grpo_trainer.py`` walks the
dataset in blocks of that many tasks). The kit decides which tasks share a block:

- ``stratified_order``: the task list GRPO reads in order (``shuffle_dataset`` off), cut into blocks of
  ``tasks_per_step`` where each block mixes kinds: kinds drawn by weight without replacement within a
  block, a task of each drawn kind from that kind's own shuffled cycle. Everything is seeded by the
  recipe's ``seed``: another seed, other tasks (every seed-0 run of cpu-demo trained on the same 26).
- ``DynamicSampling`` (DAPO's dynamic sampling): after a batch is sampled, groups whose total reward
  spreads less than ``min_spread`` teach nothing (zero or near-zero advantage); they are dropped and
  replaced by groups of other tasks, at most ``max_refill_rounds`` times. The rewards are pure
  functions of (task, trajectory), so the trainer's own reward functions score the groups here. The
  rollout hands TRL the replacement tasks with their episodes (``toolkit.train.trl_adapter.rollout_func``:
  the rows' columns, the Task itself included), so TRL scores what was sampled.
- Guidance (``guide_share``, off by default): a slot still flat after the refill rounds where every
  episode failed gets one more round of its own task with the first k of its first-turn gold calls made
  for the model (``toolkit.agent.loop.run_episodes(guide_calls=...)``), k shrinking over training; the
  guided group takes the slot when its spread is wider.

``SamplingConfig`` is the recipe's ``grpo_sampling`` section.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from toolkit.records import Task, Trajectory

ORDERS = ("shuffle", "stratified")
SPREADS = ("range", "std")
FLAT_GROUPS = ("keep", "drop")


@dataclass
class SamplingConfig:
    """The recipe's ``grpo_sampling`` section.

    Attributes:
        order: ``shuffle`` (TRL's random permutation of the tasks) or ``stratified`` (kinds mixed in
            every step, ``stratified_order``).
        kind_weights: relative weight of each kind in a step (stratified order); ``None``: every kind
            present in the pool weighs 1, whatever its count. A kind of weight 0 is not sampled.
        min_spread: dynamic sampling threshold on a group's total reward (``spread``); 0 turns it off.
        spread: ``range`` (max - min) or ``std`` (population standard deviation) of the group's rewards.
        spread_on: ``None``: the spread of the total reward (what TRL's advantages see). A component name
            (e.g. ``outcome``, the answer term of the ``outcome`` reward): the spread of that component of
            the recipe's reward(s), so that a group is kept only when its episodes differ in *that*
            (DAPO's filter on accuracy: a group where no episode, or every episode, got the answer
            teaches nothing about answers, however its call counts differ).
        max_refill_rounds: at most this many rounds of replacement groups per step; a slot still below
            the threshold after them keeps its widest group.
        flat_groups: what a slot still below the threshold after the refill rounds teaches. ``keep``: its
            widest group goes into the update like any other. ``drop``: its episodes are silenced
            (``silenced_rows``): no reward (TRL leaves them out of the group mean and the std, and
            gives them advantage 0) and no loss tokens (out of the loss normaliser), so that only groups
            that differ in ``spread_on`` move the policy, at the size a batch of those groups alone
            would (DAPO fills its batch with such groups only; with ``spread_on: outcome`` a kept flat
            group taught call counts, not answers). ``drop`` needs dynamic sampling on (``min_spread``
            and ``max_refill_rounds`` above 0): without it nothing is ever flat, and the recipe is refused.
        shared_prefix_update: in the update, run a micro-batch's prompt once when all its rows share it
            (``shared_prefix_logps``; the micro-batches are regrouped by task, ``regroup_micro_batches``).
        prescreen_samples: 0 (off), or sample every GRPO task this many times with the warm start before
            training and keep only those whose ``spread_on`` spread reaches ``min_spread``
            (``toolkit.train.prescreen``; kinds of weight 0 are not screened and not kept).
        guide_share: 0 (off), or guidance for slots where every episode failed (issue 49: the warm start
            never solved ~58% of the dev tasks, and their groups are flat): such a slot, still flat after
            the refill rounds, gets one more group of its task in which the first
            ``k = ceil(share * n)`` of the task's ``n`` first-turn gold calls are made for the model
            (context, not trained on; ``toolkit.agent.loop``), and the model finishes the episode. The
            guided group takes the slot when its spread is wider (``RefillReport.guided_kept``); a task
            without first-turn gold calls gets no guided round. In [0, 1]; needs dynamic sampling on.
            Measured once (docs/cpu-proof/README.md, "Lever: guidance ..."; share 0.5, lookups and writes,
            T 0.5): inert, 5 of 6 guided groups ended all alike (a one-call task's share rounds up to its
            whole call, and what follows it is near-deterministic) and could not take their slots.
        guide_decay_steps: 0 (a constant ``guide_share``), or the share falls linearly to 0 over this many
            optimizer steps (``guide_share_at``): guidance is withdrawn as training goes on.
        guide_below: a slot's episodes all failed when its best episode scores below this on
            ``spread_on`` (or on the total reward without it). 0.5 suits ``spread_on: outcome``, whose
            answer term is 1 for a right, grounded answer and 0 for a wrong one.
    """

    order: str = "shuffle"
    kind_weights: dict[str, float] | None = None
    min_spread: float = 0.0
    spread: str = "range"
    spread_on: str | None = None
    max_refill_rounds: int = 2
    flat_groups: str = "keep"
    shared_prefix_update: bool = False
    prescreen_samples: int = 0
    guide_share: float = 0.0
    guide_decay_steps: int = 0
    guide_below: float = 0.5

    @classmethod
    def from_recipe(cls, section: Mapping[str, Any] | None) -> SamplingConfig:
        section = dict(section or {})
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(section) - known
        if unknown:
            raise ValueError(f"grpo_sampling: unknown key(s) {sorted(unknown)}; known: {sorted(known)}")
        config = cls(**section)
        if config.order not in ORDERS:
            raise ValueError(f"grpo_sampling.order must be one of {ORDERS}, got {config.order!r}")
        if config.spread not in SPREADS:
            raise ValueError(f"grpo_sampling.spread must be one of {SPREADS}, got {config.spread!r}")
        if config.spread_on is not None and (not isinstance(config.spread_on, str) or not config.spread_on):
            raise ValueError(
                f"grpo_sampling.spread_on must be a reward component name, got {config.spread_on!r}"
            )
        if config.flat_groups not in FLAT_GROUPS:
            raise ValueError(
                f"grpo_sampling.flat_groups must be one of {FLAT_GROUPS}, got {config.flat_groups!r}"
            )
        if not isinstance(config.shared_prefix_update, bool):
            raise ValueError("grpo_sampling.shared_prefix_update must be true or false")
        if (
            not isinstance(config.prescreen_samples, int)
            or isinstance(config.prescreen_samples, bool)
            or config.prescreen_samples < 0
            or config.prescreen_samples == 1
        ):
            raise ValueError(
                "grpo_sampling.prescreen_samples must be 0 (off) or an integer >= 2 (a spread needs two"
                f" episodes), got {config.prescreen_samples!r}"
            )
        if config.prescreen_samples and config.min_spread <= 0:
            raise ValueError(
                "grpo_sampling.prescreen_samples needs min_spread > 0: the spread a task must show"
            )
        if config.min_spread < 0 or config.max_refill_rounds < 0:
            raise ValueError("grpo_sampling.min_spread and max_refill_rounds must not be negative")
        if config.flat_groups == "drop" and not config.dynamic:
            raise ValueError(
                "grpo_sampling.flat_groups: drop needs dynamic sampling (min_spread > 0 and"
                f" max_refill_rounds > 0; got min_spread {config.min_spread}, max_refill_rounds"
                f" {config.max_refill_rounds}): it silences the groups still flat after the refill rounds,"
                " and without them no group is ever found flat, so drop would silently act as keep"
            )
        _check_guidance(config)
        if config.kind_weights is not None and (
            not isinstance(config.kind_weights, dict)
            or any(
                not isinstance(w, (int, float)) or isinstance(w, bool) or w < 0
                for w in config.kind_weights.values()
            )
            or not any(config.kind_weights.values())
        ):
            raise ValueError("grpo_sampling.kind_weights must map kinds to weights >= 0, at least one > 0")
        return config

    @property
    def dynamic(self) -> bool:
        return self.min_spread > 0 and self.max_refill_rounds > 0

    def guide_share_at(self, step: int) -> float:
        """``guide_share`` at optimizer step ``step``: constant, or falling linearly to 0 at
        ``guide_decay_steps``."""
        if self.guide_decay_steps <= 0:
            return self.guide_share
        return self.guide_share * max(0.0, 1.0 - step / self.guide_decay_steps)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)


def _check_guidance(config: SamplingConfig) -> None:
    if not _is_number(config.guide_share) or not 0.0 <= config.guide_share <= 1.0:
        raise ValueError(f"grpo_sampling.guide_share must be a number in [0, 1], got {config.guide_share!r}")
    decay = config.guide_decay_steps
    if not isinstance(decay, int) or isinstance(decay, bool) or decay < 0:
        raise ValueError(f"grpo_sampling.guide_decay_steps must be an integer >= 0, got {decay!r}")
    if not _is_number(config.guide_below):
        raise ValueError(f"grpo_sampling.guide_below must be a number, got {config.guide_below!r}")
    if config.guide_share > 0 and not config.dynamic:
        raise ValueError(
            "grpo_sampling.guide_share needs dynamic sampling (min_spread > 0 and max_refill_rounds > 0;"
            f" got min_spread {config.min_spread}, max_refill_rounds {config.max_refill_rounds}): it guides"
            " the slots still flat after the refill rounds"
        )


def guide_count(task: Task, share: float) -> int:
    """How many of ``task``'s first-turn gold calls guidance makes at ``share``: ``ceil(share * n)``."""
    n = sum(1 for g in task.gold if g.turn == 0)
    return min(n, math.ceil(round(share * n, 9))) if share > 0 else 0


def all_failed(rewards: Sequence[float], below: float) -> bool:
    """Whether every scorable episode of a group scored below ``below`` (False when none is scorable:
    an environment's failure is not the model's)."""
    scored = [r for r in rewards if not math.isnan(r)]
    return bool(scored) and max(scored) < below


def task_kind(task: Task) -> str:
    return str(task.metadata.get("kind") or "unknown")


def _weights(tasks: Sequence[Task], kind_weights: Mapping[str, float] | None) -> dict[str, float]:
    present = sorted({task_kind(t) for t in tasks})
    if kind_weights is None:
        return dict.fromkeys(present, 1.0)
    missing = sorted(k for k, w in kind_weights.items() if w > 0 and k not in present)
    if missing:
        raise ValueError(f"grpo_sampling.kind_weights names kinds no GRPO task has: {missing}")
    return {k: float(kind_weights.get(k, 0.0)) for k in present if kind_weights.get(k, 0.0) > 0}


class KindCycles:
    """Per kind, the tasks in a seeded shuffled order, drawn in turn and reshuffled when used up."""

    def __init__(self, tasks: Sequence[Task], rng: random.Random):
        self.rng = rng
        self.by_kind: dict[str, list[Task]] = defaultdict(list)
        for task in tasks:
            self.by_kind[task_kind(task)].append(task)
        self._queues: dict[str, list[Task]] = {}

    def draw(self, kind: str, avoid: set[str] = frozenset()) -> Task:
        """The next task of ``kind``, skipping ids in ``avoid`` when the kind has others."""
        pool = self.by_kind[kind]
        if not pool:
            raise ValueError(f"no task of kind {kind!r} to draw")
        has_other = bool({t.id for t in pool} - set(avoid))
        while True:  # ends: a cycle holds every task of the kind, and one of them is not avoided
            queue = self._queues.get(kind)
            if not queue:
                queue = self._queues[kind] = self.rng.sample(pool, len(pool))
            task = queue.pop()
            if task.id not in avoid or not has_other:
                return task


def _draw_kinds(weights: dict[str, float], k: int, rng: random.Random, credit: dict[str, float]) -> list[str]:
    """``k`` kinds for one block, by weight, distinct while kinds remain. Each block adds every kind its
    share of ``k`` to ``credit`` and takes the kinds with the most credit (ties in random order), so a
    kind's count over the steps follows its weight closely instead of drifting with the draws (a kind
    at a tenth of the weight lands in about a tenth as many steps, not in a third of them)."""
    total = sum(weights.values())
    for kind, w in weights.items():
        credit[kind] = credit.get(kind, 0.0) + k * w / total
    out: list[str] = []
    while len(out) < k:
        ranked = sorted(weights, key=lambda x: (-credit[x], rng.random()))
        for kind in ranked[: k - len(out)]:
            out.append(kind)
            credit[kind] -= 1.0
    return out


def stratified_order(
    tasks: Sequence[Task],
    tasks_per_step: int,
    seed: int,
    kind_weights: Mapping[str, float] | None = None,
    n_steps: int | None = None,
) -> list[Task]:
    """The tasks in the order GRPO should read them: blocks of ``tasks_per_step`` that mix kinds.

    ``n_steps`` blocks (default: enough blocks for the pool's size, ``ceil(len(tasks) / tasks_per_step)``;
    TRL starts the list over when it runs out). A task repeats only when its kind's cycle is used up."""
    if tasks_per_step < 1:
        raise ValueError(f"tasks_per_step must be >= 1, got {tasks_per_step}")
    if not tasks:
        raise ValueError("stratified_order: no tasks")
    rng = random.Random(f"grpo-order:{seed}")
    weights = _weights(tasks, kind_weights)
    cycles = KindCycles([t for t in tasks if task_kind(t) in weights], rng)
    n_steps = n_steps or math.ceil(len(tasks) / tasks_per_step)
    order: list[Task] = []
    credit: dict[str, float] = {}
    for _ in range(n_steps):
        block: list[Task] = []
        for kind in _draw_kinds(weights, tasks_per_step, rng, credit):
            block.append(cycles.draw(kind, avoid={t.id for t in block}))
        order.extend(block)
    return order


def batch_mix_metrics(kinds: Sequence[str], task_ids: Sequence[str], group_size: int) -> dict[str, float]:
    """What one generation batch held: distinct tasks and kinds (``batch/...``); one row per episode."""
    return {
        "batch/tasks_distinct": float(len(set(task_ids))),
        "batch/kinds_distinct": float(len(set(kinds))),
        "batch/groups": float(len(task_ids) // max(1, group_size)),
    }


def group_spread(rewards: Sequence[float], how: str = "range") -> float:
    """The spread of one group's total rewards, NaN (unscorable) episodes left out; 0 below two."""
    scored = [r for r in rewards if not math.isnan(r)]
    if len(scored) < 2:
        return 0.0
    if how == "std":
        mean = sum(scored) / len(scored)
        return math.sqrt(sum((r - mean) ** 2 for r in scored) / len(scored))
    return max(scored) - min(scored)


def trainer_scorer(
    trainer: Any, component: str | None = None
) -> Callable[[list[Task], list[Trajectory]], list[float]]:
    """``(tasks, trajectories) -> rewards`` with the trainer's own reward functions and weights
    (``reward_scorer``)."""
    return reward_scorer(trainer.reward_funcs, trainer.reward_weights.tolist(), component)


def reward_scorer(
    funcs: Sequence[Any], weights: Sequence[float], component: str | None = None
) -> Callable[[list[Task], list[Trajectory]], list[float]]:
    """``(tasks, trajectories) -> rewards`` with TRL reward functions (``toolkit.train.grpo.reward_funcs``)
    and their weights.

    ``component`` None: the total reward, summed as TRL sums it (``toolkit.train.diagnostics.weighted_rewards``).
    A component name: that entry of each kit reward's breakdown, weighted like its reward and summed over
    the rewards that report it (``grpo_sampling.spread_on``). Unscorable episodes are NaN either way."""
    import torch

    from toolkit.rewards.trl import TRLRewardFunc, scorable
    from toolkit.train.diagnostics import weighted_rewards

    weights = [float(w) for w in weights]
    if len(weights) != len(funcs):
        raise ValueError(f"{len(funcs)} reward functions but {len(weights)} weights")

    def total(tasks: list[Task], trajs: list[Trajectory]) -> list[float]:
        kwargs = {"task": list(tasks), "trajectory": list(trajs)}  # the records, as the trainer hands them
        per_func = []
        for func in funcs:
            values = func(prompts=[None] * len(tasks), completions=[None] * len(tasks), **kwargs)
            per_func.append([math.nan if v is None else float(v) for v in values])
        table = torch.tensor(per_func, dtype=torch.float32).T
        return weighted_rewards(table, torch.tensor(weights, dtype=torch.float32))

    def part(tasks: list[Task], trajs: list[Trajectory]) -> list[float]:
        values = [0.0] * len(tasks)
        reported: set[str] = set()
        for func, weight in zip(funcs, weights, strict=True):
            if not isinstance(func, TRLRewardFunc):
                continue
            for i, (res, traj) in enumerate(zip(func.reward.batch(tasks, trajs), trajs, strict=True)):
                reported.update(res.breakdown)
                if not scorable(res, traj):
                    values[i] = math.nan
                elif component in res.breakdown:
                    values[i] += weight * float(res.breakdown[component])
        if tasks and component not in reported:
            raise ValueError(
                f"grpo_sampling.spread_on: no reward of the recipe reports a component {component!r}"
                f" (they report: {sorted(reported) or 'none'})"
            )
        return values

    return total if component is None else part


@dataclass
class RefillReport:
    """What dynamic sampling did to one batch (logged as ``dynamic/...``)."""

    groups: int
    dropped: int = 0  # groups below the threshold in the first sampling
    rounds: int = 0  # refill rounds run
    refilled: int = 0  # slots whose final group is a replacement
    still_flat: int = 0  # slots below the threshold after the last round
    extra_episodes: int = 0
    flat_slots: list[int] = dataclasses.field(default_factory=list)  # which slots those are
    # the refill round (0: the first sampling) each slot's final group comes from
    slot_rounds: list[int] = dataclasses.field(default_factory=list)
    # every group sampled but not in the final batch: (round, its tasks, its episodes), in sampling order
    discarded: list[tuple[int, list[Task], list[Trajectory]]] = dataclasses.field(default_factory=list)
    # guidance (SamplingConfig.guide_share): this step's share, None when guidance is off (no metrics)
    guide_share: float | None = None
    guided: int = 0  # still-flat, all-failed slots that got a guided group (its round: rounds + 1)
    guided_kept: int = 0  # guided groups that took their slot
    guided_calls: list[int] = dataclasses.field(default_factory=list)  # gold calls made in each guided group

    def metrics(self) -> dict[str, float]:
        n = max(1, self.groups)
        out = {
            "dynamic/dropped_share": self.dropped / n,
            "dynamic/refill_rounds": float(self.rounds),
            "dynamic/refilled_share": self.refilled / n,
            "dynamic/still_flat_share": self.still_flat / n,
            "dynamic/extra_episodes": float(self.extra_episodes),
        }
        if self.guide_share is not None:  # shares of the batch's slots
            out["dynamic/guide_share"] = self.guide_share
            out["dynamic/guided_share"] = self.guided / n
            out["dynamic/guided_kept_share"] = self.guided_kept / n
            out["dynamic/guided_calls_mean"] = (
                sum(self.guided_calls) / len(self.guided_calls) if self.guided_calls else 0.0
            )
        return out


class DynamicSampling:
    """Drop groups whose reward spread (of the total, or of ``config.spread_on``) is below
    ``config.min_spread`` and sample other tasks instead.

    Args:
        pool: the tasks replacements are drawn from (GRPO's task list).
        config: ``min_spread``, ``spread``, ``max_refill_rounds``.
        seed: the recipe's seed (the replacement order is seeded like the task order).
    """

    def __init__(self, pool: Sequence[Task], config: SamplingConfig, seed: int = 0):
        if not pool:
            raise ValueError("dynamic sampling needs a pool of tasks to refill from")
        self.config = config
        self.cycles = KindCycles(pool, random.Random(f"grpo-refill:{seed}"))

    def _replacement(self, kind: str, avoid: set[str]) -> Task:
        """A task of the same kind when the pool has another one (keeps the step's kind mix), else any."""
        same = {t.id for t in self.cycles.by_kind.get(kind, [])} - avoid
        if same:
            return self.cycles.draw(kind, avoid)
        kinds = sorted(k for k, ts in self.cycles.by_kind.items() if {t.id for t in ts} - avoid)
        if not kinds:
            kinds = sorted(self.cycles.by_kind)
        return self.cycles.draw(self.cycles.rng.choice(kinds), avoid)

    def resample(
        self,
        tasks: list[Task],
        trajs: list[Trajectory],
        group_size: int,
        run: Callable[..., list[Trajectory]],
        score: Callable[[list[Task], list[Trajectory]], list[float]],
        guide_share: float = 0.0,
    ) -> tuple[list[Task], list[Trajectory], RefillReport]:
        """The batch with flat groups replaced; ``tasks``/``trajs`` hold ``group_size`` consecutive
        episodes per task (TRL's order). ``run(tasks)`` samples episodes of a task list (one per entry),
        ``run(tasks, guide_calls)`` with that many gold calls made for the model in each (guidance);
        ``score`` gives their rewards. ``guide_share``: this step's ``SamplingConfig.guide_share_at``
        (0: no guided round). The report keeps the groups that lost their slot
        (``RefillReport.discarded``): the policy sampled them, and what it did there is measured and logged
        like the rest (``toolkit.train.grpo.GRPOStep``)."""
        if group_size < 1 or len(tasks) % group_size or len(tasks) != len(trajs):
            raise ValueError(f"{len(tasks)} tasks / {len(trajs)} episodes do not make groups of {group_size}")
        tasks, trajs = list(tasks), list(trajs)
        n_groups = len(tasks) // group_size
        how, threshold = self.config.spread, self.config.min_spread
        rewards = score(tasks, trajs)
        spreads = [group_spread(rewards[g * group_size : (g + 1) * group_size], how) for g in range(n_groups)]
        slot_rewards = [rewards[g * group_size : (g + 1) * group_size] for g in range(n_groups)]
        flat = [g for g in range(n_groups) if spreads[g] < threshold]
        report = RefillReport(groups=n_groups, dropped=len(flat), slot_rounds=[0] * n_groups)
        if self.config.guide_share > 0 or guide_share > 0:
            report.guide_share = guide_share
        replaced: set[int] = set()
        while flat and report.rounds < self.config.max_refill_rounds:
            report.rounds += 1
            in_batch = {t.id for t in tasks}
            fresh: list[Task] = []
            for g in flat:
                task = self._replacement(task_kind(tasks[g * group_size]), in_batch)
                in_batch.add(task.id)
                fresh.append(task)
            new_tasks = [t for t in fresh for _ in range(group_size)]
            new_trajs = run(new_tasks)
            report.extra_episodes += len(new_trajs)
            new_rewards = score(new_tasks, new_trajs)
            still = []
            for j, g in enumerate(flat):
                part = slice(j * group_size, (j + 1) * group_size)
                spread = group_spread(new_rewards[part], how)
                old = slice(g * group_size, (g + 1) * group_size)
                if spread > spreads[g]:  # the wider group takes the slot
                    report.discarded.append((report.slot_rounds[g], tasks[old], trajs[old]))
                    spreads[g], report.slot_rounds[g] = spread, report.rounds
                    tasks[old], trajs[old] = new_tasks[part], new_trajs[part]
                    slot_rewards[g] = new_rewards[part]
                    replaced.add(g)
                else:
                    report.discarded.append((report.rounds, new_tasks[part], new_trajs[part]))
                if spreads[g] < threshold:
                    still.append(g)
            flat = still
        if guide_share > 0 and flat:
            flat = self._guide(
                tasks, trajs, flat, spreads, slot_rewards, group_size, guide_share, run, score, report
            )
        report.refilled = len(replaced)
        report.still_flat = len(flat)
        report.flat_slots = sorted(flat)
        return tasks, trajs, report

    def _guide(
        self,
        tasks: list[Task],
        trajs: list[Trajectory],
        flat: list[int],
        spreads: list[float],
        slot_rewards: list[list[float]],
        group_size: int,
        share: float,
        run: Callable[..., list[Trajectory]],
        score: Callable[[list[Task], list[Trajectory]], list[float]],
        report: RefillReport,
    ) -> list[int]:
        """One guided round for the still-flat slots where every episode failed (in place, as the refill
        rounds); returns the slots still flat after it."""
        how, threshold = self.config.spread, self.config.min_spread
        chosen = []
        for g in flat:
            k = guide_count(tasks[g * group_size], share)
            if k > 0 and all_failed(slot_rewards[g], self.config.guide_below):
                chosen.append((g, k))
        if not chosen:
            return flat
        round_ = report.rounds + 1
        new_tasks = [tasks[g * group_size] for g, _ in chosen for _ in range(group_size)]
        new_trajs = run(new_tasks, [k for _, k in chosen for _ in range(group_size)])
        report.extra_episodes += len(new_trajs)
        report.guided += len(chosen)
        new_rewards = score(new_tasks, new_trajs)
        guided = {g for g, _ in chosen}
        still = [g for g in flat if g not in guided]
        for j, (g, _) in enumerate(chosen):
            part = slice(j * group_size, (j + 1) * group_size)
            old = slice(g * group_size, (g + 1) * group_size)
            # the calls the loop made (it leaves the model one generation of max_turns), not those asked for
            report.guided_calls.append(max(int(t.metadata.get("guided_calls", 0)) for t in new_trajs[part]))
            spread = group_spread(new_rewards[part], how)
            if spread > spreads[g]:  # the wider group takes the slot
                report.discarded.append((report.slot_rounds[g], tasks[old], trajs[old]))
                spreads[g], report.slot_rounds[g] = spread, round_
                tasks[old], trajs[old] = new_tasks[part], new_trajs[part]
                report.guided_kept += 1
            else:
                report.discarded.append((round_, new_tasks[part], new_trajs[part]))
            if spreads[g] < threshold:
                still.append(g)
        return sorted(still)


def silenced_rows(report: RefillReport, group_size: int, flat_groups: str) -> list[int]:
    """The batch rows ``flat_groups: drop`` silences: every episode of a slot that is still flat after the
    refill rounds (none with ``keep``). The rollout gives them an all-zero loss mask and flags them
    ``silenced`` for the reward functions (``toolkit.rewards.trl``), which return None for them."""
    if flat_groups == "keep":
        return []
    return [g * group_size + i for g in report.flat_slots for i in range(group_size)]


def tasks_per_step(grpo_config: Any) -> int:
    """Distinct tasks in one generation batch (all processes): ``generation_batch_size / num_generations``."""
    return int(grpo_config.generation_batch_size) // int(grpo_config.num_generations)


def task_order_and_refill(
    tasks: Sequence[Task], grpo_config: Any, sampling: SamplingConfig
) -> tuple[list[Task], DynamicSampling | None]:
    """GRPO's task list for ``sampling.order`` and the dynamic sampler (``None`` when off).

    ``stratified`` turns TRL's shuffle off (``grpo_config.shuffle_dataset``): the list is already in
    the order the steps should see, seeded by ``grpo_config.seed``."""
    seed = int(grpo_config.seed)
    tasks = list(tasks)
    if sampling.order == "stratified":
        tasks = stratified_order(tasks, tasks_per_step(grpo_config), seed, sampling.kind_weights)
        grpo_config.shuffle_dataset = False
    dynamic = None
    if sampling.dynamic:
        if int(getattr(grpo_config, "world_size", 1) or 1) > 1:
            raise ValueError(
                "grpo_sampling.min_spread (dynamic sampling) runs in one process: a group's episodes may be"
                " spread over processes, and each process would refill its part alone"
            )
        dynamic = DynamicSampling(tasks, sampling, seed)
    return tasks, dynamic


# ---- micro-batches of the update ---------------------------------------------------------------------
# TRL pads the whole generation batch to its longest prompt (left) and longest completion (right), shuffles
# the rows and cuts them into ``steps_per_generation`` micro-batches that keep that width. With several
# tasks a step, every micro-batch would then pay for the longest prompt of all tasks and the longest
# completion of all 32 episodes. The kit regroups the rows so that a micro-batch holds episodes of one
# task where it can (same prompt: no prompt padding), and cuts each micro-batch to its own length.
# Neither changes the gradient of the optimizer step: with loss_type "dapo" (the default) the loss is a
# sum over the step's tokens divided by the step's token count, whatever rows share a micro-batch, and
# the columns cut carry no loss and, being padding, no attention (RoPE scores depend on position
# differences only, so dropping left padding leaves them as they were).

PROMPT_KEYS = ("prompt_ids", "prompt_mask")


def _concat(values: list[Any]) -> Any:
    import torch

    first = values[0]
    if first is None or (isinstance(first, torch.Tensor) and first.ndim == 0):
        return first
    if isinstance(first, torch.Tensor):
        return torch.cat(values)
    return [x for v in values for x in v]


def _take(value: Any, index: list[int]) -> Any:
    import torch

    if value is None or (isinstance(value, torch.Tensor) and value.ndim == 0):
        return value
    if isinstance(value, torch.Tensor):
        return value[torch.tensor(index, dtype=torch.long)]
    return [value[i] for i in index]


def trim_padding(batch: dict[str, Any]) -> dict[str, Any]:
    """One micro-batch cut to its own length: prompt columns that are padding in every row (left) and
    completion columns that are padding in every row (right) dropped from every per-token tensor."""
    import torch

    prompt_mask, completion_mask = batch["prompt_mask"], batch["completion_mask"]
    width_p, width_c = prompt_mask.size(1), completion_mask.size(1)
    used_p = torch.nonzero(prompt_mask.sum(0)).flatten()
    used_c = torch.nonzero(completion_mask.sum(0)).flatten()
    start = int(used_p[0]) if len(used_p) else width_p
    end = int(used_c[-1]) + 1 if len(used_c) else 1  # keep one column: TRL's shapes stay valid
    out = {}
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.ndim == 2:
            if key in PROMPT_KEYS:
                value = value[:, start:]
            elif value.size(1) == width_c:
                value = value[:, :end]
        out[key] = value
    return out


def regroup_micro_batches(batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The micro-batches of one generation batch, rows regrouped by prompt (then completion length) and
    each cut to its own length (``trim_padding``); the same number of micro-batches of the same size."""
    if not batches or any(key not in batches[0] for key in (*PROMPT_KEYS, "completion_mask")):
        return batches
    whole = {key: _concat([b[key] for b in batches]) for key in batches[0]}
    prompt_ids, prompt_mask = whole["prompt_ids"], whole["prompt_mask"]
    lengths = whole["completion_mask"].sum(1).tolist()
    first_seen: dict[tuple[int, ...], int] = {}
    keys = []
    for i in range(prompt_ids.size(0)):
        prompt = tuple(prompt_ids[i][prompt_mask[i].bool()].tolist())
        keys.append((first_seen.setdefault(prompt, len(first_seen)), lengths[i], i))
    order = [i for _, _, i in sorted(keys)]
    size = prompt_ids.size(0) // len(batches)
    return [
        trim_padding({key: _take(value, order[j * size : (j + 1) * size]) for key, value in whole.items()})
        for j in range(len(batches))
    ]


def shared_prefix_logps(
    model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, compute_entropy: bool = False
) -> tuple[Any, Any] | None:
    """Per-token log-probabilities (and entropies) of the completions of a micro-batch whose rows share
    one unpadded prompt, with the prompt run once instead of once per row; ``None`` when they do not.

    The prompt (all but its last token) goes through the model once with a KV cache; the cache is
    repeated for every row and the rows' last prompt token and completions run on top of it, through
    TRL's fused LM head (``fused_lm_head=True``: the temperature and the entropy as TRL computes them).
    Gradients reach the prompt's forward through the cache, so the update is the one the full forward
    gives. Gradient checkpointing is off for these two forwards: a checkpointed model drops its cache
    (transformers' ``GradientCheckpointingLayer`` and ``use_cache`` check), and the activations kept are the prompt's once plus the rows'
    completions, less than the checkpointed full rows' recomputation saves."""
    import torch

    rows, width = input_ids.shape
    prompt_len = width - logits_to_keep
    if rows < 2 or prompt_len < 2:
        return None
    prompt = input_ids[:, :prompt_len]
    if not bool(attention_mask[:, :prompt_len].all()) or not bool((prompt == prompt[:1]).all()):
        return None
    # the layers (GradientCheckpointingLayer) and the backbone (its use_cache check) carry the flag
    checkpointed = [m for m in model.modules() if getattr(m, "gradient_checkpointing", None) is True]
    for layer in checkpointed:
        layer.gradient_checkpointing = False
    try:
        head = model(input_ids=prompt[:1, :-1], use_cache=True, logits_to_keep=1)
        cache = head.past_key_values
        cache.batch_repeat_interleave(rows)
        tail = input_ids[:, prompt_len - 1 :]
        labels = tail.masked_fill(attention_mask[:, prompt_len - 1 :] == 0, -100)
        positions = torch.arange(prompt_len - 1, width, device=input_ids.device).expand(rows, -1)
        out = model(
            input_ids=tail,
            attention_mask=attention_mask,
            past_key_values=cache,
            position_ids=positions,
            labels=labels,
            fused_lm_head=True,
        )
    finally:
        for layer in checkpointed:
            layer.gradient_checkpointing = True
    logps = out.log_probs[:, -logits_to_keep:]
    entropies = out.entropy[:, -logits_to_keep:] if compute_entropy else None
    return logps, entropies
