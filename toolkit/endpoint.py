"""An OpenAI-compatible chat endpoint, and the one chat call every client of one in the kit makes.

The kit talks to four kinds of chat server: the served policy (``openai:<model>@<url>``), the LLM judge,
the own-server teacher and the prompt paraphraser. Each is an :class:`Endpoint` (where it is, which
model, which environment variable holds the key, how long to wait, how often to retry) and each asks it
through :func:`chat_async` (from synchronous code :func:`chat`):

- bounded retries with exponential backoff (``backoff * 2**k`` s) on what a retry can fix: a refused,
  dropped or timed-out connection, HTTP 408 / 409 / 429 and 5xx, and a reply the caller's ``parse`` turns
  down (:class:`UnusableReply`); a bad request or a refused key is not retried;
- after the last try, :class:`EndpointError` with one line saying what went wrong (``HTTP 503 (...)`` or
  ``APIConnectionError: Connection error.``), or the last :class:`UnusableReply`;
- the reply as a :class:`ChatReply` (text, tool calls as the model wrote them, why it stopped), a
  streamed reply (``stream=True``) assembled from its chunks the same way.

The key is read from the environment when a client is built, handed to it and kept nowhere else: not on
the endpoint, not in its ``repr``, not in an error. The ``openai`` package's own retries are off (ours
count each try, and retry unusable replies too).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolkit.aio import run_sync

NO_KEY = "EMPTY"  # what a keyless local server (vLLM, llama.cpp, the kit's stand-ins) is sent
RETRY_STATUSES = frozenset({408, 409, 429})  # and every 5xx


@dataclass(frozen=True)
class Endpoint:
    """Where a chat model is served and how to ask it.

    Args:
        base_url: the OpenAI root, e.g. ``http://127.0.0.1:8000/v1``; None: ``$OPENAI_BASE_URL``, as the
            ``openai`` client reads it.
        model: the model name the server serves.
        api_key_env: the environment variable holding the key; None, or unset, sends ``EMPTY``.
        timeout: seconds per try.
        retries: tries after the first one fails.
        backoff: seconds before the first retry, doubled for each later one.
    """

    base_url: str | None
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    timeout: float = 60.0
    retries: int = 2
    backoff: float = 0.5

    def api_key(self) -> str:
        return (os.environ.get(self.api_key_env) if self.api_key_env else None) or NO_KEY

    def client(self, *, http_client: Any = None, api_key: str | None = None) -> Any:
        """An ``openai.OpenAI`` client for this endpoint (``http_client``: tests pass a mock transport)."""
        from openai import OpenAI

        return OpenAI(**self._client_kwargs(api_key), http_client=http_client)

    def async_client(self, *, api_key: str | None = None) -> Any:
        """An ``openai.AsyncOpenAI`` client for this endpoint (the agent loop's many episodes at once)."""
        from openai import AsyncOpenAI

        return AsyncOpenAI(**self._client_kwargs(api_key))

    def _client_kwargs(self, api_key: str | None) -> dict[str, Any]:
        key = api_key or self.api_key()
        return {"base_url": self.base_url, "api_key": key, "timeout": self.timeout, "max_retries": 0}


@dataclass
class ChatReply:
    """What the model answered: its text, its tool calls (``{"name", "arguments"}``, the arguments as the
    JSON text the model wrote, parsed or not), and why it stopped (``length``: the token budget)."""

    text: str
    tool_calls: list[dict[str, str]] | None = None
    finish_reason: str | None = None


class EndpointError(RuntimeError):
    """The endpoint failed the request after every try; the message is one line. ``status`` is the last
    HTTP status (None when no reply came)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


class UnusableReply(ValueError):
    """Raised by a ``parse`` hook: a reply came but is not what was asked for; it is tried again."""


async def chat_async(
    client: Any,
    endpoint: Endpoint,
    messages: list[dict[str, Any]],
    *,
    stream: bool = False,
    parse: Callable[[ChatReply], Any] | None = None,
    count: Callable[[str], None] | None = None,
    **params: Any,
) -> Any:
    """Ask ``endpoint``'s model through ``client`` (an ``openai`` client, sync or async, or anything with
    its ``chat.completions.create``); returns the :class:`ChatReply`, or what ``parse`` makes of it.
    ``params`` go to the request as they are (``temperature``, ``max_tokens``, ``tools``, ...).
    ``count(event)`` is told of each ``requests``, ``retries``, ``http_errors`` and ``transport_errors``."""
    import httpx
    import openai

    tally = count or (lambda event: None)
    problem: Exception = EndpointError("no try was made")
    for attempt in range(max(0, endpoint.retries) + 1):
        if attempt:
            tally("retries")
            await asyncio.sleep(endpoint.backoff * 2 ** (attempt - 1))
        tally("requests")
        try:
            reply = await _send(client, {"model": endpoint.model, "messages": messages, **params}, stream)
        except openai.APIStatusError as exc:
            tally("http_errors")
            problem = EndpointError(f"HTTP {exc.status_code} ({_one_line(exc)})", exc.status_code)
            if exc.status_code not in RETRY_STATUSES and exc.status_code < 500:
                break  # a bad request or a refused key: another try gets the same answer
            continue
        # a connection refused, dropped or timed out; a stream cut mid-way; a reply that is not JSON
        except (openai.APIError, httpx.HTTPError, OSError, ValueError) as exc:
            tally("transport_errors")
            problem = EndpointError(f"{type(exc).__name__}: {_one_line(exc)}")
            continue
        if parse is None:
            return reply
        try:
            return parse(reply)
        except UnusableReply as exc:
            problem = exc
    raise problem


def chat(client: Any, endpoint: Endpoint, messages: list[dict[str, Any]], **kwargs: Any) -> Any:
    """:func:`chat_async` from synchronous code (a script, a worker thread, a Jupyter cell)."""
    return run_sync(chat_async(client, endpoint, messages, **kwargs))


async def _send(client: Any, request: dict[str, Any], stream: bool) -> ChatReply:
    response = client.chat.completions.create(**request, **({"stream": True} if stream else {}))
    if inspect.isawaitable(response):
        response = await response
    if stream:
        return await _assembled(response)
    if not response.choices:
        return ChatReply("")
    choice = response.choices[0]
    message = choice.message
    calls = None
    if getattr(message, "tool_calls", None):
        calls = [{"name": c.function.name, "arguments": c.function.arguments} for c in message.tool_calls]
    return ChatReply(message.content or "", calls, getattr(choice, "finish_reason", None))


async def _assembled(stream: Any) -> ChatReply:
    """One streamed reply: content deltas joined, tool calls assembled by their ``index``."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish = None
    async for chunk in _chunks(stream):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta is not None and delta.content:
            text.append(delta.content)
        for part in (delta.tool_calls if delta is not None else None) or []:
            slot = calls.setdefault(part.index or 0, {"name": "", "arguments": ""})
            if part.function is not None:
                slot["name"] += part.function.name or ""
                slot["arguments"] += part.function.arguments or ""
        finish = choice.finish_reason or finish
    return ChatReply("".join(text), [calls[i] for i in sorted(calls)] or None, finish)


async def _chunks(stream: Any) -> Any:
    if hasattr(stream, "__aiter__"):
        async for chunk in stream:
            yield chunk
    else:
        for chunk in stream:
            yield chunk


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:297] + "..."


def reachable(client: Any, endpoint: Endpoint) -> str | None:
    """None when something answers at the endpoint (any HTTP reply counts; what it refuses, the requests
    report), else why not, after the endpoint's tries: a probe before a run spends its episodes."""
    import time

    import openai

    problem = ""
    for attempt in range(max(0, endpoint.retries) + 1):
        if attempt:
            time.sleep(endpoint.backoff * 2 ** (attempt - 1))
        try:
            client.models.list()
            return None
        except openai.APIStatusError:
            return None
        except openai.APIConnectionError as exc:  # refused, unreachable or timed out
            problem = f"{type(exc).__name__}: {exc}"
    return f"{problem} after {max(0, endpoint.retries) + 1} tries"
