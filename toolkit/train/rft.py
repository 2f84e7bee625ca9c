"""A round of rejection-sampling fine-tuning (RFT) between the warm start and GRPO (recipe section ``rft``,
off by default; issue 49's lever "the model's own right-and-short episodes before GRPO").

Why: GRPO sharpens what the warm start already samples right sometimes; it does not widen it (runs
19-33: pass@8 0.420 -> 0.435). Rejection sampling (STaR, RAFT, ReST's "grow" step, Llama 2's
rejection-sampling fine-tuning) moves the policy towards its own best samples before RL: every train
task is sampled ``num_generations`` times with the warm start through the same agent loop GRPO uses,
the episodes that are right (and, among those, the shortest) are kept, and the warm-start adapter is
fine-tuned on them with the warm start's masked SFT. GRPO then starts from that adapter.

What counts as right (``correct_by``): ``pass``, the headline rule of the evaluation (pass@0.75 with
issue 48's answer check, ``toolkit.eval.metrics.task_passed``, graded with the suite's rubric as the dev
set is), or ``answer``, every essential ``answer_correctness`` item passes (``episodes/answer_correct``'s
rule). Whatever the rule, an episode is kept only when it ended with a reply (finish, or a turn without
a call: not cut by the token or turn cap, no error) and, unless ``keep_failed_calls``, made no call that
failed: training on a malformed call would teach it. Among a task's right episodes the shortest come
first (``shortest_by``: tool calls, then model tokens; or model tokens, then calls), identical episodes
count once, and at most ``max_per_task`` are kept.

The examples are the episodes' own tokens (``toolkit.train.sft.episode_rows``): the prompt and the
environment's tokens as the sampler rendered them, loss on the tokens the model sampled (the loop's
``completion_mask``), so the round trains exactly the text the model produced, in the context it saw,
with the warm start's trainer and loss (``run_sft``). The warm start's rows are the gold episodes
rendered with TRL's training template instead, which does not reproduce sampled turns exactly: its
assistant spans carry whitespace a sampler never generates (a newline before a call turn with no text,
the newline after the end-of-turn token), and it writes each call in one canonical form where a model
may write it its own way (spacing, key order). Training on the sampled tokens avoids both;
``template_differs`` in the summary counts the kept episodes whose turns the template would write
otherwise beyond that whitespace (``toolkit.train.sft.template_reproduces``).

Stage outputs (``toolkit.runs.RunFolder``): ``rft/samples.jsonl`` (every sampled episode, each with
``metadata["rft"]``: its sample index and whether it was right and kept; read back, and judged again,
on resume; while the round samples, ``rft/sample-parts/`` keeps it 32 tasks at a time, so that a killed
round goes on from its last part), ``rft/checkpoint-N`` and ``rft/adapter`` (the marker of the stage)."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from toolkit.records import FINISH_TOOL, Task, Trajectory, read_jsonl, write_jsonl

CORRECT_BY = ("pass", "answer")
SHORTEST_BY = ("calls", "tokens")
IF_NONE_KEPT = ("error", "skip")
REPLIED = ("finish", "no_tool_call")  # the episode ended with a reply (toolkit.rewards.finished.REPLIED)


@dataclass(frozen=True)
class RftConfig:
    """The ``rft`` section's own keys (every other key of the section is a ``trl.SFTConfig`` field for
    the round's training: ``toolkit.train.config.rft_training_section``)."""

    num_generations: int = 0
    """Episodes sampled per task (TRL's name for GRPO's group size); 0: no RFT round."""
    temperature: float | None = None
    """Sampling temperature; None: the ``rollout`` section's (the temperature GRPO samples at)."""
    max_tasks: int | None = None
    """Sample the first ``max_tasks`` train tasks; None: every train task."""
    max_per_task: int = 1
    """Right episodes kept per task at most (the shortest; identical episodes count once)."""
    correct_by: str = "pass"
    """``pass``: the evaluation's pass@0.75 with the answer check; ``answer``: every essential answer
    item passes."""
    shortest_by: str = "calls"
    """``calls``: fewest tool calls first, then fewest model tokens; ``tokens``: the other way round."""
    keep_failed_calls: bool = False
    """Keep right episodes with a failed call (a retry that recovered); off: such episodes are not kept."""
    keep_no_call: bool = True
    """Keep right episodes that made no tool call (abstains, clarifications); off: only episodes with a
    call are kept. The only no-call episodes the rounds in docs/cpu-proof kept were abstains, and after
    them the model answered tasks that need a call without one (the claim's ``no_call_when_needed``)."""
    keep_no_call_if_gold_has_none: bool = False
    """With ``keep_no_call`` off, still keep right no-call episodes of tasks whose gold makes no call
    (abstains, clarifications). Without them the round keeps nothing of those tasks and teaches calling
    everywhere: the claim's three GRPO seeds lost 12-18 of test seed 3101's 21 abstains
    (docs/cpu-proof/README.md, "The claim"). On dev set 2 (one seed, "Dev set 2") it kept them (1 -> 6 of
    10 against the rule without it) but brought back answers without a needed call (0.077 -> 0.157): off
    in every shipped recipe."""
    if_none_kept: str = "error"
    """No episode kept: ``error`` stops the run; ``skip`` says so and GRPO starts from the warm start
    (from the last round that trained, when a later round keeps nothing)."""
    rounds: int = 1
    """Rounds of sampling and fine-tuning. Round k >= 2 samples the same tasks with round k-1's adapter
    (the rollout seed + ``ROUND_SEED_STRIDE`` x (k-1), so it does not replay the first round's random
    stream), keeps by the same rules, and fine-tunes that adapter further into ``rft-<k>/adapter``; GRPO
    starts from the last round's. Measured on dev set 2 (docs/cpu-proof/README.md, "Second rounds"): a
    second round added where the rounds keep the abstains, not where they keep no no-call episode."""

    @property
    def on(self) -> bool:
        return self.num_generations > 0

    @classmethod
    def kit_keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_section(cls, section: dict[str, Any] | None) -> RftConfig:
        """The kit's keys of a recipe's ``rft`` section, checked (ValueError naming the key)."""
        values = {k: v for k, v in (section or {}).items() if k in cls.kit_keys()}
        config = cls(**values)
        config.check()
        return config

    def check(self) -> None:
        def integer(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        def number(value: Any) -> bool:
            return isinstance(value, (int, float)) and not isinstance(value, bool)

        if not integer(self.num_generations) or self.num_generations < 0:
            raise ValueError(
                f"rft.num_generations must be 0 (off) or a positive integer, got {self.num_generations!r}"
            )
        if self.temperature is not None and (not number(self.temperature) or self.temperature < 0):
            raise ValueError(f"rft.temperature must be a number >= 0, got {self.temperature!r}")
        if self.temperature == 0 and self.num_generations > 1:
            raise ValueError(
                "rft.temperature 0 samples the same episode every time: use num_generations: 1, or a temperature"
            )
        if self.max_tasks is not None and (not integer(self.max_tasks) or self.max_tasks < 1):
            raise ValueError(f"rft.max_tasks must be a positive integer, got {self.max_tasks!r}")
        if not integer(self.rounds) or self.rounds < 1:
            raise ValueError(f"rft.rounds must be a positive integer, got {self.rounds!r}")
        if not integer(self.max_per_task) or self.max_per_task < 1:
            raise ValueError(f"rft.max_per_task must be a positive integer, got {self.max_per_task!r}")
        for key, allowed in (
            ("correct_by", CORRECT_BY),
            ("shortest_by", SHORTEST_BY),
            ("if_none_kept", IF_NONE_KEPT),
        ):
            if getattr(self, key) not in allowed:
                raise ValueError(f"rft.{key} must be one of {', '.join(allowed)}, got {getattr(self, key)!r}")
        for key in ("keep_failed_calls", "keep_no_call", "keep_no_call_if_gold_has_none"):
            if not isinstance(getattr(self, key), bool):
                raise ValueError(f"rft.{key} must be true or false, got {getattr(self, key)!r}")


def n_calls(traj: Trajectory) -> int:
    """Tool calls of an episode, its ``finish`` call not counted (as the evaluation counts them)."""
    return sum(c.name != FINISH_TOOL for c in traj.calls)


def model_tokens(traj: Trajectory) -> int:
    """Tokens the model sampled in the episode (its stop tokens included)."""
    if traj.completion_mask:
        return sum(traj.completion_mask)
    return int(traj.metadata.get("model_tokens") or 0)


def replied(traj: Trajectory) -> bool:
    """The episode ended with a reply: a finish call or a turn without a call (not a cap, not an error)."""
    return traj.stop_reason in REPLIED


def length_key(traj: Trajectory, shortest_by: str) -> tuple[int, int]:
    calls, tokens = n_calls(traj), model_tokens(traj)
    return (calls, tokens) if shortest_by == "calls" else (tokens, calls)


def same_episode_key(traj: Trajectory) -> tuple[Any, ...]:
    """Two samples that are the same episode: the same sampled tokens (or, message-level, the same turns,
    calls and answer)."""
    if traj.completion_ids:
        return tuple(traj.completion_ids)
    turns = [m.get("raw", m.get("content")) for m in traj.messages if m.get("role") == "assistant"]
    calls = [(c.name, c.turn, c.step) for c in traj.calls]
    return (
        json.dumps(
            [turns, calls, [c.args for c in traj.calls], traj.final_answer], sort_keys=True, default=str
        ),
    )


def right_check(correct_by: str) -> Callable[[Task, Trajectory], bool]:
    """``(task, episode) -> right``: ``pass``, the evaluation's headline rule (``task_passed`` on the
    result the suite's primary reward grades: the rubric, BFCL's checker for BFCL tasks); ``answer``,
    every essential ``answer_correctness`` item passes (a task without one is never right)."""
    if correct_by == "answer":
        from toolkit.rewards.rubric import answer_reward

        reward = answer_reward()

        def answer_right(task: Task, traj: Trajectory) -> bool:
            result = reward(task, traj)
            return not result.details.get("unscorable") and result.score >= 1.0 - 1e-9

        return answer_right
    import dataclasses

    from toolkit.eval.metrics import task_passed
    from toolkit.eval.suites import default_scorers, get_suite, task_result

    suites: dict[str, Any] = {}

    def graded_by(task: Task) -> tuple[Any, Any]:
        """The suite the run's evaluation grades ``task`` with (``run_eval.evaluate_policy``), its primary
        reward only (which decides a pass), built once."""
        name = "bfcl-base" if "bfcl" in task.metadata else "kit-eval"
        if name not in suites:
            suite = get_suite(name)
            suite = dataclasses.replace(suite, rewards=suite.rewards[:1])
            suites[name] = (suite, default_scorers(suite))
        return suites[name]

    def passes(task: Task, traj: Trajectory) -> bool:
        suite, scorers = graded_by(task)
        result = task_result(suite, task, traj, scorers)
        return result.error is None and task_passed(result)

    return passes


COUNT_KEYS = ("tasks", "sampled", "replied", "right", "kept", "tasks_kept")


@dataclass
class RftKeep:
    """What the round kept: the episodes to train on (task by task) and, per task kind, the tasks and
    episodes sampled, the episodes that ended with a reply, those right, those kept, and the tasks with
    at least one kept episode."""

    kept: list[Trajectory] = field(default_factory=list)
    kinds: dict[str, Counter] = field(default_factory=dict)

    def total(self, key: str) -> int:
        return sum(c[key] for c in self.kinds.values())

    def summary(self) -> dict[str, Any]:
        """``summary.json``'s ``rft`` (the stage adds ``examples``, ``template_differs`` and ``steps``)."""
        return {
            **{key: self.total(key) for key in COUNT_KEYS},
            "by_kind": {k: {key: int(c[key]) for key in COUNT_KEYS} for k, c in sorted(self.kinds.items())},
        }

    def line(self) -> str:
        parts = [f"{k} {c['kept']}/{c['right']}/{c['sampled']}" for k, c in sorted(self.kinds.items())]
        return (
            f"kept {self.total('kept')} episodes of {self.total('right')} right of {self.total('sampled')}"
            f" sampled ({self.total('tasks_kept')} of {self.total('tasks')} tasks); per kind kept/right/"
            f"sampled: {', '.join(parts)}"
        )


def keep_episodes(
    tasks: Sequence[Task],
    trajs: Sequence[Trajectory],
    n: int,
    right: Callable[[Task, Trajectory], bool],
    config: RftConfig,
) -> RftKeep:
    """The keep rule: of each task's ``n`` episodes (``trajs`` task by task, as ``rollout`` returns them),
    those that ended with a reply, made no failed call (unless ``config.keep_failed_calls``), made a call
    (unless ``config.keep_no_call``, the default, or the task's gold makes none and
    ``config.keep_no_call_if_gold_has_none``) and are ``right``; the shortest first
    (``config.shortest_by``; ties: the earlier sample), an episode identical to one kept counting once,
    at most ``config.max_per_task``. A wrong episode is never kept. Each
    episode's ``metadata["rft"]`` says its sample index and whether it was right and kept."""
    if len(trajs) != len(tasks) * n:
        raise ValueError(f"RFT sampled {len(trajs)} episodes for {len(tasks)} tasks x {n}")
    keep = RftKeep()
    for i, task in enumerate(tasks):
        kind = str(task.metadata.get("kind") or "task")
        counts = keep.kinds.setdefault(kind, Counter(dict.fromkeys(COUNT_KEYS, 0)))
        counts["tasks"] += 1
        eligible = []
        for j, traj in enumerate(trajs[i * n : (i + 1) * n]):
            if traj.task_id != task.id:
                raise ValueError(f"RFT episode {i * n + j} is of task {traj.task_id}, expected {task.id}")
            ended = replied(traj)
            is_right = ended and right(task, traj)
            traj.metadata["rft"] = {"sample": j, "right": is_right, "kept": False}
            counts.update(sampled=1, replied=int(ended), right=int(is_right))
            if (
                is_right
                and (config.keep_failed_calls or all(c.ok for c in traj.calls))
                and (
                    config.keep_no_call
                    or n_calls(traj) > 0
                    or (config.keep_no_call_if_gold_has_none and not task.gold)
                )
            ):
                eligible.append((length_key(traj, config.shortest_by), j, traj))
        seen: set[tuple[Any, ...]] = set()
        chosen = []
        for _, _, traj in sorted(eligible, key=lambda e: (e[0], e[1])):
            key = same_episode_key(traj)
            if key in seen or len(chosen) >= config.max_per_task:
                continue
            seen.add(key)
            traj.metadata["rft"]["kept"] = True
            chosen.append(traj)
        counts.update(kept=len(chosen), tasks_kept=int(bool(chosen)))
        keep.kept.extend(chosen)
    return keep


def rft_tasks(tasks: Sequence[Task], config: RftConfig) -> list[Task]:
    """The train tasks the round samples: the first ``max_tasks`` (all without it)."""
    return list(tasks[: config.max_tasks] if config.max_tasks else tasks)


def last_round_adapter(folder: Any, section: dict[str, Any] | None) -> Path:
    """Where a run folder's (``toolkit.runs.RunFolder``) last RFT round of the recipe's ``rft`` section
    leaves its adapter: what GRPO starts from, and what a run stopped after the rounds made."""
    return folder.rft_round(RftConfig.from_section(section).rounds).adapter


def round_summaries(summary: dict[str, Any]) -> dict[str, Any]:
    """A run summary's RFT rounds: ``rft`` (the first, ``{}`` without one) and ``rft-<k>`` for each later."""
    return {"rft": summary.get("rft") or {}, **{k: v for k, v in summary.items() if k.startswith("rft-")}}


# round k samples from the rollout seed + 100 (k-1): its parts' seeds (seed + part) stay apart
ROUND_SEED_STRIDE = 100


def rft_loop(loop: Any, config: RftConfig, round_k: int = 1) -> Any:
    """GRPO's agent loop, at the round's temperature when it sets one; a seeded loop's seed moved on by
    ``ROUND_SEED_STRIDE`` for each round after the first."""
    import dataclasses

    if config.temperature is not None:
        loop = dataclasses.replace(loop, temperature=float(config.temperature))
    if round_k > 1 and loop.seed is not None:
        loop = dataclasses.replace(loop, seed=loop.seed + ROUND_SEED_STRIDE * (round_k - 1))
    return loop


def write_samples(path: Path, trajs: Sequence[Trajectory]) -> None:
    """Every sampled episode, written whole or not at all (a resumed round reads the file back)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    write_jsonl(tmp, trajs)
    os.replace(tmp, path)


def read_samples(path: Path, tasks: Sequence[Task], n: int) -> list[Trajectory]:
    """The episodes ``write_samples`` wrote, checked to be ``n`` per task of ``tasks``, in their order."""
    trajs = read_jsonl(path, Trajectory)
    expected = [t.id for t in tasks for _ in range(n)]
    if [t.task_id for t in trajs] != expected:
        raise ValueError(
            f"{path}: {len(trajs)} episodes that are not {n} per task of the round's {len(tasks)} tasks"
            " (written with other rft settings?); delete it to sample again"
        )
    return trajs


SAMPLE_CHUNK_TASKS = 32  # tasks sampled per kept part: a killed round loses at most one part's episodes


def sample_in_parts(
    sample: Callable[[list[Task], Any], list[Trajectory]],
    tasks: Sequence[Task],
    n: int,
    loop: Any,
    parts: Path,
    say: Callable[[str], None] = print,
    chunk: int = SAMPLE_CHUNK_TASKS,
) -> list[Trajectory]:
    """Every task sampled ``n`` times, ``chunk`` tasks at a time, each part written whole into ``parts``
    (``part-0000.jsonl``, ...) as soon as it is sampled and read back instead of sampled again: a round
    of hundreds of episodes (40 minutes on two cores) goes on where it was killed. ``sample(tasks, loop)``
    returns their episodes task by task; a seeded loop gets ``seed + part`` for each part, so parts do not
    repeat one random stream and a resumed part starts from the seed an uninterrupted round gives it."""
    import dataclasses

    tasks = list(tasks)
    trajs: list[Trajectory] = []
    starts = range(0, len(tasks), chunk)
    for k, start in enumerate(starts):
        part_tasks, part = tasks[start : start + chunk], parts / f"part-{k:04d}.jsonl"
        if part.exists():
            trajs += read_samples(part, part_tasks, n)
            say(f"RFT: part {k + 1}/{len(starts)} read back from {part}")
            continue
        part_loop = loop if loop.seed is None else dataclasses.replace(loop, seed=loop.seed + k)
        say(f"RFT: part {k + 1}/{len(starts)}: tasks {start + 1}-{start + len(part_tasks)} of {len(tasks)}")
        got = sample(part_tasks, part_loop)
        parts.mkdir(parents=True, exist_ok=True)
        write_samples(part, got)
        trajs += got
    return trajs


def wait_for(path: Path, poll_s: float = 5.0) -> None:
    """Wait until ``path`` exists (another process writes it: the main process samples for all)."""
    import time

    while not path.exists():
        time.sleep(poll_s)
