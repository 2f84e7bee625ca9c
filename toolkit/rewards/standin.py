"""A deterministic STAND-IN for an LLM judge: a tiny OpenAI-compatible HTTP server on 127.0.0.1.

It is not a language model. It exists so the judge path (HTTP, JSON replies, retries, cache,
calibration) runs end to end in CI and in the notebooks when no real endpoint is configured.
Its rule: an item passes when every piece of evidence the item's text names (quoted strings,
snake_case / kebab-case identifiers, numbers, ISO dates) appears in the trajectory the judge is shown;
an item naming no evidence fails. ``noise`` flips a deterministic pseudo-random share of verdicts so
that calibration numbers are not trivially perfect. Results from it say nothing about a real judge.

    with StandInJudge() as judge:
        reward = get_reward("rubric-judge", base_url=judge.base_url, model=judge.model, api_key_env=None)
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_NAME = "standin-heuristic-judge"
_IDENT = re.compile(r"[A-Za-z]+(?:[_-][A-Za-z0-9]+)+")
_EVIDENCE_RES = (
    re.compile(r"[\"“'‘]([^\"”'’]{1,80})[\"”'’]"),  # quoted strings
    re.compile(r"\b[A-Za-z]+(?:[_-][A-Za-z0-9]+)+\b"),  # snake_case / kebab-case identifiers (tool names)
    re.compile(r"\b\d{4}-\d{2}-\d{2}\b"),  # ISO dates
    re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?![\w-])"),  # numbers
)


def evidence(text: str) -> list[str]:
    """The checkable pieces an item's text names."""
    found: list[str] = []
    for pattern in _EVIDENCE_RES:
        for m in pattern.finditer(text):
            tok = (m.group(1) if m.groups() else m.group(0)).strip()
            if tok and tok not in found and not any(tok in f for f in found):
                found.append(tok)
    return found


def _present(tok: str, hay: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(tok.casefold())}(?![\w])", hay) is not None


# the value a kit answer item names last: "... must state that the city of ... is Osaka."
_STATED = re.compile(r"must state that .+ is (.+?)(?: \(or an approximately rounded value\))?\.$", re.S)


def _answer_verdict(item_text: str, trajectory: dict[str, Any], context: str = "") -> tuple[str, str]:
    """An item that asks the agent to state something ("must state", or an MCP-Atlas claim): its evidence
    must be in the answers to the user, and the answers must commit to it (``toolkit.checks.answer``):
    no number, date or identifier that neither the item texts (``context``: the batch's items, the
    request) nor the tool outputs name, at most two from the outputs alone, no pasted tool output, no
    hedge, nothing cut by the token cap."""
    from toolkit.checks.answer import date_mentions, fold, hedged, id_mentions, number_mentions, pasted

    answer = fold("\n".join(a or "" for a in trajectory.get("answers_to_user") or []))
    if not answer:
        return "fail", "stand-in: no answer"
    if trajectory.get("stop_reason") == "length":
        return "fail", "stand-in: answer cut by the token cap"
    outputs = [str(c.get("result") or "") for c in trajectory.get("tool_calls") or []]
    if pasted(answer, outputs):
        return "fail", "stand-in: answer pastes tool output"
    if hedged(answer):
        return "fail", "stand-in: answer hedges"
    # values the items or the request name are the claim's own; values the tools returned are context
    # a true answer may add, but not many of them (a list of candidates); any other value is invented
    named, seen = fold(item_text + "\n" + context), fold("\n".join(outputs))
    for find in (number_mentions, date_mentions, id_mentions):
        allowed, offered = [m.value for m in find(named)], [m.value for m in find(seen)]
        extra = [m.value for m in find(answer) if m.value not in allowed]
        invented = [v for v in extra if v not in offered]
        if invented or len(set(extra)) > 2:
            return "fail", f"stand-in: answer also states {[str(v) for v in (invented or extra)[:3]]}"
    stated = _STATED.search(item_text.strip())
    wanted = evidence(item_text) + ([stated.group(1)] if stated else [])
    missing = [t for t in wanted if not _present(t, answer)]
    if missing:
        return "fail", f"stand-in: not stated: {missing[:3]}"
    return "pass", "stand-in: stated, nothing competing"


def heuristic_verdict(
    item_text: str, trajectory: dict[str, Any], claim: bool = False, context: str = ""
) -> tuple[str, str]:
    """The stand-in's rule for one item against the rendered trajectory (see the module docstring).

    Three phrasings get a structural rule instead: "not call any tool" (no calls), "not modify"
    (no state changes) and "ask the user" (a question mark in an answer). Identifiers are alternatives
    (any one present will do: "use X; alternatively Y"); all other evidence must all be present.
    """
    low = item_text.casefold()
    if claim or "must state" in low:
        return _answer_verdict(item_text, trajectory, context)
    calls = trajectory.get("tool_calls") or []
    if "not call any tool" in low:
        return ("pass", "stand-in: no calls") if not calls else ("fail", "stand-in: tools were called")
    if "not modify" in low:
        changed = trajectory.get("state_changes") or {}
        return ("pass", "stand-in: nothing changed") if not changed else ("fail", "stand-in: records changed")
    if "ask the user" in low:
        asked = any("?" in (a or "") for a in trajectory.get("answers_to_user") or [])
        return ("pass", "stand-in: asked") if asked else ("fail", "stand-in: no question")
    hay = json.dumps(trajectory, sort_keys=True, default=str).casefold()
    toks = evidence(item_text)
    if not toks:
        return "fail", "stand-in: no checkable evidence named"
    idents = [t for t in toks if _IDENT.fullmatch(t)]
    others = [t for t in toks if t not in idents]
    missing = [t for t in others if not _present(t, hay)]
    if idents and not any(_present(t, hay) for t in idents):
        missing.insert(0, " or ".join(idents))
    if missing:
        return "fail", f"stand-in: not found: {missing[:3]}"
    return "pass", "stand-in: all named evidence present"


def _flip(seed: str, noise: float) -> bool:
    h = int(hashlib.sha256(seed.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return h < noise


def grade_claim_request(user: str) -> str:
    """The stand-in's reply to an MCP-Atlas-style request (``toolkit.rewards.atlas.claim_messages``):
    the rule above, with only the final answer as the trajectory."""
    from toolkit.rewards.atlas import ANSWER_MARK, CLAIM_MARK

    claim, _, answer = user.split(CLAIM_MARK, 1)[1].partition(ANSWER_MARK)
    verdict, reason = heuristic_verdict(claim, {"answers_to_user": [answer]}, claim=True)
    outcome = "fulfilled" if verdict == "pass" else "not_fulfilled"
    return json.dumps(
        {"claim_text": claim, "coverage_outcome": outcome, "justification": reason, "confidence_level": 1.0}
    )


def grade_request(messages: list[dict[str, Any]], noise: float = 0.0) -> str:
    """The stand-in's reply content for a request built by ``toolkit.rewards.judge.build_messages``
    (or, one claim at a time, by ``toolkit.rewards.atlas.claim_messages``)."""
    from toolkit.rewards.atlas import CLAIM_MARK

    user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    if CLAIM_MARK in user and "TRAJECTORY (JSON):" not in user:
        return grade_claim_request(user)
    traj_part = user.split("TRAJECTORY (JSON):\n", 1)[-1].split("\n\nRUBRIC ITEMS (JSON):\n", 1)
    traj_json, items_json = (traj_part + ["[]"])[:2]
    try:
        items, trajectory = json.loads(items_json), json.loads(traj_json)
    except json.JSONDecodeError:
        items, trajectory = [], {}
    verdicts = []
    request = user.split("USER REQUEST(S):\n", 1)[-1].split("\n\nTRAJECTORY (JSON):", 1)[0]
    context = "\n".join([request, *(str(it.get("text", "")) for it in items if isinstance(it, dict))])
    for it in items:
        verdict, reason = heuristic_verdict(str(it.get("text", "")), trajectory, context=context)
        if noise and _flip(f"{it.get('id')}|{traj_json}", noise):
            verdict = "fail" if verdict == "pass" else "pass"
            reason += " (flipped by stand-in noise)"
        verdicts.append({"id": it.get("id"), "verdict": verdict, "reason": reason})
    return json.dumps({"verdicts": verdicts})


class ChatServer:
    """A minimal OpenAI-compatible ``POST /v1/chat/completions`` server on 127.0.0.1 (a free port), run
    in a background thread; ``respond(messages) -> reply text`` makes the reply. Use as a context
    manager; ``judge_config()`` is the matching ``JudgeGrader`` config."""

    model = "local"

    def __init__(self, respond: Callable[[list[dict[str, Any]]], str], model: str | None = None):
        self.model = model or self.model
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server naming)
                length = int(self.headers.get("Content-Length", 0))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                    content = respond(body.get("messages", []))
                    message = {"role": "assistant", "content": content}
                    choice = {"index": 0, "finish_reason": "stop", "message": message}
                    status, payload = (
                        200,
                        {
                            "id": "local",
                            "object": "chat.completion",
                            "created": 0,
                            "model": outer.model,
                            "choices": [choice],
                        },
                    )
                except Exception as exc:  # a reply the client can count, never a dead server
                    status, payload = 500, {"error": {"message": f"{type(exc).__name__}: {exc}"}}
                outer.requests += 1
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def judge_config(self) -> dict[str, Any]:
        """Keyword config for ``JudgeGrader`` / ``get_reward("rubric-judge", ...)``."""
        return {"base_url": self.base_url, "model": self.model, "api_key_env": None}

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()


class StandInJudge(ChatServer):
    """The stand-in judge (heuristic, not an LLM) behind the OpenAI-compatible API."""

    model = MODEL_NAME

    def __init__(self, noise: float = 0.0):
        self.noise = noise
        super().__init__(lambda messages: grade_request(messages, self.noise))
