"""The static trajectory viewer: hostile model text stays text; the page works in headless Chromium."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from toolkit.eval.viewer import ViewerRun, render_html, write_viewer
from toolkit.records import CallRecord, TaskResult, Trajectory

HOSTILE = '<script>document.title="pwned"</script><img src=x onerror="document.title=\'pwned\'">'


def run(label: str, score: float, answer: str) -> ViewerRun:
    traj = Trajectory(
        task_id="t-1",
        messages=[
            {"role": "system", "content": "You are a tool-using agent."},
            {"role": "user", "content": "Find ticket 7 " + HOSTILE},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_ticket", "arguments": '{"id": 7}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "get_ticket", "content": "not found " + HOSTILE},
            {"role": "assistant", "content": answer},
        ],
        calls=[CallRecord("get_ticket", {"id": 7}, ok=False, error="tool_error: not found </div>")],
        final_answer=answer,
        stop_reason="no_tool_call",
    )
    res = TaskResult(
        "t-1",
        "kit-eval",
        "lookup",
        score,
        n_calls=1,
        n_failed_calls=1,
        stop_reason="no_tool_call",
        rubric=[
            {
                "id": "r1",
                "text": "calls get_ticket " + HOSTILE,
                "category": "tool_selection",
                "essential": True,
                "passed": True,
            },
            {
                "id": "r2",
                "text": "answers",
                "category": "answer_correctness",
                "essential": True,
                "passed": score >= 1,
            },
        ],
    )
    other = TaskResult("t-2", "kit-eval", "write", 1.0)
    return ViewerRun(label, [res, other], [traj])


def test_everything_is_escaped():
    page = render_html(
        [run("base " + HOSTILE, 0.5, "answer " + HOSTILE), run("trained", 1.0, "ticket 7 is closed")]
    )
    assert "<img" not in page
    assert page.count("<script>") == 1  # the page's own filter script only
    assert html.escape(HOSTILE) in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"(src|href)=\"?https?:", page)  # no external assets
    assert "&rarr; get_ticket" in page and "tool_error: not found &lt;/div&gt;" in page


def test_long_text_is_cut_with_a_marker(tmp_path):
    r = run("base", 0.0, "x" * 10_000)
    out = write_viewer([r], tmp_path / "v.html")
    assert "more characters]" in out.read_text()


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.integration
def test_viewer_in_headless_chromium(tmp_path):
    browser = find_chromium()
    if browser is None:
        pytest.skip("chromium not installed (Debian: apt-get install -y chromium); .ci/run installs it")
    page = write_viewer(
        [run("base " + HOSTILE, 0.5, "answer " + HOSTILE), run("trained", 1.0, "ticket 7 is closed")],
        tmp_path / "viewer.html",
        title="before vs after",
    )
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=90, check=True
    ).stdout
    assert "<title>before vs after</title>" in dom  # the hostile scripts never ran (they would set "pwned")
    assert "<img" not in dom
    assert dom.count('class="task"') == 2
    assert dom.count('class="run"') == 4  # two tasks x (before, after) side by side
    assert 'class="ok">pass' in dom and 'class="bad">fail' in dom
    assert "ticket 7 is closed" in dom

    shot = tmp_path / "shot.png"
    subprocess.run(
        [browser, *flags, f"--screenshot={shot}", "--window-size=1200,800", page.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )
    assert shot.exists() and Path(shot).read_bytes()[:4] == b"\x89PNG"


def test_tool_results_are_matched_to_their_calls():
    """A finish call between turns has no tool message: later results still get their own status."""
    traj = Trajectory(
        task_id="t",
        messages=[
            {"role": "user", "content": "q"},
            {"role": "tool", "name": "get_a", "content": "A"},
            {"role": "user", "content": "q2"},
            {"role": "tool", "name": "get_b", "content": "B"},
        ],
        calls=[
            CallRecord("get_a", {}, ok=True),
            CallRecord("finish", {"answer": "x"}, ok=True),
            CallRecord("get_b", {}, ok=False, error="tool_error: broken"),
        ],
    )
    page = render_html([ViewerRun("r", [TaskResult("t", "s", "c", 0.0)], [traj])])
    a, b = page.index("<b>get_a</b>"), page.index("<b>get_b</b>")
    assert 'class="ok">ok' in page[a:b] and "tool_error: broken" in page[b:]
