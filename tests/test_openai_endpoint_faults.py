"""Faults of a served endpoint, against the real ``openai`` client and a stdlib HTTP server (no model):
a malformed streamed tool call goes back to the model as a tool error and the episode goes on; an
endpoint that dies mid-evaluation ends the open episodes as errors and the run finishes."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from toolkit.agent.loop import RolloutConfig, rollout
from toolkit.agent.policies import OpenAIPolicy
from toolkit.agent.testing import fake_opener
from toolkit.records import Task


def task(task_id: str = "t") -> Task:
    return Task(
        id=task_id, split="eval", prompt="Add 2 and 3.", servers=["calc"], tools=["add", "save_note"], seed=0
    )


def chunk(delta: dict, finish: str | None = None) -> bytes:
    body = {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def serve(handler_cls) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler_cls)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_malformed_streamed_tool_call_is_a_tool_error_and_the_episode_goes_on():
    received = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's naming)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append(body)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            if len(received) == 1:  # a call whose arguments stream stops mid-object
                first = {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": ""},
                }
                self.wfile.write(chunk({"role": "assistant", "tool_calls": [first]}))
                cut = {"index": 0, "function": {"arguments": '{"a": 2, "b"'}}
                self.wfile.write(chunk({"tool_calls": [cut]}))
                self.wfile.write(chunk({}, "tool_calls"))
            else:
                self.wfile.write(chunk({"role": "assistant", "content": "It is "}))
                self.wfile.write(chunk({"content": "5."}, "stop"))
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, *args):
            pass

    server = serve(Handler)
    try:
        policy = OpenAIPolicy("m", f"http://127.0.0.1:{server.server_port}/v1", stream=True)
        (traj,) = rollout([task()], policy, RolloutConfig(temperature=0.0), open_episode=fake_opener())
    finally:
        server.shutdown()
    assert received[0]["stream"] is True
    assert traj.stop_reason != "error" and traj.final_answer == "It is 5."
    (call,) = traj.calls
    assert call.name == "add" and not call.ok and call.error.startswith("bad_json")
    # the model saw the error as the tool's reply, then answered
    tool_reply = received[1]["messages"][3]
    assert tool_reply["role"] == "tool" and "bad_json" in tool_reply["content"]


def test_an_endpoint_that_dies_mid_evaluation_ends_open_episodes_as_errors():
    state = {"requests": 0, "dead": False}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                state["requests"] += 1
                # the first episode gets its answer; then the server "dies": connections are dropped
                dead = state["dead"] or state["requests"] > 1
                state["dead"] = dead
            if dead:
                self.connection.close()
                return
            reply = {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "5"}, "finish_reason": "stop"}
                ],
            }
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = serve(Handler)
    try:
        policy = OpenAIPolicy("m", f"http://127.0.0.1:{server.server_port}/v1", timeout=10, max_retries=1)
        config = RolloutConfig(temperature=0.0, max_concurrent_episodes=1)
        started = time.monotonic()
        trajs = rollout([task(f"t{i}") for i in range(4)], policy, config, open_episode=fake_opener())
    finally:
        server.shutdown()
    assert [t.stop_reason for t in trajs] == ["no_tool_call", "error", "error", "error"]
    assert all(t.metadata["error_source"] == "policy" for t in trajs[1:])
    assert "APIConnectionError" in trajs[1].metadata["error"]
    assert time.monotonic() - started < 60
