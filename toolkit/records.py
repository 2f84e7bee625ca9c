"""The records that flow between the parts of the kit: tasks, rubric items, trajectories, and the rows of
the files a run leaves (the rollout log, the prescreen pool, metrics, sampled and MCP-Atlas results).

Plain dataclasses that round-trip through JSON. Every module (envs, synth, rewards, agent, train,
eval) speaks these; nothing else crosses a package boundary. Every JSONL file is read through
``iter_json_objects`` (``read_jsonl`` / ``iter_jsonl`` for typed records) and written by ``write_jsonl``.

Rubric check specs (``RubricItem.check``) are plain dicts with a ``type`` key. The types, and what
the programmatic grader in ``toolkit.rewards`` does with them:

- ``{"type": "tool_called", "tools": [names], "min_times": 1}``
  passes when the trajectory has at least ``min_times`` successful calls to any of ``tools``
  (alternatives are allowed: e.g. ``get_ticket`` or ``search_tickets``).
- ``{"type": "tool_args", "tools": [names], "args": {key: value}, "normalize": {key: rule}}``
  passes when some successful call to one of ``tools`` has every listed argument equal to the
  value after normalisation (rules below; default ``"exact"``).
- ``{"type": "answer", "value": v, "normalize": rule, "tolerance": 0.0}``
  passes when the final answer contains ``v`` after normalisation.
- ``{"type": "state", "collection": c, "key": k, "field": f | None, "value": v | None, "op": op}``
  passes when the episode's state diff shows the change: ``op`` is ``"create"``, ``"update"`` or
  ``"delete"``; with ``field``/``value`` the new record must hold that value.
- ``{"type": "order", "first": [names], "then": [names]}``
  passes when a successful call to ``first`` precedes a successful call to ``then``.
- ``{"type": "no_tool_calls"}`` passes when the model made no tool calls (abstention tasks).
- ``{"type": "no_state_change"}`` passes when the state diff is empty.
- ``{"type": "clarification"}`` passes when the model asked the user for the missing information
  (final answer is a question, no write calls made).

Normalisation rules: ``"exact"``, ``"text"`` (case- and whitespace-insensitive), ``"number"``
(parse numbers, compare within ``tolerance``, percentages as numbers), ``"date"`` (ISO date, any
common format), ``"name"`` (case-insensitive, punctuation-insensitive, either order of names).

State diffs: a world state is ``{collection: {key: record_dict}}``; a diff is
``{"collection/key": {"before": record | None, "after": record | None}}`` for every record that
differs (created: before None; deleted: after None).
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

RUBRIC_CATEGORIES = ("tool_selection", "query_construction", "multi_step_planning", "answer_correctness")
STOP_REASONS = ("finish", "no_tool_call", "max_turns", "length", "error")
FINISH_TOOL = "finish"  # the loop's own tool: finish(answer: str) ends the episode explicitly

Category = Literal["tool_selection", "query_construction", "multi_step_planning", "answer_correctness"]
StopReason = Literal["finish", "no_tool_call", "max_turns", "length", "error"]


class RecordError(ValueError):
    """A record file or dict that does not match the schema; the message names file and line."""


@dataclass
class RubricItem:
    id: str
    text: str
    category: Category
    essential: bool = True
    check: dict[str, Any] = field(default_factory=dict)


@dataclass
class GoldCall:
    """One step of a gold trajectory. ``depends_on`` lists indices of earlier steps whose outputs
    this step consumes; ``turn`` is the user turn it belongs to (multi-turn tasks such as BFCL)."""

    name: str
    arguments: dict[str, Any]
    depends_on: list[int] = field(default_factory=list)
    turn: int = 0


@dataclass
class Task:
    id: str
    split: str  # "train" | "eval"
    prompt: str  # the first user message
    servers: list[str]  # enabled servers (needed + distractors)
    tools: list[str]  # enabled tool names (needed + distractors), unique within the episode
    seed: int  # world seed
    gold: list[GoldCall] = field(default_factory=list)
    answers: dict[str, Any] = field(default_factory=dict)  # expected answer values computed from state
    rubric: list[RubricItem] = field(default_factory=list)
    # Later user turns (multi-turn tasks, e.g. BFCL): sent one at a time after each final answer.
    followups: list[str] = field(default_factory=list)
    # kind, template, chain_length, and per-source extras (e.g. metadata["bfcl"] = {id, initial_config,
    # involved_classes, missed_function: {turn: [names]}} for tools that appear only at a later turn).
    metadata: dict[str, Any] = field(default_factory=dict)
    # Where the servers that are not the kit's come from: how to start each one fresh per episode
    # (``toolkit.envs.recipe.ServerRecipe`` dicts: own, MCP-Atlas, npm or PyPI servers). Empty: the kit's.
    server_recipes: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        d = dict(d)
        d["gold"] = [GoldCall(**_checked(GoldCall, g)) for g in d.get("gold", [])]
        d["rubric"] = [RubricItem(**_checked(RubricItem, r)) for r in d.get("rubric", [])]
        return cls(**_checked(cls, d))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if not d["server_recipes"]:  # a task on the kit's servers is written as before, byte for byte
            del d["server_recipes"]
        return d


@dataclass
class CallRecord:
    """One tool call the model made, as executed (or refused) by the loop."""

    name: str
    args: dict[str, Any] | None  # None when the arguments could not be parsed
    ok: bool
    error: str | None = None  # error kind + message: unknown_tool, bad_json, schema, tool_error, timeout
    result: str | None = None  # tool output as shown to the model (after truncation)
    latency: float = 0.0
    turn: int = 0  # user turn index
    step: int = 0  # model generation index within the episode


@dataclass
class Trajectory:
    task_id: str
    messages: list[dict[str, Any]]  # OpenAI chat format with tool_calls / tool messages
    calls: list[CallRecord] = field(default_factory=list)
    final_answer: str = ""
    stop_reason: StopReason = "no_tool_call"
    # Training view (token-exact): prompt ids, then completion ids of everything after the prompt;
    # completion_mask: 1 = token sampled by the model, 0 = tool / environment / template token.
    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    completion_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)  # per completion token; 0.0 on env tokens
    state_diff: dict[str, Any] = field(default_factory=dict)
    turn_answers: list[str] = field(default_factory=list)  # final answer of each user turn
    n_parse_errors: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)  # policy, timings, token counts

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trajectory:
        d = dict(d)
        d["calls"] = [CallRecord(**_checked(CallRecord, c)) for c in d.get("calls", [])]
        return cls(**_checked(cls, d))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RewardResult:
    """What every reward returns: a score in the reward's documented range plus named components."""

    score: float
    breakdown: dict[str, float] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)  # per-item verdicts, ungraded counts, notes


class _Row:
    """``from_dict`` / ``to_dict`` for the flat rows of the logs and result files below."""

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        return cls(**_checked(cls, d))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass
class RolloutRecord:
    """One line of a GRPO run's rollout log (``grpo/rollouts.jsonl``): a sampled episode without its
    token ids and log-probabilities, with its step, the dynamic-sampling round it was sampled in,
    whether its group went into the update, and ``guided_calls``: how many of its first gold calls were
    made for the model (guidance, ``grpo_sampling.guide_share``; 0 in logs written before it). Read it
    back with ``iter_jsonl(path, RolloutRecord, torn_tail=True)`` (the log is appended while the run
    goes on)."""

    task_id: str
    stop_reason: StopReason
    final_answer: str | None
    calls: list[CallRecord]
    messages: list[dict[str, Any]]
    step: int = 0
    round: int = 0
    kept: bool = True
    n_parse_errors: int = 0
    guided_calls: int = 0

    @classmethod
    def from_trajectory(
        cls, step: int, traj: Trajectory, round_: int = 0, kept: bool = True
    ) -> RolloutRecord:
        return cls(
            task_id=traj.task_id,
            stop_reason=traj.stop_reason,
            final_answer=traj.final_answer,
            calls=list(traj.calls),
            messages=traj.messages,
            step=step,
            round=round_,
            kept=kept,
            n_parse_errors=traj.n_parse_errors,
            guided_calls=int(traj.metadata.get("guided_calls", 0)),
        )

    def to_trajectory(self) -> Trajectory:
        """The episode as the rewards see it (no token view); ``round``, ``kept`` and ``guided_calls``
        (when some were made) in its metadata."""
        answer = self.final_answer or ""
        guided = {"guided_calls": self.guided_calls} if self.guided_calls else {}
        return Trajectory(
            task_id=self.task_id,
            messages=self.messages,
            calls=list(self.calls),
            final_answer=answer,
            stop_reason=self.stop_reason,
            n_parse_errors=self.n_parse_errors,
            turn_answers=[answer] if answer else [],
            metadata={"round": self.round, "kept": self.kept, **guided},
        )

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RolloutRecord:
        d = dict(d)
        if not isinstance(d.get("calls", []), list):
            raise RecordError(f"RolloutRecord.calls: expected a list, got {type(d['calls']).__name__}")
        d["calls"] = [CallRecord(**_checked(CallRecord, c)) for c in d.get("calls", [])]
        return cls(**_checked(cls, d))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class PoolRow(_Row):
    """One screened task of a GRPO run's prescreen (``grpo/pool.jsonl``): its kind, the mean and the
    spread of its sampled scores, and whether the spread kept it in the training pool."""

    task_id: str
    kept: bool
    kind: str | None = None
    mean: float | None = None  # None when no sample could be scored
    spread: float | None = None


@dataclass
class MetricsRow:
    """One logged training step (``metrics.jsonl``): the step over the whole run, its phase (sft or grpo)
    and the step within it, seconds since the phase began, and every number logged by name (TRL's
    metrics and the kit's diagnostics, ``kinds/<kind>/...``; null where a value was not finite). On disk
    the numbers sit beside ``step`` and ``phase`` in one flat object."""

    step: int
    phase: str = "grpo"
    phase_step: int | None = None
    elapsed_s: float | None = None
    values: dict[str, float | None] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MetricsRow:
        named = {k: d[k] for k in ("step", "phase", "phase_step", "elapsed_s") if k in d}
        values = {k: v for k, v in d.items() if k not in named}
        for name, value in values.items():
            if not _matches(value, float | None):
                raise RecordError(f"MetricsRow.{name}: expected a number or null, got {type(value).__name__}")
        return cls(**_checked(cls, named), values=values)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"step": self.step, "phase": self.phase}
        d |= {
            k: v for k, v in (("phase_step", self.phase_step), ("elapsed_s", self.elapsed_s)) if v is not None
        }
        return d | self.values


@dataclass
class SampleRow(_Row):
    """One sampled episode of a task, scored with the rubric (``samples.jsonl``, written by
    ``bench.gain_zones sample``): what the sampled pass metric of ``toolkit.eval.claim`` reads."""

    task_id: str
    score: float
    category: str | None = None
    answer_failed: bool | None = None  # None in rows written before issue 48's answer check
    stop_reason: str | None = None
    first_call_well_formed: bool | None = None


@dataclass
class TaskResult(_Row):
    """One evaluated episode of ``mcp-rl eval`` (its ``results.jsonl``): what the metrics, plots and viewer
    need, nothing model-specific.

    ``score`` is the suite's primary per-task score in [0, 1]: the rubric reward (fraction of essential
    rubric items passed) on kit-eval, the BFCL checker's 0/1 on BFCL suites. ``rubric`` holds the item
    verdicts as ``{"id", "text", "category", "essential", "passed"}`` dicts.
    """

    task_id: str
    suite: str
    category: str  # task kind on kit-eval, BFCL test category on BFCL suites
    score: float
    correct: bool | None = None  # BFCL: the official checker passed
    atlas_score: float | None = None  # MCP-Atlas claim score (fulfilled 1 / partial 0.5 / not 0), mean
    rubric: list[dict[str, Any]] = field(default_factory=list)
    n_calls: int = 0
    n_failed_calls: int = 0
    stop_reason: str = "no_tool_call"
    tool_counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None  # the episode or its scoring failed; the task counts as score 0
    details: dict[str, Any] = field(default_factory=dict)
    first_call_well_formed: bool | None = None  # see first_call_well_formed(); None in older results
    # calls the task's gold trajectory makes (kit-eval); None on BFCL suites and in older results
    n_gold_calls: int | None = None


@dataclass
class AtlasResultRow(_Row):
    """One graded task of ``mcp-rl atlas run`` (its ``results.jsonl``): the MCP-Atlas coverage, whether
    it passes (coverage >= 0.75), how the episode ended, its calls, and the judge's verdict per claim.
    (``mcp-rl eval``'s rows are ``TaskResult``.)"""

    task: str
    coverage: float
    passed: bool
    stop_reason: str
    calls: int
    failed_calls: int
    claims: list[dict[str, Any]] = field(default_factory=list)


@functools.cache
def _schema(cls: type) -> tuple[dict[str, Any], frozenset[str]]:
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return typing.get_type_hints(cls), frozenset(required)


def _checked(cls: type, d: Any) -> dict[str, Any]:
    """Fields of ``cls`` in ``d``, shallowly type-checked: unknown or missing fields, and values of the
    wrong JSON type (a string where a list belongs, null for a required string), raise RecordError."""
    if not isinstance(d, dict):
        raise RecordError(f"{cls.__name__} must be a JSON object, got {type(d).__name__}")
    hints, required = _schema(cls)
    unknown = set(d) - set(hints)
    if unknown:
        raise RecordError(f"unknown field(s) for {cls.__name__}: {sorted(unknown)}")
    if missing := required - set(d):
        raise RecordError(f"missing field(s) for {cls.__name__}: {sorted(missing)}")
    for name, value in d.items():
        if not _matches(value, hints[name]):
            raise RecordError(f"{cls.__name__}.{name}: expected {hints[name]}, got {type(value).__name__}")
    return d


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, h) for h in typing.get_args(hint))
    if hint is Any or origin is not None and origin not in (list, dict):
        return True
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    base = origin or hint
    # list[GoldCall] etc. are built before the check; their items were checked on the way in.
    return isinstance(value, base) if isinstance(base, type) else True


def read_jsonl(path: str | Path, kind: type, *, torn_tail: bool = False) -> list[Any]:
    """Read a JSONL file of records (any class with ``from_dict``: Task, Trajectory, the rows above, eval
    results); a bad line raises RecordError naming file and line (``torn_tail``: as ``iter_json_objects``)."""
    return list(iter_jsonl(path, kind, torn_tail=torn_tail))


def read_task_results(path: str | Path) -> list[TaskResult]:
    """Read a per-task results JSONL file; a bad line raises RecordError naming file and line."""
    return read_jsonl(path, TaskResult)


def iter_jsonl(path: str | Path, kind: type, *, torn_tail: bool = False) -> Iterator[Any]:
    """Records of ``kind`` one by one; ``torn_tail`` as for ``iter_json_objects``."""
    path = Path(path)
    for lineno, obj in iter_json_objects(path, what=kind.__name__, torn_tail=torn_tail):
        try:
            yield kind.from_dict(obj)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise RecordError(f"{path}:{lineno}: not a valid {kind.__name__} record: {exc}") from exc


def iter_json_objects(
    path: str | Path, *, what: str = "JSON object", skip_bad: bool = False, torn_tail: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The kit's one line-by-line JSONL parser: ``(line number, object)`` for every non-blank line.
    A line that is not a JSON object raises RecordError naming file and line. ``torn_tail=True``
    forgives that in the last line only (a log a killed run cut short mid-line); ``skip_bad=True`` skips
    every such line (a cache, where a lost entry costs one request). A ``.gz`` path is read through gzip
    (records kept in the repository compressed)."""
    path = Path(path)
    torn: RecordError | None = None  # a bad line, forgiven if no record follows it
    with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            if torn is not None:
                raise torn
            try:
                obj = json.loads(raw.decode("utf-8"))
                if not isinstance(obj, dict):
                    raise TypeError(f"expected a JSON object, got {type(obj).__name__}")
            except (ValueError, TypeError, RecursionError) as exc:
                if skip_bad:
                    continue
                error = RecordError(f"{path}:{lineno}: not a valid {what} record: {exc}")
                error.__cause__ = exc
                if not torn_tail:
                    raise error from exc
                torn = error
                continue
            yield lineno, obj


def write_jsonl(path: str | Path, records: Iterable[Any], *, append: bool = False) -> int:
    """Write records (dicts, or any record with ``to_dict``) as JSONL (sorted keys, so the same records
    give byte-identical files).
    ``append=True`` adds to the end of an existing file (logs written while a run goes on)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with path.open("a" if append else "w", encoding="utf-8") as fh:
        for rec in records:
            d = rec if isinstance(rec, dict) else rec.to_dict()
            fh.write(_dumps_line(d))
            n += 1
    return n


def drop_jsonl_records(path: str | Path, drop: Callable[[dict[str, Any]], bool]) -> None:
    """Rewrite a JSONL log without the records ``drop`` selects and without unreadable lines (the last
    line of a killed run, cut short). Used when a resumed run redoes steps the log already has."""
    path = Path(path)
    if not path.exists():
        return
    kept = [_dumps_line(rec) for _, rec in iter_json_objects(path, skip_bad=True) if not drop(rec)]
    path.write_text("".join(kept), encoding="utf-8")


def _dumps_line(d: dict[str, Any]) -> str:
    line = dumps(d, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates (hostile tool or model text): escape them, lose nothing
        line = dumps(d, sort_keys=True) + "\n"
    return line


def dumps(obj: Any, **kwargs: Any) -> str:
    """``json.dumps`` that writes JSON only: NaN and +-Infinity, which Python writes and no JSON parser
    reads (``-Infinity`` is the bottom of an unbounded reward range), become null."""
    try:
        return json.dumps(obj, allow_nan=False, **kwargs)
    except ValueError as exc:
        if not str(exc).startswith("Out of range float"):
            raise
        return json.dumps(_finite(obj), allow_nan=False, **kwargs)


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj
