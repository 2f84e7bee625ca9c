"""A static HTML trajectory viewer: one self-contained file per eval run, no server, no external assets.

Each task is a collapsible block with the prompt, every model turn, tool call (arguments) and tool result
(ok / error), later user turns, the final answer, the stop reason and the rubric verdicts. Given two runs
(before / after), the same task is shown side by side.

Everything a model, a tool or a task wrote is hostile text: it is HTML-escaped on the way in, and a
Content-Security-Policy allows only the page's own inline script (by hash) and inline styles, so even an
escaping slip could not run a script or load anything from outside.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkit.records import FINISH_TOOL, TaskResult, Trajectory, read_jsonl, read_task_results

MAX_TEXT = 4000  # characters of one message shown; longer text is cut with a visible marker

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1em;color:#222}
h1{font-size:1.3em} .meta{color:#555;font-size:.9em}
.bar{position:sticky;top:0;background:#fff;padding:.4em 0;border-bottom:1px solid #ddd;z-index:1}
details.task{border:1px solid #ccc;border-radius:6px;margin:.5em 0;padding:.3em .6em}
summary{cursor:pointer} .cols{display:grid;gap:1em;grid-template-columns:repeat(var(--n),minmax(0,1fr))}
.run{border-left:3px solid #ddd;padding-left:.6em;min-width:0}
.msg{margin:.3em 0;padding:.3em .5em;border-radius:4px;white-space:pre-wrap;word-break:break-word}
.user{background:#eef5ff} .assistant{background:#f6f6f6} .tool{background:#f3fff0} .system{background:#fffbe6}
.call{font-family:ui-monospace,monospace;font-size:.85em;background:#fff;border:1px dashed #aaa;padding:.2em .4em;margin:.2em 0}
.err{background:#ffecec} .ok{color:#1e7e34} .bad{color:#b00020;font-weight:bold}
.badge{display:inline-block;padding:0 .4em;border-radius:3px;font-size:.85em;margin-left:.3em;background:#eee}
table{border-collapse:collapse;font-size:.9em} td,th{border:1px solid #ddd;padding:.15em .4em;text-align:left}
.final{background:#e8f8f5;padding:.3em .5em;border-radius:4px;white-space:pre-wrap}
"""

# Filters the task list by text and by "failed only"; touches only classes and the hidden attribute.
SCRIPT = """
(function(){
  var q=document.getElementById('q'), f=document.getElementById('failed');
  function apply(){
    var text=q.value.toLowerCase();
    document.querySelectorAll('details.task').forEach(function(d){
      var hit=d.getAttribute('data-search').indexOf(text)>=0;
      var failed=d.getAttribute('data-failed')==='1';
      d.hidden=!(hit && (!f.checked || failed));
    });
  }
  q.addEventListener('input',apply); f.addEventListener('change',apply);
})();
"""


@dataclass
class ViewerRun:
    """One run to show: a label, its per-task results and trajectories (matched by task id)."""

    label: str
    results: list[TaskResult]
    trajectories: list[Trajectory]


def _e(value: Any) -> str:
    """Escape anything for HTML text or a quoted attribute, cutting very long text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT] + f" [... {len(text) - MAX_TEXT} more characters]"
    return html.escape(text, quote=True)


def _content(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    if isinstance(content, list):  # multi-part content: keep the text parts
        return "\n".join(str(p.get("text", p)) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def _render_call(tc: dict[str, Any]) -> str:
    fn = tc.get("function", tc)
    args = fn.get("arguments", fn.get("args", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            pass
    return f'<div class="call">&rarr; {_e(fn.get("name", "?"))}({_e(args)})</div>'


def _render_messages(traj: Trajectory) -> str:
    """Conversation timeline; tool results are marked ok / error from the loop's call records."""
    parts = []
    # Tool messages follow the order of the calls; the loop's own finish call has no tool message.
    calls = [c for c in traj.calls if c.name != FINISH_TOOL]
    pos = 0
    for msg in traj.messages:
        role = str(msg.get("role", "?"))
        text = _content(msg)
        if role == "system":
            parts.append(f'<details class="msg system"><summary>system prompt</summary>{_e(text)}</details>')
            continue
        if role == "tool":
            rec = None
            for j in range(pos, len(calls)):  # the next call with this tool's name (or the next one)
                if not msg.get("name") or calls[j].name == msg.get("name"):
                    rec, pos = calls[j], j + 1
                    break
            ok = rec.ok if rec else True
            status = (
                '<span class="ok">ok</span>'
                if ok
                else f'<span class="bad">error</span> {_e(rec.error or "")}'
            )
            name = _e(msg.get("name") or (rec.name if rec else "tool"))
            parts.append(
                f'<div class="msg tool{"" if ok else " err"}"><b>{name}</b> {status}\n{_e(text)}</div>'
            )
            continue
        body = _e(text) + "".join(_render_call(tc) for tc in msg.get("tool_calls") or [])
        parts.append(f'<div class="msg {_e(role)}"><b>{_e(role)}</b>\n{body}</div>')
    if not traj.messages and traj.calls:  # no transcript kept: list the calls
        for c in traj.calls:
            status = "ok" if c.ok else f"error {c.error or ''}"
            parts.append(
                f'<div class="call">&rarr; {_e(c.name)}({_e(c.args)}) {_e(status)}\n{_e(c.result or "")}</div>'
            )
    return "".join(parts)


def _render_rubric(result: TaskResult) -> str:
    if not result.rubric:
        return ""
    rows = "".join(
        f"<tr><td>{_e(i.get('id', ''))}</td><td>{_e(i.get('category', ''))}</td>"
        f"<td>{'essential' if i.get('essential', True) else 'optional'}</td>"
        f'<td class="{"ok" if i.get("passed") else "bad"}">{"pass" if i.get("passed") else "fail"}</td>'
        f"<td>{_e(i.get('text', ''))}</td></tr>"
        for i in result.rubric
    )
    return (
        f"<table><tr><th>item</th><th>category</th><th></th><th>verdict</th><th>text</th></tr>{rows}</table>"
    )


def _render_run_column(label: str, result: TaskResult | None, traj: Trajectory | None) -> str:
    if result is None and traj is None:
        return f'<div class="run"><h4>{_e(label)}</h4><i>not in this run</i></div>'
    head = f"<h4>{_e(label)}"
    if result is not None:
        head += f'<span class="badge">score {result.score:.2f}</span>'
        if result.correct is not None:
            head += f'<span class="badge {"ok" if result.correct else "bad"}">{"correct" if result.correct else "wrong"}</span>'
        head += f'<span class="badge">{result.n_calls} calls, {result.n_failed_calls} failed</span>'
        head += f'<span class="badge">stop: {_e(result.stop_reason)}</span>'
    head += "</h4>"
    err = f'<div class="msg err">episode error: {_e(result.error)}</div>' if result and result.error else ""
    timeline = _render_messages(traj) if traj is not None else ""
    final = ""
    if traj is not None:
        answers = traj.turn_answers if len(traj.turn_answers) > 1 else [traj.final_answer]
        final = "".join(f'<div class="final"><b>final answer</b>\n{_e(a)}</div>' for a in answers)
    rubric = _render_rubric(result) if result is not None else ""
    return f'<div class="run">{head}{err}{timeline}{final}{rubric}</div>'


def render_html(runs: Sequence[ViewerRun], title: str = "mcp-rl-kit trajectories") -> str:
    """The whole page as a string (no external references)."""
    if not runs:
        raise ValueError("the viewer needs at least one run")
    results = [{r.task_id: r for r in run.results} for run in runs]
    trajs = [{t.task_id: t for t in run.trajectories} for run in runs]
    order: list[str] = []
    for run in runs:
        for tid in [r.task_id for r in run.results] + [t.task_id for t in run.trajectories]:
            if tid not in order:
                order.append(tid)
    blocks = []
    for tid in order:
        cols = [
            _render_run_column(run.label, results[i].get(tid), trajs[i].get(tid))
            for i, run in enumerate(runs)
        ]
        scores = [f"{results[i][tid].score:.2f}" if tid in results[i] else "-" for i in range(len(runs))]
        failed = any(tid in res and res[tid].score < 1.0 for res in results)
        first = next((trajs[i][tid] for i in range(len(runs)) if tid in trajs[i]), None)
        prompt = next((_content(m) for m in (first.messages if first else []) if m.get("role") == "user"), "")
        category = next((res[tid].category for res in results if tid in res), "")
        search = f"{tid} {category} {prompt[:300]}".lower()
        blocks.append(
            f'<details class="task"{" open" if not blocks else ""} data-failed="{int(failed)}" data-search="{_e(search)}">'
            f'<summary><b>{_e(tid)}</b> <span class="badge">{_e(category)}</span> '
            f"score {' &rarr; '.join(scores)} &mdash; {_e(prompt[:140])}</summary>"
            f'<div class="cols" style="--n:{len(runs)}">{"".join(cols)}</div></details>'
        )
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    csp = f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'"
    labels = " vs ".join(_e(r.label) for r in runs)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>"
        f'<h1>{_e(title)}</h1><div class="meta">{labels} &middot; {len(order)} tasks</div>'
        '<div class="bar"><input id="q" placeholder="filter by task id, category, prompt" size="40"> '
        '<label><input type="checkbox" id="failed"> not fully passed only</label></div>'
        f'<main id="tasks">{"".join(blocks)}</main>'
        f"<script>{SCRIPT}</script></body></html>\n"
    )


def write_viewer(
    runs: Sequence[ViewerRun], out_path: str | Path, title: str = "mcp-rl-kit trajectories"
) -> Path:
    """Write the page; returns its path."""
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(render_html(runs, title), encoding="utf-8")
    return out_path


def load_viewer_run(result_dir: str | Path, label: str | None = None) -> ViewerRun:
    """A run from an eval output folder (results.jsonl, trajectories.jsonl, results.json)."""
    d = Path(result_dir)
    summary = d / "results.json"
    if label is None and summary.exists():
        label = json.loads(summary.read_text(encoding="utf-8")).get("label")
    results = read_task_results(d / "results.jsonl") if (d / "results.jsonl").exists() else []
    trajs = read_jsonl(d / "trajectories.jsonl", Trajectory) if (d / "trajectories.jsonl").exists() else []
    return ViewerRun(label or d.name, results, trajs)


def viewer_for_dirs(
    result_dirs: Sequence[str | Path], out_path: str | Path, labels: Sequence[str] | None = None
) -> Path:
    """One page for one run, or side by side for several runs of the same suite (before / after)."""
    runs = [load_viewer_run(d, labels[i] if labels else None) for i, d in enumerate(result_dirs)]
    return write_viewer(
        runs, out_path, title="mcp-rl-kit trajectories: " + " vs ".join(r.label for r in runs)
    )
