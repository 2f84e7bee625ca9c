"""One GRPO step, top to bottom, and the trainer that runs it.

TRL's GRPOTrainer owns the loop, the advantages, the loss (clipped ratio, KL to the reference,
``mask_truncated_completions``, several iterations) and the optimiser. The kit's part of each step is
``GRPOStep``, read in the order it happens; TRL calls into it through ``toolkit.train.trl_adapter``, the
only place that knows TRL's hooks:

1. **tasks**: the generation batch's dataset rows become ``Task`` records once, at the adapter's seam
   (``num_generations`` consecutive rows per task: a group).
2. **sample** (``GRPOStep.sample``): one episode of the kit's agent loop per row, with the policy the
   backend syncs to the trainer's current weights.
3. **filter**: dynamic sampling swaps groups whose rewards barely differ for groups of other tasks;
   with ``grpo_sampling.guide_share`` a slot still flat where every episode failed gets one group of its
   task with its first gold calls made for the model (guidance, k at ``trainer.state.global_step``:
   ``SamplingConfig.guide_share_at``), which takes the slot when it spreads wider; with
   ``flat_groups: drop`` the groups still flat are silenced (no reward, no loss tokens).
4. **score**: TRL calls the kit's rewards (``toolkit.rewards.trl``) on the Tasks and Trajectories the
   sample handed it; failed and silenced episodes get None, so they stay out of their group's baseline.
5. **advantages**: TRL's (group mean and std; an episode without reward gets advantage 0).
   ``GRPOStep.scored`` reads the totals back per task kind.
6. **update**: TRL's loss on micro-batches the kit lays out (``GRPOStep.micro_batches``: regrouped by
   task and cut to their own length; a shared prompt run once with ``shared_prefix``).
7. **log**: ``episodes/``, ``guided/``, ``batch/``, ``dynamic/`` and ``kinds/`` metrics beside TRL's, and
   every sampled episode in the run's rollout log (``RunFolder.rollouts_file``, with its ``guided_calls``).
   ``episodes/`` measures the policy: its own episodes only, guided ones left out (``episodes/sampled``
   alone counts them too); ``guided/`` the same metrics over the guided episodes, which made the first
   calls for the model and so say nothing of what it does alone. TRL's ``reward`` and ``kinds/`` describe
   the batch the update learns from, guided groups that took a slot included.

``build_grpo_trainer`` assembles the step and the trainer; the metrics file and the LoRA reference
refresh are callbacks (``toolkit.train.callbacks``).
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from toolkit.records import RolloutRecord, Task, Trajectory


@dataclasses.dataclass
class Rollout:
    """What one generation batch's sampling produced (steps 2-3): the batch the update learns from, and
    what was measured about every episode sampled for it."""

    tasks: list[Task]  # one per episode, a group's episodes consecutive (after dynamic sampling)
    trajs: list[Trajectory]
    silenced: set[int]  # rows that teach nothing (flat_groups: drop): no loss tokens, no reward
    metrics: dict[str, float]


class GRPOStep:
    """The kit's side of a GRPO step: its settings, and the state of the generation batch in flight (the one
    object the trainer carries for the kit: ``trainer.kit_step``).

    Args:
        loop_config: a ``toolkit.agent.loop.RolloutConfig`` (budgets, temperature, finish tool).
        policy_factory: ``trainer -> Policy``, called once per generation batch; defaults to
            transformers generation with the trained model. The backends pass theirs (vLLM, Unsloth).
        open_episode: override the environment opener (tests).
        rollout_log: JSONL file that gets every sampled episode of every step appended (step, task,
            messages, calls, stop reason, ``round``: 0 for the first sampling, r for refill round r (the
            guided round is the one after the last refill round), and
            ``kept``: whether its group went into the update, i.e. was neither replaced nor silenced, and
            ``guided_calls``: the gold calls made for the model, 0 unless guided).
        dynamic: a ``toolkit.train.batching.DynamicSampling`` (step 3), or None.
        shared_prefix: ``grpo_sampling.shared_prefix_update`` (step 6).
    """

    def __init__(
        self,
        loop_config: Any,
        policy_factory: Callable[[Any], Any] | None = None,
        *,
        open_episode: Any = None,
        rollout_log: str | Path | None = None,
        dynamic: Any = None,
        shared_prefix: bool = False,
    ):
        from toolkit.train.rollout import RolloutLog, transformers_policy

        self.loop_config = loop_config
        self.policy_factory = policy_factory or transformers_policy
        self.open_episode = open_episode
        self.log = RolloutLog(rollout_log) if rollout_log is not None else None
        self.dynamic = dynamic
        self.regroup = True  # micro-batches by task, cut to length (bench_grpo_step turns it off to compare)
        self.shared_prefix = shared_prefix
        # the batch in flight
        self.tasks: list[Task] | None = None  # its rows as Tasks, set at the seam (trl_adapter)
        self.scored_step: int | None = None  # the global step TRL scored the buffered batch at

    # -- 2-3. sample the groups, filter them ---------------------------------------------------------------

    def sample(self, tasks: list[Task], trainer: Any) -> Rollout:
        """One episode per task (each task ``num_generations`` times), flat groups replaced or silenced.

        Rows that must teach nothing get an all-zero ``env_mask`` (out of TRL's loss and its normaliser) and,
        through the reward functions, no reward (out of the group mean and the std, advantage 0): episodes
        whose sampler or environment failed (``rollout.token_sample``), and with ``flat_groups: drop`` the
        slots still flat after dynamic sampling's refill rounds. More than half of a rollout failing on the
        policy endpoint raises (``rollout.raise_on_dead_sampler``)."""
        from toolkit.train.batching import silenced_rows, trainer_scorer

        group = trainer.num_generations
        policy = self.policy_factory(trainer)  # generates with the weights after the last optimizer step
        was_training = trainer.model.training
        trainer.model.eval()  # no dropout while sampling; TRL switches back for the update
        started = time.perf_counter()
        report = None
        say = self._progress(trainer)
        rounds = itertools.count(1)

        def refill(ts: list[Task], guide: list[int] | None = None) -> list[Trajectory]:
            t0 = time.perf_counter()
            out = self._episodes(ts, policy, guide)
            what = "guided" if guide is not None else f"refill round {next(rounds)}:"
            groups = len(ts) // group
            took = time.perf_counter() - t0
            say(f"{what} {len(out)} episodes ({groups} group{'s' * (groups != 1)}) in {took:.0f} s")
            return out

        try:
            trajs = self._episodes(tasks, policy)
            say(f"sampled {len(trajs)} episodes in {time.perf_counter() - started:.0f} s")
            if self.dynamic is not None:
                # a group whose rewards barely differ has (near) zero advantage: sample other tasks instead
                score = trainer_scorer(trainer, self.dynamic.config.spread_on)
                tasks, trajs, report = self.dynamic.resample(
                    tasks,
                    trajs,
                    group,
                    run=refill,
                    score=score,
                    guide_share=self.dynamic.config.guide_share_at(trainer.state.global_step),
                )
        finally:
            trainer.model.train(was_training)
        silenced = set(silenced_rows(report, group, self.dynamic.config.flat_groups)) if report else set()
        rollout = Rollout(tasks, trajs, silenced, {})
        rollout.metrics = self._measure(rollout, report, trainer, time.perf_counter() - started)
        say(f"updating on {len(trajs) - len(silenced)} of {len(trajs)} episodes")
        return rollout

    @staticmethod
    def _progress(trainer: Any) -> Callable[[str], None]:
        """Lines inside a step (``grpo step 3/8: sampled 32 episodes in 95 s``): a CPU step is minutes of
        sampling, refill rounds and the update, and the step's own line comes only at its end."""
        state = trainer.state
        where = f"grpo step {state.global_step + 1}/{state.max_steps}:"

        def say(line: str) -> None:
            if state.is_world_process_zero:
                print(where, line, flush=True)

        return say

    def _episodes(self, tasks: list[Task], policy: Any, guide: list[int] | None = None) -> list[Trajectory]:
        from toolkit.agent.loop import rollout
        from toolkit.train.rollout import raise_on_dead_sampler

        trajs = rollout(
            tasks, policy, self.loop_config, n=1, open_episode=self.open_episode, guide_calls=guide
        )
        raise_on_dead_sampler(trajs)
        return trajs

    # -- 4-5. scored: TRL has the rewards and the advantages -----------------------------------------------

    def scored(self, kinds: Sequence[str], totals: Sequence[float], group: int) -> dict[str, float]:
        """Per task kind, the batch's share, reward mean and zero-variance groups
        (``toolkit.train.diagnostics.kind_diagnostics``): which kinds feed the update."""
        from toolkit.train.diagnostics import kind_diagnostics

        return kind_diagnostics(kinds, totals, group)

    # -- 6. the update's micro-batches ---------------------------------------------------------------------

    def micro_batches(self, batches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The scored generation batch's micro-batches regrouped by task and cut to their own length
        (``toolkit.train.batching.regroup_micro_batches``): the same gradient, fewer padded tokens."""
        from toolkit.train.batching import regroup_micro_batches

        return regroup_micro_batches(batches) if self.regroup else batches

    # -- 7. measure and log what was sampled ---------------------------------------------------------------

    def _measure(self, rollout: Rollout, report: Any, trainer: Any, seconds: float) -> dict[str, float]:
        """The ``episodes/...`` metrics and the rollout log cover every episode the policy sampled in the
        step, the groups dynamic sampling replaced included (``episodes/sampled`` of them; with dynamic
        sampling also their reward, ``episodes/reward_*``, since TRL's ``reward`` covers the kept rows only).
        Guided episodes are left out of ``episodes/...`` (but counted in ``episodes/sampled``) and measured
        alone as ``guided/...``. ``batch/...`` and ``dynamic/...`` describe the batch TRL scores."""
        from toolkit.agent.loop import guided_calls
        from toolkit.train.batching import batch_mix_metrics, task_kind, trainer_scorer
        from toolkit.train.rollout import logprobs_missing_share

        group = trainer.num_generations
        # every sampled episode: the batch's (kept unless silenced), then the groups that lost their slot
        sampled = [
            (task, traj, report.slot_rounds[i // group] if report else 0, i not in rollout.silenced)
            for i, (task, traj) in enumerate(zip(rollout.tasks, rollout.trajs, strict=True))
        ]
        for round_, ts, trs in report.discarded if report else []:
            sampled.extend((task, traj, round_, False) for task, traj in zip(ts, trs, strict=True))
        own = [(task, traj) for task, traj, _, _ in sampled if not guided_calls(traj)]
        guided = [(task, traj) for task, traj, _, _ in sampled if guided_calls(traj)]
        # without dynamic sampling TRL's reward covers every episode already
        scorer = trainer_scorer(trainer) if self.dynamic is not None else None
        metrics = _policy_metrics(own, scorer)
        metrics["episodes/sampled"] = float(len(sampled))
        metrics["episodes/logprobs_missing"] = logprobs_missing_share(rollout.trajs)
        metrics["episodes/rollout_seconds"] = seconds
        if guided:
            measured = _policy_metrics(guided, scorer)
            metrics.update({"guided/" + key.split("/", 1)[1]: value for key, value in measured.items()})
            metrics["guided/sampled"] = float(len(guided))
        if report is not None:
            metrics.update(report.metrics())
            metrics["dynamic/silenced_share"] = len(rollout.silenced) / max(1, len(rollout.trajs))
        kinds = [task_kind(t) for t in rollout.tasks]
        metrics.update(batch_mix_metrics(kinds, [t.id for t in rollout.tasks], group))
        if self.log is not None:
            step = trainer.state.global_step
            self.log.append(
                trainer, (RolloutRecord.from_trajectory(step, tr, rnd, kept) for _, tr, rnd, kept in sampled)
            )
        return metrics


def _policy_metrics(
    episodes: Sequence[tuple[Task, Trajectory]],
    scorer: Callable[[list[Task], list[Trajectory]], list[float]] | None,
) -> dict[str, float]:
    """``episodes/...`` over these episodes: what the loop did, the answer rate, and with a ``scorer`` the
    reward's mean and std."""
    from toolkit.train.diagnostics import answer_correct_share
    from toolkit.train.rollout import episode_metrics, reward_stats

    tasks, trajs = [task for task, _ in episodes], [traj for _, traj in episodes]
    metrics = episode_metrics(trajs)
    if scorer is not None and trajs:
        metrics.update(reward_stats(scorer(tasks, trajs)))
    answer_correct = answer_correct_share(tasks, trajs)
    if answer_correct is not None:
        metrics["episodes/answer_correct"] = answer_correct
    return metrics


def first_turn_only(task: Task) -> Task:
    """The task cut to its first user turn (Bespoke Labs trained on the first query of each example).
    BFCL tasks use their loader's version, which also cuts the checker's ground truth."""
    if not task.followups:
        return task
    if "bfcl" in task.metadata:
        from toolkit.synth.bfcl_tasks import first_turn_only as bfcl_first_turn_only

        return bfcl_first_turn_only(task)
    gold = [g for g in task.gold if g.turn == 0]
    return dataclasses.replace(task, followups=[], gold=gold)


def tasks_dataset(tasks: Sequence[Task]) -> Any:
    """Tasks as the dataset GRPOTrainer samples from (columns: prompt, task, id, kind, split)."""
    from toolkit.synth.dataset import tasks_to_dataset

    return tasks_to_dataset(tasks)


def peft_model_for_grpo(model: Any, lora_config: Any, adapter: str | Path | None = None) -> Any:
    """A trainable PEFT model: continue the warm-start adapter when given, else a fresh LoRA.

    Continuing the SFT adapter (rather than merging it and adding a new one) keeps one adapter to
    save; TRL then keeps a frozen copy of it as the reference model (adapter ``"ref"``), so the KL
    term pulls towards the warm-started policy, not towards the untrained base model.
    """
    from peft import PeftModel, get_peft_model

    if adapter is not None:
        return PeftModel.from_pretrained(model, str(adapter), is_trainable=True)
    return get_peft_model(model, lora_config)


def reward_funcs(name: str | Sequence[str], config: dict[str, Any] | None = None) -> list[Any]:
    """The recipe's reward as TRL reward functions (each reads the ``task`` and ``trajectory`` of a row).

    A list of names gives one function per reward; TRL sums them with ``grpo.reward_weights`` and logs
    each on its own. ``config`` is then keyed by reward name (``{"prove": {...}}``)."""
    from toolkit.rewards.base import get_reward
    from toolkit.rewards.trl import as_trl_reward_func

    if isinstance(name, str):
        return [as_trl_reward_func(get_reward(name, **(config or {})))]
    return [as_trl_reward_func(get_reward(n, **((config or {}).get(n) or {}))) for n in name]


def build_grpo_trainer(
    model: Any,
    tokenizer: Any,
    tasks: Sequence[Task],
    grpo_config: Any,
    loop_config: Any,
    *,
    reward: str | Sequence[str] = "rubric",
    reward_config: dict[str, Any] | None = None,
    policy_factory: Any = None,
    callbacks: list[Any] | None = None,
    ref_sync: tuple[bool, int, float] = (False, 0, 1.0),
    open_episode: Any = None,
    sampler_correction: bool | None = None,
    sampling: Any = None,
    rollout_log: str | Path | None = None,
) -> Any:
    """A GRPO trainer running ``GRPOStep`` (``trainer.kit_step``), ready to ``train()``; ``model`` may be a
    plain or a PEFT model.

    ``sampler_correction``: the policy samples with another engine than the trainer's (vLLM), so TRL's
    truncated importance-sampling correction is applied (``toolkit.train.importance``). Default: the
    policy factory's ``samples_off_policy`` attribute (``VLLMLoraSync``, ``ServerLoraSync``).
    ``sampling``: the recipe's ``grpo_sampling`` section (``toolkit.train.batching.SamplingConfig`` or its
    dict): the order tasks are drawn in and dynamic sampling, seeded by ``grpo_config.seed``.
    ``rollout_log``: the file every sampled episode is appended to (a run's ``RunFolder.rollouts_file``);
    None keeps no log."""
    from toolkit.train.batching import SamplingConfig, task_order_and_refill
    from toolkit.train.callbacks import PeftRefSyncCallback, use_step_lines
    from toolkit.train.trl_adapter import enable_sampler_correction, grpo_trainer

    if not isinstance(sampling, SamplingConfig):
        sampling = SamplingConfig.from_recipe(sampling)
    tasks, dynamic = task_order_and_refill(tasks, grpo_config, sampling)
    step = GRPOStep(
        loop_config,
        policy_factory,
        open_episode=open_episode,
        rollout_log=rollout_log,
        dynamic=dynamic,
        shared_prefix=sampling.shared_prefix_update,
    )
    trainer = grpo_trainer(
        step,
        model=model,
        tokenizer=tokenizer,
        args=grpo_config,
        dataset=tasks_dataset(tasks),
        reward_funcs=reward_funcs(reward, reward_config),
        callbacks=callbacks,
    )
    use_step_lines(trainer, "grpo")  # one line per step, not TRL's raw dict of ~60 metrics
    if sampler_correction is None:
        sampler_correction = bool(getattr(policy_factory, "samples_off_policy", False))
    if sampler_correction:
        enable_sampler_correction(trainer)
    enabled, every, alpha = ref_sync
    if enabled and grpo_config.beta > 0:
        trainer.add_callback(PeftRefSyncCallback(every, alpha, trainer.accelerator))
    return trainer
