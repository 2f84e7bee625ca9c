"""Fault injection: an LLM-judge endpoint that is down, slow, failing or answering malformed JSON.

A real HTTP server on 127.0.0.1 (``FakeJudge``) plays an OpenAI-compatible ``/v1/chat/completions``
in one of several modes; the kit's rubric reward with the LLM judge (``rubric-judge``) grades
trajectories through it. Expected: no exception, retries counted, items the judge never answered
usably counted as ungraded in the results (``details["ungraded"]``), and a trajectory with no graded
essential item marked ``unscorable`` (left out of the GRPO baseline) rather than scored 0.

Modes: ``ok``, ``down`` (nothing listens), ``slow`` (answers after the client timeout), ``http500``,
``flaky`` (503 twice, then good), ``prose`` (200 with a non-JSON verdict), ``garbage`` (a body that
is not JSON), ``wrong_ids`` (verdicts for items that were not asked), ``truncated`` (JSON cut short).

    python -m bench.fault_judge
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from toolkit.records import CallRecord, RubricItem, Task, Trajectory

MODES = ("ok", "down", "slow", "http500", "flaky", "prose", "garbage", "wrong_ids", "truncated")
MODEL = "fake-judge"


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _item_ids(body: dict[str, Any]) -> list[str]:
    user = body["messages"][-1]["content"]
    items = json.loads(user.split("RUBRIC ITEMS (JSON):\n", 1)[1])
    return [it["id"] for it in items]


class FakeJudge:
    """A threaded HTTP server answering chat completions according to ``mode``; records request bodies."""

    def __init__(self, mode: str, slow_s: float = 4.0):
        self.mode = mode
        self.slow_s = slow_s
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep the console quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                judge.requests.append(body)
                judge.headers.append(dict(self.headers))
                status, payload = judge.answer(body, len(judge.requests))
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (slow mode)

        self.server: ThreadingHTTPServer | None = None
        if mode == "down":
            with socket.socket() as s:  # a port nobody listens on
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
        else:
            self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            self.server.daemon_threads = True
            self.port = self.server.server_address[1]
            threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answer(self, body: dict[str, Any], n: int) -> tuple[int, Any]:
        ids = _item_ids(body)
        good = json.dumps({"verdicts": [{"id": i, "verdict": "pass", "reason": "ok"} for i in ids]})
        mode = self.mode
        if mode == "slow":
            time.sleep(self.slow_s)
            return 200, _completion(good)
        if mode == "http500":
            return 500, {"error": {"message": "internal error", "type": "server_error"}}
        if mode == "flaky" and n <= 2:
            return 503, {"error": {"message": "overloaded", "type": "server_error"}}
        if mode == "prose":
            return 200, _completion("All items look fine to me, pass.")
        if mode == "garbage":
            return 200, b"<html><body>502 Bad Gateway</body></html>"
        if mode == "wrong_ids":
            return 200, _completion(json.dumps({"verdicts": [{"id": "nope", "verdict": "pass"}]}))
        if mode == "truncated":
            return 200, _completion(good[: len(good) // 2])
        return 200, _completion(good)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def __enter__(self) -> FakeJudge:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def sample_pairs(n: int, items: int = 3) -> list[tuple[Task, Trajectory]]:
    """``n`` small (task, trajectory) pairs with ``items`` essential rubric items each."""
    pairs = []
    for k in range(n):
        rubric = [
            RubricItem(f"r{j}", f"calls get_ticket for t-{1000 + j}", "tool_selection") for j in range(items)
        ]
        task = Task(
            id=f"j-{k}",
            split="eval",
            prompt="Look up the ticket.",
            servers=["helpdesk"],
            tools=[],
            seed=0,
            rubric=rubric,
        )
        call = CallRecord("get_ticket", {"ticket_id": "t-1000"}, True, result='{"id": "t-1000"}')
        traj = Trajectory(
            task_id=task.id, messages=[], calls=[call], final_answer="done", stop_reason="finish"
        )
        pairs.append((task, traj))
    return pairs


def judge_config(judge: FakeJudge, **overrides: Any) -> dict[str, Any]:
    config = {
        "base_url": judge.base_url,
        "model": MODEL,
        "api_key_env": None,
        "max_retries": 2,
        "backoff": 0.01,
        "timeout": 1.5,  # above a loaded 2-core machine's reply time (0.5 s flaked beside a training run)
        "concurrency": 2,
    }
    config.update(overrides)
    return config


def run_mode(mode: str, n: int = 4, items: int = 3) -> dict[str, Any]:
    """Grade ``n`` trajectories through a judge in ``mode``; a summary dict."""
    from toolkit.rewards.base import get_reward
    from toolkit.rewards.trl import as_trl_reward_func

    pairs = sample_pairs(n, items)
    start = time.perf_counter()
    crash = None
    with FakeJudge(mode) as judge:
        reward = get_reward("rubric-judge", **judge_config(judge))
        try:
            results = reward.batch([t for t, _ in pairs], [tr for _, tr in pairs])
        except Exception as exc:  # the figure: must stay None
            crash = f"{type(exc).__name__}: {exc}"
            results = []
        stats = dict(reward.grader.stats)
        # The TRL adapter: an unscorable trajectory must reach TRL as None (left out), never as 0.
        func = as_trl_reward_func(reward)
        try:
            trl_values = func(
                prompts=[t.prompt for t, _ in pairs],
                completions=["" for _ in pairs],
                task=[json.dumps(t.to_dict()) for t, _ in pairs],
                trajectory=[tr for _, tr in pairs],
            )
        except Exception as exc:  # reported, not raised
            trl_values = f"{type(exc).__name__}: {exc}"
        n_requests = len(judge.requests)
    return {
        "mode": mode,
        "crash": crash,
        "items": n * items,
        "ungraded": sum(r.details.get("ungraded", 0) for r in results),
        "unscorable": sum(bool(r.details.get("unscorable")) for r in results),
        "scores": [round(r.score, 3) for r in results],
        "trl_values": trl_values,
        "requests_seen": n_requests,
        "stats": stats,
        "wall_s": round(time.perf_counter() - start, 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="trajectories per mode")
    args = ap.parse_args(argv)
    rows = [run_mode(m, args.n) for m in MODES]
    print(f"{'mode':<10} {'items':>5} {'ungraded':>8} {'unscorable':>10} {'retries':>7} {'wall_s':>6}  stats")
    for r in rows:
        print(
            f"{r['mode']:<10} {r['items']:>5} {r['ungraded']:>8} {r['unscorable']:>10} "
            f"{r['stats'].get('retries', 0):>7} {r['wall_s']:>6}  {r['stats']}"
            + (f"  CRASH {r['crash']}" if r["crash"] else "")
        )
    crashes = sum(bool(r["crash"]) for r in rows)
    faulty = [r for r in rows if r["mode"] not in ("ok", "flaky")]
    print(
        f"FIGURE judge_faults modes={len(rows)} crashes={crashes} "
        f"ungraded_counted={sum(r['ungraded'] for r in faulty)}/{sum(r['items'] for r in faulty)} (faulty modes) "
        f"recovered_after_retry={next(r['ungraded'] == 0 for r in rows if r['mode'] == 'flaky')}"
    )
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
