"""``toolkit.endpoint``: one endpoint type and one chat call for every OpenAI-compatible client (issue 50).
Against the real ``openai`` client and stdlib HTTP servers (no model): bounded retries on what a retry
can fix, none on a bad request, one clear line on a dead endpoint, the key never shown."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from toolkit.aio import run_sync
from toolkit.endpoint import (
    ChatReply,
    Endpoint,
    EndpointError,
    UnusableReply,
    chat,
    chat_async,
    reachable,
)
from toolkit.paths import PACKAGE_DIR

HELLO = [{"role": "user", "content": "hi"}]


def completion(content: str, finish: str = "stop") -> bytes:
    message = {"role": "assistant", "content": content}
    body = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]}  # fmt: skip
    return json.dumps(body).encode()


class Server:
    """A chat endpoint that answers the n-th request with ``reply(n, body)``: (status, bytes)."""

    def __init__(self, reply):
        self.bodies: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                outer.bodies.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
                status, data = reply(len(outer.bodies), outer.bodies[-1])
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_port}/v1"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.http.shutdown()
        self.http.server_close()


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_server_errors_are_retried_then_the_reply_comes_back():
    events: list[str] = []
    with Server(lambda n, body: (503, b"{}") if n < 3 else (200, completion("hello"))) as server:
        endpoint = Endpoint(server.url, "m", api_key_env=None, retries=3, backoff=0.0)
        reply = chat(endpoint.client(), endpoint, HELLO, temperature=0, count=events.append)
    assert reply == ChatReply("hello", None, "stop")
    assert (
        len(server.bodies) == 3 and server.bodies[0]["model"] == "m" and server.bodies[0]["temperature"] == 0
    )
    assert events.count("requests") == 3 and events.count("retries") == 2 and events.count("http_errors") == 2


def test_a_bad_request_is_not_retried_and_the_error_is_one_line():
    with Server(lambda n, body: (400, b'{"error": {"message": "too\\nlong"}}')) as server:
        endpoint = Endpoint(server.url, "m", api_key_env=None, retries=3, backoff=0.0)
        with pytest.raises(EndpointError, match=r"^HTTP 400 \(") as caught:
            chat(endpoint.client(), endpoint, HELLO)
    assert len(server.bodies) == 1 and caught.value.status == 400 and "\n" not in str(caught.value)


def test_a_dead_endpoint_is_one_clear_line_after_bounded_tries():
    events: list[str] = []
    endpoint = Endpoint(dead_url(), "m", api_key_env=None, retries=2, backoff=0.01)
    started = time.monotonic()
    with pytest.raises(EndpointError, match=r"^APIConnectionError: Connection error\.$"):
        chat(endpoint.client(), endpoint, HELLO, count=events.append)
    assert events.count("requests") == 3 and events.count("transport_errors") == 3
    assert time.monotonic() - started < 30
    assert "after 3 tries" in reachable(endpoint.client(), endpoint)


def test_an_unusable_reply_is_retried_and_the_last_reason_raised():
    def number(reply: ChatReply) -> int:
        if not reply.text.isdigit():
            raise UnusableReply(f"not a number: {reply.text!r}")
        return int(reply.text)

    with Server(lambda n, body: (200, completion("seven" if n < 2 else "7"))) as server:
        endpoint = Endpoint(server.url, "m", api_key_env=None, retries=1, backoff=0.0)
        assert chat(endpoint.client(), endpoint, HELLO, parse=number) == 7
        with pytest.raises(UnusableReply, match="not a number"):
            chat(endpoint.client(), endpoint, HELLO, parse=lambda r: number(ChatReply("x")))


def test_the_key_comes_from_its_variable_and_is_never_shown(monkeypatch):
    secret = "sk-test-" + "4" * 20
    monkeypatch.setenv("ENDPOINT_TEST_KEY", secret)
    endpoint = Endpoint("http://127.0.0.1:9/v1", "m", api_key_env="ENDPOINT_TEST_KEY", timeout=7)
    client = endpoint.client()
    assert client.api_key == secret and client.max_retries == 0 and client.timeout == 7
    assert secret not in repr(endpoint) and secret not in str(endpoint.__dict__)
    assert Endpoint(None, "m", api_key_env=None).api_key() == "EMPTY"
    monkeypatch.delenv("ENDPOINT_TEST_KEY")
    assert endpoint.api_key() == "EMPTY"


def test_sync_and_async_clients_and_streamed_replies_take_the_same_call():
    def choice(**kw):
        return SimpleNamespace(choices=[SimpleNamespace(**kw)])

    plain = SimpleNamespace(choices=[SimpleNamespace(message=SimpleNamespace(content="sync"))])
    sync_client = SimpleNamespace(
        chat=SimpleNamespace(completions=SimpleNamespace(create=lambda **kw: plain))
    )
    endpoint = Endpoint(None, "m", retries=0)
    assert chat(sync_client, endpoint, HELLO) == ChatReply("sync", None, None)

    def part(index, name, arguments):
        return SimpleNamespace(index=index, function=SimpleNamespace(name=name, arguments=arguments))

    chunks = [
        choice(
            delta=SimpleNamespace(content="It ", tool_calls=[part(0, "add", '{"a": 2')]), finish_reason=None
        ),
        choice(
            delta=SimpleNamespace(content="is", tool_calls=[part(0, None, ', "b": 3}')]), finish_reason=None
        ),
        SimpleNamespace(choices=[]),
        choice(delta=None, finish_reason="length"),
    ]

    async def stream():
        for c in chunks:
            yield c

    sent = []

    async def create(**kw):
        sent.append(kw)
        return stream()

    async_client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    reply = run_sync(chat_async(async_client, endpoint, HELLO, stream=True, max_tokens=5))
    assert reply == ChatReply("It is", [{"name": "add", "arguments": '{"a": 2, "b": 3}'}], "length")
    assert sent[0]["stream"] is True and sent[0]["max_tokens"] == 5 and sent[0]["model"] == "m"


def test_every_chat_client_in_the_kit_asks_through_the_one_chat_call():
    """No module but toolkit/endpoint.py builds an openai client or sends a chat request itself."""
    direct = re.compile(r"\bcompletions\.create\(|\b(?:Async)?OpenAI\(")
    offenders = [
        str(path.relative_to(PACKAGE_DIR.parent))
        for path in sorted(PACKAGE_DIR.rglob("*.py"))
        if path.name != "endpoint.py" and direct.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
    for module in ("agent/policies.py", "rewards/judge.py", "synth/paraphrase.py", "synth/own_teacher.py"):
        assert "from toolkit.endpoint import" in (PACKAGE_DIR / module).read_text(encoding="utf-8"), module
