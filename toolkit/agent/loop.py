"""The rollout loop: one loop for evaluation, SFT-data checks and GRPO.

For every (task, sample) an episode opens its own isolated world (``toolkit.envs.open_episode``),
renders the system prompt with the enabled tools' MCP schemas, then repeats: generate, parse tool
calls, call the tools through the episode's Toolbox (each call checked, made and classified by
``toolkit.envs.execute``, the executor every scripted replay uses too), append the results. A user
turn ends with an answer that has no tool call (the next follow-up turn starts, if any) or an
explicit ``finish``; the episode ends after the last user turn, at the iteration cap or at the
context budget, or at once (stop_reason "error", the reason in ``metadata["error"]``) when the
toolbox reports an ``environment_error`` (e.g. an external MCP server died).

Guidance (``run_episodes(guide_calls=...)``, GRPO's retry of groups where every episode failed): the
first k gold calls of the first user turn are made *for* the model, one a generation, rendered and
tokenized as ``GoldPolicy`` renders them and run through the same executor; their tokens are context
(mask 0, not the policy's samples), they use k of the turn's ``max_turns`` generations, and the model
generates from there. Only an explicit argument guides an episode, never the task: an evaluation
cannot be steered by a task file.

Episodes run concurrently as asyncio tasks. Generation is batched across them: each episode posts a
request and waits; when every live episode is waiting, the policy is called once for all of them.

Token-exact: the prompt is tokenized once, each model turn keeps the ids it sampled (mask 1, with
logprobs), and only what the template adds between turns is tokenized (mask 0). See ``chat.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from toolkit.agent.chat import ChatFormat, clean_text
from toolkit.agent.output_cut import check_tool_output_cut, cut_tool_output
from toolkit.agent.parsing import ParsedCall, normalize_call, parse_turn
from toolkit.agent.policies import Generation, GenerationRequest, GoldPolicy, Policy
from toolkit.agent.tool_text import check_tool_format, listing, tools_block
from toolkit.aio import run_sync
from toolkit.envs.execute import ERROR_KINDS, TOOL_TIMEOUT_S, error_kind, execute_call, task_tools
from toolkit.records import FINISH_TOOL, CallRecord, GoldCall, Task, Trajectory
from toolkit.toolbox import Toolbox, ToolSpec

EpisodeOpener = Callable[[Task], AbstractAsyncContextManager[Toolbox]]

FINISH_SPEC = ToolSpec(
    name=FINISH_TOOL,
    description="Call this when the request is complete, with your final answer to the user.",
    input_schema={
        "type": "object",
        "properties": {"answer": {"type": "string", "description": "The final answer to the user."}},
        "required": ["answer"],
    },
    server="agent",
)
NEW_TOOLS_MESSAGE = (
    "I have updated some more functions you can choose from. What about now?"  # BFCL's wording
)
# Trajectory.metadata key: model tokens whose policy returned no sampling logprob (None / NaN / too few)
MISSING_LOGPROBS = "missing_logprobs"
# Trajectory.metadata key: gold calls made for the model before it generated (guidance); absent when none
GUIDED_CALLS = "guided_calls"


@dataclass
class RolloutConfig:
    """Budgets and behaviour of the rollout loop (plain data; the same for eval and training).

    Context-management defaults follow Scale's MCP tool-use write-up (output truncation, iteration
    limits, relaxed validation and an explicit finish tool are "first-order" for training).
    """

    max_turns: int = 8
    """Model generations allowed per user turn; reaching it ends the episode (stop_reason max_turns),
    as BFCL's per-turn step limit does."""
    max_new_tokens: int = 256
    """Tokens one model generation may sample; a turn that hits it ends the episode (length)."""
    max_context_tokens: int = 4096
    """Prompt + everything after it must fit; the episode ends (length) when no room is left. Token-level
    backends only; chat servers enforce their own limit."""
    max_tool_output_tokens: int = 512
    """Tool outputs longer than this are cut, with a visible marker saying how much was dropped
    (counted with the policy's tokenizer, or ~4 characters a token without one)."""
    tool_output_cut: str = "tail"
    """How an output over ``max_tool_output_tokens`` is cut (``toolkit.agent.output_cut``): ``tail``
    keeps its first tokens; ``json`` keeps them too and names in the marker the top-level fields of a
    JSON reply that the cut hid, such as the ``total`` or ``count`` that servers put last."""
    relaxed_validation: bool = True
    """Coerce arguments to the tool's JSON schema where unambiguous ("3" -> 3 for an integer)."""
    finish_tool: bool = True
    """Offer the ``finish(answer)`` tool; calling it ends the user turn with that answer."""
    temperature: float = 1.0
    """Sampling temperature; 0 means greedy."""
    top_p: float = 1.0
    system_prompt: str | None = None
    """System message; None uses :func:`default_system_prompt`."""
    tool_timeout_s: float = TOOL_TIMEOUT_S
    """A tool call running longer is abandoned and reported to the model as a timeout."""
    max_concurrent_episodes: int = 64
    """Episodes open at once (each holds an isolated world)."""
    max_batch_size: int = 64
    """Most requests sent to the policy in one call."""
    max_padding: float = 0.0
    """0: a batch goes to the policy in one call (token-level backends left-pad it to its longest
    prompt). Above 0: the batch is cut into length buckets, one call each, so that padding a prompt to
    its bucket's longest adds at most this share of its length (0.3 = 30%). On a CPU, prefilling pad
    tokens is wasted compute when prompt lengths vary; smaller calls decode less efficiently."""
    compact_schemas: bool = False
    """Show the model compacted tool schemas (no titles, ``Optional[X]`` as X, no null defaults; see
    ``toolkit.toolbox.compact_schema``): the cpu-demo prompts went from 786 to 660 tokens on
    average, which matters where prefill dominates (small models on a CPU). Arguments are still validated against
    the full schema."""
    tool_format: str = "json"
    """How the tools are described to the model (``toolkit.agent.tool_text``): ``json``, the chat
    template's JSON schemas, or ``compact``, one line per tool (``name(arg: type, opt?: type) -
    description``) in the system message, or ``compact_args``, that line and one per argument
    description. The same for sampling, evaluation and the SFT warm start,
    which all render through this loop."""
    seed: int | None = None
    """Seeds torch's sampler at the start of a run (transformers backend)."""

    def __post_init__(self) -> None:
        check_tool_format(self.tool_format)
        check_tool_output_cut(self.tool_output_cut)


def default_system_prompt(finish_tool: bool) -> str:
    end = (
        f"When the request is complete, call `{FINISH_TOOL}` with your final answer."
        if finish_tool
        else "When the request is complete, reply with your final answer and no tool call."
    )
    return (
        "You are a helpful assistant that completes the user's request by calling the tools provided. "
        "Call a tool whenever you need information or need to make a change; use the results you get. " + end
    )


@dataclass
class RolloutStats:
    """Where the time of a run went; ``outside_generation_share`` is the loop's own overhead."""

    wall_s: float = 0.0
    generate_s: float = 0.0  # wall time inside policy.generate
    generate_calls: int = 0
    generations: int = 0
    model_tokens: int = 0
    env_tokens: int = 0
    episodes: int = 0

    @property
    def outside_generation_share(self) -> float:
        return 1.0 - self.generate_s / self.wall_s if self.wall_s > 0 else 0.0


# --------------------------------------------------------------------------------------------------
# batching generation across episodes
# --------------------------------------------------------------------------------------------------


def length_buckets(requests: Sequence[GenerationRequest], max_padding: float) -> list[list[int]]:
    """Indices of ``requests`` cut into buckets of similar prompt length (see ``RolloutConfig.max_padding``):
    longest first, a new bucket where padding to the bucket's longest prompt would add more than
    ``max_padding`` of a prompt's own length. One bucket when ``max_padding`` is 0."""
    if max_padding <= 0 or len(requests) < 2:
        return [list(range(len(requests)))]
    size = [len(r.prompt_ids or []) for r in requests]
    buckets: list[list[int]] = []
    width = 0
    for i in sorted(range(len(requests)), key=lambda i: -size[i]):
        if not buckets or width - size[i] > max_padding * max(size[i], 1):
            buckets.append([])
            width = size[i]
        buckets[-1].append(i)
    return buckets


class _Batcher:
    """Collects generation requests; calls the policy once when every live episode is waiting."""

    def __init__(self, policy: Policy, max_batch: int, stats: RolloutStats, max_padding: float = 0.0):
        self.policy = policy
        self.max_batch = max(1, max_batch)
        self.max_padding = max_padding
        self.stats = stats
        self.pending: list[tuple[GenerationRequest, asyncio.Future]] = []
        self.active = 0
        self.busy = False
        self._scheduled = False
        self._tasks: set[asyncio.Task] = set()
        self.failed: BaseException | None = None  # what ended the run (the policy's or a watcher's error)

    def join(self) -> None:
        self.active += 1

    def leave(self) -> None:
        self.active -= 1
        self._poke()

    def abort(self, exc: BaseException) -> None:
        """End the run: every waiting and later generation raises ``_Aborted``, so each episode leaves
        its ``async with`` (closing its servers) the ordinary way. Cancelling the episode tasks instead
        hung: closing an MCP client inside a cancelled task can make a CancelledError its own
        ``__context__``, and contextlib's exit stacks then loop forever walking that chain."""
        if self.failed is None:
            self.failed = exc
        pending, self.pending = self.pending, []
        for _, future in pending:
            if not future.done():
                future.set_exception(_Aborted())

    async def generate(self, request: GenerationRequest) -> Generation:
        if self.failed is not None:
            raise _Aborted()
        future = asyncio.get_running_loop().create_future()
        self.pending.append((request, future))
        self._poke()
        return await future

    def _poke(self) -> None:
        # Decide on the next loop iteration, so that episodes that are ready to run (just started,
        # or back from their tool calls) get the chance to join the batch first.
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._check)

    def _check(self) -> None:
        self._scheduled = False
        if self.busy or not self.pending:
            return
        if len(self.pending) >= min(self.active, self.max_batch):
            batch, self.pending = self.pending[: self.max_batch], self.pending[self.max_batch :]
            self.busy = True
            task = asyncio.ensure_future(self._run(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, batch: list[tuple[GenerationRequest, asyncio.Future]]) -> None:
        start = time.perf_counter()
        try:
            requests = [request for request, _ in batch]
            generations: list[Generation | None] = [None] * len(batch)
            for bucket in length_buckets(requests, self.max_padding):
                out = await self.policy.generate([requests[i] for i in bucket])
                if len(out) != len(bucket):
                    raise RuntimeError(f"policy returned {len(out)} generations for {len(bucket)} requests")
                for i, generation in zip(bucket, out, strict=True):
                    generations[i] = generation
        except BaseException as exc:  # a broken backend is not the model's mistake: it ends the run
            self.abort(exc)
            for _, future in batch:
                if not future.done():
                    future.set_exception(_Aborted())
            if not isinstance(exc, Exception):
                raise
        else:
            for (_, future), generation in zip(batch, generations, strict=True):
                if not future.done():
                    future.set_result(generation)
        finally:
            self.stats.generate_s += time.perf_counter() - start
            self.stats.generate_calls += 1
            self.stats.generations += len(batch)
            self.busy = False
            self._poke()


# --------------------------------------------------------------------------------------------------
# one episode
# --------------------------------------------------------------------------------------------------


class _Stop(Exception):
    def __init__(self, reason: str):
        self.reason = reason


class _Episode:
    def __init__(
        self,
        key: int,
        task: Task,
        sample: int,
        policy: Policy,
        config: RolloutConfig,
        fmt: ChatFormat | None,
        guide: int = 0,
        guide_policy: GoldPolicy | None = None,
    ):
        self.key = key
        self.task = task
        self.policy = policy
        self.config = config
        self.fmt = fmt  # None for message-level backends (no token bookkeeping)
        self.visible: dict[str, ToolSpec] = {}
        self.initial_tools: list[dict[str, Any]] = []  # in the first prompt
        self.template_tools: list[dict[str, Any]] | None = None  # what the chat template renders
        self.shown_tools: list[dict[str, Any]] = []  # visible now (BFCL reveals some in later turns)
        self.step = 0
        self.turn = 0
        self.env_s = 0.0
        self.traj = Trajectory(
            task_id=task.id, messages=[], metadata={"policy": policy.name, "sample": sample}
        )
        # guidance: the first turn's first gold calls, one a generation, leaving the model one generation
        guided = guide_gold(task)[: min(guide, config.max_turns - 1)] if guide > 0 else []
        self.guide_task = dataclasses.replace(task, gold=guided) if guided else None
        self.guide_policy = guide_policy

    # ---- token bookkeeping ------------------------------------------------------------------------

    @property
    def n_tokens(self) -> int:
        return len(self.traj.prompt_ids) + len(self.traj.completion_ids)

    def _append_ids(self, ids: list[int], mask: int, logprobs: list[float] | None = None) -> None:
        self.traj.completion_ids.extend(ids)
        self.traj.completion_mask.extend([mask] * len(ids))
        self.traj.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))

    def _add_env(self, new_messages: list[dict[str, Any]], *, continuing: bool) -> None:
        """Append environment messages and tokenize what the template adds (mask 0).

        When the next generation would have no room left, the text is closed without a generation
        prompt (so a trajectory never ends on a dangling assistant header) and _Stop("length") is
        raised; messages that do not fit at all are dropped, so the context budget is never exceeded.
        """
        if self.fmt is None:
            self.traj.messages.extend(new_messages)
            return
        text = self.fmt.env_text(new_messages, self.template_tools)
        ids = self.fmt.encode(text)
        if continuing and self.n_tokens + len(ids) < self.config.max_context_tokens:
            self.traj.messages.extend(new_messages)
            self._append_ids(ids, 0)
            return
        prompt = self.fmt.generation_prompt
        closing = self.fmt.encode(text[: -len(prompt)] if text.endswith(prompt) else text)
        if self.n_tokens + len(closing) <= self.config.max_context_tokens:
            self.traj.messages.extend(new_messages)
            self._append_ids(closing, 0)
        else:
            self.traj.metadata["dropped_messages"] = len(new_messages)
        if continuing:
            raise _Stop("length")

    def _tool_listing(self) -> list[dict[str, Any]]:
        """The visible tools as the model reads them; rendered when they change, not per generation."""
        return [s.to_openai(compact=self.config.compact_schemas) for s in self.visible.values()]

    # ---- the loop ---------------------------------------------------------------------------------

    async def run(self, toolbox: Toolbox, batcher: _Batcher) -> None:
        task, config = self.task, self.config
        self._toolbox = toolbox
        tools = task_tools(task, await toolbox.list_tools())  # held-out ones too; PROVE's enums stripped
        missing = [name for name in task.tools if name not in tools]
        if missing:
            self.traj.metadata["missing_tools"] = missing
        later = _later_tools(task)
        hidden = {name for names in later.values() for name in names}
        self.visible = {name: spec for name, spec in tools.items() if name not in hidden}
        if config.finish_tool:
            self.visible[FINISH_TOOL] = FINISH_SPEC
        self.initial_tools = self.shown_tools = self._tool_listing()
        compact = config.tool_format != "json"
        # compact: the listing is written into the system message, and the template renders no tools
        self.template_tools = None if compact else self.initial_tools
        self.traj.metadata["tools"] = self.template_tools
        self.traj.metadata["tool_format"] = config.tool_format

        system = (
            config.system_prompt
            if config.system_prompt is not None
            else default_system_prompt(config.finish_tool)
        )
        if compact:
            system += tools_block(self.visible.values(), config.tool_format)
        self.traj.messages = [
            {"role": "system", "content": clean_text(system)},
            {"role": "user", "content": clean_text(task.prompt)},
        ]
        if self.fmt is not None:
            self.traj.prompt_ids = self.fmt.encode(
                self.fmt.prompt_text(self.traj.messages, self.template_tools)
            )
            if len(self.traj.prompt_ids) >= config.max_context_tokens:
                raise _Stop("length")

        n_turns = 1 + len(task.followups)
        pending: list[dict[str, Any]] = []  # tool messages of the last model turn, not yet sent
        for turn in range(n_turns):
            self.turn = turn
            if turn > 0:
                new = [tools[name] for name in later.get(turn, []) if name in tools]
                self.visible.update({s.name: s for s in new})
                self.shown_tools = self._tool_listing()
                followup = clean_text(_user_turn_text(task.followups[turn - 1], new, config))
                pending.append({"role": "user", "content": followup})
                self._add_env(pending, continuing=True)
                pending = []
            guided = len(self.guide_task.gold) if self.guide_task is not None and turn == 0 else 0
            reason, pending = await self._user_turn(batcher, last_turn=turn == n_turns - 1, guided=guided)
            self.traj.stop_reason = reason  # type: ignore[assignment]
            if reason in ("max_turns", "length"):
                break
        if pending:
            self._add_env(pending, continuing=False)

    async def _user_turn(
        self, batcher: _Batcher, *, last_turn: bool, guided: int = 0
    ) -> tuple[str, list[dict[str, Any]]]:
        """Generate and call tools until the user turn ends; returns (stop reason, unsent messages). The
        first ``guided`` generations are gold calls made for the model (guidance), then the model's."""
        config = self.config
        for step_in_turn in range(config.max_turns):
            self._check_environment([])
            max_new = config.max_new_tokens
            if self.fmt is not None:
                max_new = min(max_new, config.max_context_tokens - self.n_tokens)
            request = GenerationRequest(
                key=self.key,
                task=self.task,
                turn=self.turn,
                step=self.step,
                messages=self.traj.messages,
                tools=self.shown_tools,
                prompt_ids=self.traj.prompt_ids + self.traj.completion_ids if self.fmt is not None else None,
                max_new_tokens=max_new,
                temperature=config.temperature,
                top_p=config.top_p,
                stop_token_ids=[self.fmt.eos_token_id] if self.fmt is not None else [],
                steps_left=config.max_turns - step_in_turn,
            )
            generation = await self._guided_generation(request) if step_in_turn < guided else None
            if generation is not None:
                raw, truncated = self._take_guided(generation), False
            else:
                guided = 0  # the model's turn: guidance is over (or did not fit)
                generation = await batcher.generate(request)
                if generation.error is not None:  # the backend could not answer (a served endpoint died)
                    self.traj.metadata["error"] = generation.error
                    self.traj.metadata["error_source"] = "policy"
                    raise _Stop("error")
                raw, truncated = self._take_generation(generation)
            if generation.tool_calls is not None:
                content = generation.text.strip()
                calls = [c for item in generation.tool_calls for c in normalize_call(item)]
            else:
                parsed = parse_turn(raw)
                content, calls = parsed.content, parsed.calls
            ids = [f"call_{self.step}_{k}" for k in range(len(calls))]
            message: dict[str, Any] = {"role": "assistant", "content": content, "raw": raw}
            if calls:
                message["tool_calls"] = [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": c.name or "invalid", "arguments": c.arguments or {}},
                    }
                    for i, c in zip(ids, calls, strict=True)
                ]
            self.traj.messages.append(message)
            self.step += 1
            if truncated:
                self._end_turn(content)
                return "length", []
            if not calls:
                self._end_turn(content)
                return "no_tool_call", []

            tool_messages, answer = await self._call_tools(calls, ids)
            self._check_environment(tool_messages)
            if answer is not None:
                self._end_turn(answer)
                if not last_turn:  # keep the chat well-formed: every call gets a response
                    tool_messages.append(
                        {
                            "role": "tool",
                            "tool_call_id": ids[len(tool_messages)],
                            "name": FINISH_TOOL,
                            "content": "Answer recorded.",
                        }
                    )
                return "finish", tool_messages
            if step_in_turn + 1 >= config.max_turns:
                return "max_turns", tool_messages
            self._add_env(tool_messages, continuing=True)
        return "max_turns", []

    def _take_generation(self, generation: Generation) -> tuple[str, bool]:
        """Record the model's tokens; returns (raw text of the turn, whether it was cut by length)."""
        if self.fmt is None or generation.token_ids is None:
            return generation.text, generation.finish_reason == "length"
        ids = list(generation.token_ids)
        logprobs = list(generation.logprobs) if generation.logprobs is not None else None
        if logprobs is None or len(logprobs) != len(ids) or any(lp is None or lp != lp for lp in logprobs):
            # no sampling logprob for these model tokens: counted, so training masks the episode out
            # (toolkit.train.rollout.token_sample) instead of reading the 0.0 placeholders as logprobs
            meta = self.traj.metadata
            meta[MISSING_LOGPROBS] = meta.get(MISSING_LOGPROBS, 0) + len(ids)
            logprobs = None
        ended = bool(ids) and ids[-1] == self.fmt.eos_token_id and generation.finish_reason != "length"
        self._append_ids(ids, 1, logprobs)
        return self.fmt.decode(ids[:-1] if ended else ids), not ended

    async def _guided_generation(self, request: GenerationRequest) -> Generation | None:
        """The next gold call, made for the model: ``GoldPolicy``'s turn (one call, its text and ids) on
        the task cut to the guided calls; None when it would not fit in the context budget (the model
        goes on from there)."""
        assert self.guide_task is not None and self.guide_policy is not None
        (generation,) = await self.guide_policy.generate([dataclasses.replace(request, task=self.guide_task)])
        room = self.config.max_context_tokens - self.n_tokens
        if self.fmt is not None and generation.token_ids is not None and len(generation.token_ids) > room:
            return None
        return generation

    def _take_guided(self, generation: Generation) -> str:
        """Record a guided turn: context for the model (mask 0), not its sample, so no logprob is
        missing; returns its raw text."""
        meta = self.traj.metadata
        meta[GUIDED_CALLS] = meta.get(GUIDED_CALLS, 0) + 1
        if self.fmt is None or generation.token_ids is None:
            return generation.text
        ids = list(generation.token_ids)  # the text, then the stop token
        self._append_ids(ids, 0)
        return self.fmt.decode(ids[:-1])

    def _end_turn(self, answer: str) -> None:
        self.traj.turn_answers.append(answer)
        self.traj.final_answer = answer

    async def _call_tools(
        self, calls: list[ParsedCall], ids: list[str]
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Run the turn's calls in order; a finish call stops there and returns its answer."""
        messages: list[dict[str, Any]] = []
        for call, call_id in zip(calls, ids, strict=True):
            if call.name == FINISH_TOOL and self.config.finish_tool and call.error is None:
                answer = (call.arguments or {}).get("answer", "")
                return messages, answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
            record = await self._execute(call)
            self.traj.calls.append(record)
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": call_id,
                    "name": call.name or "invalid",
                    "content": record.result,
                }
            )
            if self._environment_error() is not None:
                break  # the episode ends: the turn's later calls are not made
        return messages, None

    def _environment_error(self) -> str | None:
        """Why the environment can no longer serve this episode (e.g. an external server died), as the
        toolbox reports it; None while it is fine (and always for toolboxes without the attribute)."""
        error = getattr(self._toolbox, "environment_error", None)
        return str(error) if error else None

    def _check_environment(self, unsent: list[dict[str, Any]]) -> None:
        """End the episode at once (stop_reason "error") when the environment broke: the model's
        later turns could not be served, and its reward would only measure the broken server. The
        last tool messages are kept, closed without a generation prompt."""
        error = self._environment_error()
        if error is None:
            return
        if unsent:
            self._add_env(unsent, continuing=False)
        self.traj.metadata["error"] = error
        self.traj.metadata["error_source"] = "environment"
        raise _Stop("error")

    async def _execute(self, call: ParsedCall) -> CallRecord:
        """Run one call through the one executor (``toolkit.envs.execute``); finish is not a tool."""
        if call.error is not None:
            self.traj.n_parse_errors += 1
        done = await execute_call(
            self._toolbox,
            call.name,
            call.arguments,
            tools={name: spec for name, spec in self.visible.items() if name != FINISH_TOOL},
            parse_error=None if call.error is None else call.error.removeprefix("bad_json: "),
            relaxed=self.config.relaxed_validation,
            timeout_s=self.config.tool_timeout_s,
            turn=self.turn,
            step=self.step - 1,
        )
        self.env_s += done.record.latency
        done.record.result = self._truncate(done.record.result or "")
        return done.record

    def _truncate(self, text: str) -> str:
        """The tool message text: encodable (no lone surrogates), cut to the tool-output budget."""
        fmt = self.fmt
        return cut_tool_output(
            clean_text(text),
            self.config.max_tool_output_tokens,
            self.config.tool_output_cut,
            fmt.encode if fmt is not None else None,
            fmt.decode if fmt is not None else None,
        )


def guide_gold(task: Task) -> list[GoldCall]:
    """The gold calls guidance can make for the model: the first user turn's, in order."""
    return [g for g in task.gold if g.turn == 0]


def guided_calls(traj: Trajectory) -> int:
    """How many gold calls were made for the model in this episode (0: the model made every call)."""
    return int(traj.metadata.get(GUIDED_CALLS, 0))


def _later_tools(task: Task) -> dict[int, list[str]]:
    """Tools that appear only from a later user turn (BFCL's missed functions), by turn index."""
    missed = (task.metadata.get("bfcl") or {}).get("missed_function") or {}
    return {int(turn): list(names) for turn, names in missed.items()}


def _user_turn_text(followup: str, new_tools: list[ToolSpec], config: RolloutConfig) -> str:
    if not new_tools:
        return followup
    if config.tool_format != "json":
        shown = listing(new_tools, config.tool_format)
    else:
        shown = "\n".join(
            json.dumps(s.to_openai(compact=config.compact_schemas), ensure_ascii=False) for s in new_tools
        )
    return "\n\n".join(part for part in (followup, f"{shown}\n{NEW_TOOLS_MESSAGE}") if part)


# --------------------------------------------------------------------------------------------------
# running many episodes
# --------------------------------------------------------------------------------------------------

# Called with every finished trajectory of any rollout run inside ``watch_episodes``: an evaluation
# shows progress even when its caller hands it a rollout function of its own (``train --evaluate``).
_WATCHERS: ContextVar[tuple[Callable[[Trajectory], None], ...]] = ContextVar("episode_watchers", default=())


@contextmanager
def watch_episodes(callback: Callable[[Trajectory], None]) -> Iterator[None]:
    """Call ``callback`` with each trajectory that finishes inside this block, in this context."""
    token = _WATCHERS.set((*_WATCHERS.get(), callback))
    try:
        yield
    finally:
        _WATCHERS.reset(token)


def policy_failure(traj: Trajectory) -> str | None:
    """Why the policy's backend failed this episode (an endpoint down, a request refused), else None:
    the endpoint's failure, not the model's and not the environment's."""
    if traj.stop_reason == "error" and traj.metadata.get("error_source") == "policy":
        return str(traj.metadata.get("error"))
    return None


def environment_failure(traj: Trajectory) -> str | None:
    """Why this episode's environment failed it (a server that did not start or died), else None."""
    if traj.stop_reason == "error" and traj.metadata.get("error_source") == "environment":
        return str(traj.metadata.get("error"))
    return None


class EnvironmentFailed(RuntimeError):
    """Episodes of a run failed on their servers: the run is an error, never a score."""


def check_environment(trajs: Sequence[Trajectory]) -> None:
    """Raise ``EnvironmentFailed`` with the count and the first reason when any episode failed on its
    servers: its zero would measure the machine, not the model."""
    reasons = [why for why in map(environment_failure, trajs) if why is not None]
    if reasons:
        raise EnvironmentFailed(
            f"{len(reasons)} of {len(trajs)} episodes failed on their servers: {reasons[0]}"
        )


def _default_opener() -> EpisodeOpener:
    try:
        from toolkit.envs import open_episode
    except ImportError as exc:
        raise RuntimeError("toolkit.envs.open_episode is not available; pass open_episode=") from exc
    return open_episode


async def run_episodes(
    tasks: Sequence[Task],
    policy: Policy,
    config: RolloutConfig | None = None,
    *,
    n: int = 1,
    open_episode: EpisodeOpener | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
    stats: RolloutStats | None = None,
    guide_calls: Sequence[int] | None = None,
) -> list[Trajectory]:
    """Roll out ``n`` samples of every task; returns trajectories ordered task by task (the n samples
    of a task are consecutive, as GRPO groups expect).

    Args:
        tasks: the tasks to run.
        policy: a generation backend (``toolkit.agent.policies``).
        config: budgets and behaviour; defaults to ``RolloutConfig()``.
        n: samples per task (the GRPO group size).
        open_episode: ``task -> async context manager yielding a Toolbox``; defaults to
            ``toolkit.envs.open_episode``.
        on_done: called with each trajectory as it finishes (progress bars).
        stats: filled with timings and token counts when given.
        guide_calls: one count per task (``tasks``' order), or None: how many of the task's first-turn
            gold calls (``guide_gold``) are made for the model before it generates, at most all of them
            and leaving it one generation of ``max_turns`` (see the module docstring; 0: none). The
            episode's ``metadata["guided_calls"]`` says how many were made.
    """
    config = config or RolloutConfig()
    guides = _guide_counts(tasks, guide_calls)
    guide_policy = GoldPolicy(policy.tokenizer, one_call_per_turn=True) if any(guides) else None
    opener = open_episode or _default_opener()
    stats = stats if stats is not None else RolloutStats()
    if config.seed is not None and "torch" in sys.modules:
        sys.modules["torch"].manual_seed(config.seed)
    fmt = ChatFormat(policy.tokenizer) if policy.tokenizer is not None else None
    batcher = _Batcher(policy, config.max_batch_size, stats, config.max_padding)
    slots = asyncio.Semaphore(max(1, config.max_concurrent_episodes))
    jobs = [(task, sample, guide) for task, guide in zip(tasks, guides, strict=True) for sample in range(n)]
    results: list[Trajectory | None] = [None] * len(jobs)
    watchers = (*([on_done] if on_done is not None else []), *_WATCHERS.get())
    start = time.perf_counter()

    async def one(key: int, task: Task, sample: int, guide: int) -> None:
        async with slots:
            if batcher.failed is not None:  # the run is over: open no more episodes
                return
            episode = _Episode(key, task, sample, policy, config, fmt, guide, guide_policy)
            batcher.join()
            joined = True
            try:
                async with opener(task) as toolbox:
                    try:
                        await episode.run(toolbox, batcher)
                    except _Stop as stop:
                        episode.traj.stop_reason = stop.reason  # type: ignore[assignment]
                    finally:
                        batcher.leave()
                        joined = False
                    episode.traj.state_diff = toolbox.state_diff()
            except _Aborted:  # closed: the run ends with batcher.failed
                return
            except Exception as exc:  # the environment failed: record it, keep the other episodes going
                episode.traj.stop_reason = "error"
                episode.traj.metadata["error"] = f"{type(exc).__name__}: {exc}"
                episode.traj.metadata["error_source"] = "environment"
            finally:
                if joined:
                    batcher.leave()
            _finish_metadata(episode, stats)
            results[key] = episode.traj
            try:
                for watch in watchers:
                    watch(episode.traj)
            except Exception as exc:  # a broken callback ends the run, not just this episode
                batcher.abort(exc)

    try:
        async with asyncio.TaskGroup() as group:
            for key, (task, sample, guide) in enumerate(jobs):
                group.create_task(one(key, task, sample, guide))
    except BaseExceptionGroup as group_error:
        raise group_error.exceptions[0] from None
    if batcher.failed is not None:  # every episode has closed by now
        raise batcher.failed
    stats.wall_s += time.perf_counter() - start
    stats.episodes += len(jobs)
    return results  # type: ignore[return-value]


def _guide_counts(tasks: Sequence[Task], guide_calls: Sequence[int] | None) -> list[int]:
    if guide_calls is None:
        return [0] * len(tasks)
    guides = list(guide_calls)
    if len(guides) != len(tasks):
        raise ValueError(f"guide_calls: {len(guides)} counts for {len(tasks)} tasks (one per task)")
    if any(not isinstance(k, int) or isinstance(k, bool) or k < 0 for k in guides):
        raise ValueError(f"guide_calls: counts must be integers >= 0, got {guides}")
    return guides


class _Aborted(Exception):
    """Raised in an episode when the run has ended (``_Batcher.failed``): it closes, records nothing."""


def _finish_metadata(episode: _Episode, stats: RolloutStats) -> None:
    traj = episode.traj
    model_tokens = sum(traj.completion_mask)
    env_tokens = len(traj.completion_mask) - model_tokens
    stats.model_tokens += model_tokens
    stats.env_tokens += env_tokens
    errors = {kind: 0 for kind in ERROR_KINDS}
    for call in traj.calls:
        if (kind := error_kind(call)) is not None:
            errors[kind] = errors.get(kind, 0) + 1
    traj.metadata.update(
        {
            "steps": episode.step,
            "model_tokens": model_tokens,
            "env_tokens": env_tokens,
            "env_s": round(episode.env_s, 6),
            "errors": errors,
        }
    )


def rollout(
    tasks: Sequence[Task],
    policy: Policy,
    config: RolloutConfig | None = None,
    *,
    n: int = 1,
    open_episode: EpisodeOpener | None = None,
    on_done: Callable[[Trajectory], None] | None = None,
    stats: RolloutStats | None = None,
    guide_calls: Sequence[int] | None = None,
) -> list[Trajectory]:
    """Synchronous :func:`run_episodes`; works inside a running event loop (Jupyter) too."""
    return run_sync(
        run_episodes(
            tasks,
            policy,
            config,
            n=n,
            open_episode=open_episode,
            on_done=on_done,
            stats=stats,
            guide_calls=guide_calls,
        )
    )
