"""Security: the filesystem server's sandbox, no eval/exec of model text, BFCL call strings that are
only literal calls, and API keys that never reach logs, results or trajectories."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from toolkit.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "toolkit"

# --------------------------------------------------------------------------------------------------
# filesystem sandbox
# --------------------------------------------------------------------------------------------------

ESCAPES = [
    "../etc/passwd",
    "../../../../../../etc/passwd",
    "/../../etc/passwd",
    "/docs/../../etc/passwd",
    "docs/../../../etc/shadow",
    "/docs/policies/../../../root/.ssh/id_rsa",
    "/shared/escape/passwd",  # a symlink in the world pointing to ../../etc
    "/shared/escape",
    "//..//..//etc/passwd",
    "/./../etc/passwd",
]
HOST_MARKERS = ("root:x:0:0", "root:*:0:0", "BEGIN OPENSSH", "/bin/bash")


async def _fs_calls(calls: list[tuple[str, dict]]) -> list[tuple[bool, str]]:
    from toolkit.envs import open_episode

    async with open_episode(servers=["filesystem"], seed=0) as tb:
        return [((r := await tb.call_tool(name, args)).ok, r.text) for name, args in calls]


def test_traversal_and_escaping_symlinks_are_refused_over_mcp():
    reads = [("read_file", {"path": p}) for p in ESCAPES] + [("list_directory", {"path": p}) for p in ESCAPES]
    for (ok, text), (_, args) in zip(asyncio.run(_fs_calls(reads)), reads, strict=True):
        assert not ok, f"{args} was allowed: {text[:200]}"
        assert "outside the workspace" in text or "Access denied" in text, (args, text)
        assert not any(m in text for m in HOST_MARKERS)


def test_writes_never_touch_the_real_disk(tmp_path):
    marker = f"pwned-{uuid.uuid4().hex}"
    host_target = tmp_path / marker  # an absolute host path: inside the sandbox it is just a name
    calls = [
        ("write_file", {"path": f"../../../../{tmp_path}/{marker}", "content": "x"}),
        ("write_file", {"path": str(host_target), "content": "x"}),
        ("make_directory", {"path": str(tmp_path / "dir"), "parents": True}),
        ("create_symlink", {"path": "/lnk", "target": "../../../" + str(tmp_path)}),
        ("create_symlink", {"path": "/lnk2", "target": "/shared/escape"}),
        ("write_file", {"path": "/shared/escape/x", "content": "x"}),
        ("copy_file", {"source": "/docs/README.md", "destination": "../../../../" + str(host_target)}),
        ("move_path", {"source": "/docs/README.md", "destination": "/../" + marker}),
    ]
    results = asyncio.run(_fs_calls(calls))
    assert not results[0][0] and "outside the workspace" in results[0][1]
    assert not results[3][0] and not results[5][0] and not results[6][0] and not results[7][0]
    assert not host_target.exists() and not (tmp_path / "dir").exists()
    assert list(tmp_path.iterdir()) == []


_SEGMENTS = ["..", ".", "", "docs", "policies", "shared", "escape", "x", "...", "%2e%2e", "..\u2024", "~"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_SEGMENTS), max_size=10), st.booleans())
def test_resolve_never_leaves_the_root(segments, absolute):
    """Whatever path the model sends, the resolved path is a canonical path inside '/', or refused."""
    from toolkit.envs.servers.base import ToolError
    from toolkit.envs.servers.filesystem import Filesystem
    from toolkit.envs.state import WorldState

    fs = Filesystem(WorldState.from_seed(0))
    path = ("/" if absolute else "") + "/".join(segments)
    try:
        real = fs.resolve(path)
    except ToolError:
        return
    assert real.startswith("/")
    assert ".." not in real.split("/") and "." not in real.split("/")
    assert "//" not in real


# --------------------------------------------------------------------------------------------------
# no eval / exec of model text
# --------------------------------------------------------------------------------------------------

DANGEROUS_BUILTINS = {"eval", "exec", "compile", "__import__", "execfile"}
DANGEROUS_ATTRS = {
    ("builtins", "eval"),
    ("builtins", "exec"),
    ("pickle", "loads"),
    ("pickle", "load"),
    ("marshal", "loads"),
    ("os", "system"),
    ("os", "popen"),
    ("yaml", "load"),
    ("yaml", "unsafe_load"),
}


def dangerous_calls(source: str, filename: str = "<src>") -> list[str]:
    """Calls that can execute text as code: eval/exec/compile, pickle/marshal loads, os.system,
    yaml.load, subprocess with shell=True, getattr(builtins, 'eval')."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        where = f"{filename}:{node.lineno}"
        if isinstance(func, ast.Name) and func.id in DANGEROUS_BUILTINS:
            found.append(f"{where}: {func.id}()")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if (func.value.id, func.attr) in DANGEROUS_ATTRS:
                found.append(f"{where}: {func.value.id}.{func.attr}()")
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and name.value in DANGEROUS_BUILTINS:
                found.append(f"{where}: getattr(..., {name.value!r})")
        for kw in node.keywords:
            if kw.arg == "shell" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                found.append(f"{where}: shell=...")
    return found


def test_no_eval_or_exec_anywhere_in_the_package():
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50
    found = [hit for f in files for hit in dangerous_calls(f.read_text(encoding="utf-8"), str(f))]
    assert found == []


def test_the_scanner_finds_what_it_looks_for():
    planted = (
        "import builtins, pickle, subprocess\n"
        "eval(text)\nexec(code)\nbuiltins.eval(x)\npickle.loads(b)\n"
        "subprocess.run(cmd, shell=True)\ngetattr(builtins, 'exec')(s)\n"
        "ast.literal_eval(s)\nmodel.eval()\nre.compile(p)\n"  # these three are fine
    )
    assert len(dangerous_calls(planted)) == 6


def _only_a_literal_call(source: str, name: str) -> bool:
    tree = ast.parse(source, mode="eval").body
    if not (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name) and tree.func.id == name):
        return False
    if tree.args:
        return False

    def literal(node: ast.AST) -> bool:
        if isinstance(node, ast.Call):  # non-finite floats are rendered as float('inf')
            return (
                isinstance(node.func, ast.Name)
                and node.func.id == "float"
                and len(node.args) == 1
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value in ("inf", "-inf", "nan")
            )
        if isinstance(node, ast.List | ast.Tuple):
            return all(literal(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return all(
                k is not None and literal(k) and literal(v)
                for k, v in zip(node.keys, node.values, strict=True)
            )
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return isinstance(node.operand, ast.Constant)
        return isinstance(node, ast.Constant)

    return all(literal(kw.value) for kw in tree.keywords)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=10), kids, max_size=3),
    max_leaves=10,
)
_injection = st.sampled_from(
    ["')\n__import__('os').system('id')#", '"),exec("x")#', "\\", "'''", "\x00", "{}"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["cd", "mv", "ls"]) | st.text(max_size=12),
    st.dictionaries(st.text(max_size=12) | _injection, _json | _injection, max_size=4),
)
@example("ª", {})  # NFKC-normalises to "a": once rendered as a call of another function
@example("cd", {"ﬁle": "x"})
def test_bfcl_call_strings_are_only_literal_calls(name, args):
    """BFCL's checker eval()s call strings; the kit renders model calls so that nothing but a call of
    the named function with literal arguments can reach it (anything else is refused)."""
    pytest.importorskip("bfcl_eval")
    from toolkit.envs.bfcl import BFCLCallError, render_call

    try:
        source = render_call(name, args)
    except (BFCLCallError, RecursionError):
        return
    assert _only_a_literal_call(source, name), source


# --------------------------------------------------------------------------------------------------
# planted API keys never written anywhere
# --------------------------------------------------------------------------------------------------

PLANTED = {
    "OPENAI_API_KEY": "sk-PLANTED-openai-7f3c9a1b2d4e6f80",
    "MCP_RL_JUDGE_API_KEY": "sk-PLANTED-judge-0a1b2c3d4e5f6789",
    "HF_TOKEN": "hf_PLANTEDtoken0123456789abcdef",
    "ANTHROPIC_API_KEY": "sk-ant-PLANTED-0123456789",
}


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "toolkit.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=cwd,
    )


def leaked_in(root: Path, texts: list[str], secrets: list[str]) -> list[str]:
    """Where any secret (or its base64 / reversed form) appears: files under root, and texts."""
    import base64

    forms = {
        s for secret in secrets for s in (secret, secret[::-1], base64.b64encode(secret.encode()).decode())
    }
    hits = [f"text #{i}" for i, t in enumerate(texts) if any(f in t for f in forms)]
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes().decode("utf-8", errors="replace")
            hits += [f"{path}" for f in forms if f in data]
    return hits


@pytest.mark.integration
def test_planted_keys_never_reach_logs_results_or_trajectories(tmp_path):
    from toolkit.rewards.standin import StandInJudge

    env = {**os.environ, **PLANTED, "MCP_RL_CACHE": str(tmp_path / "cache")}
    out = tmp_path / "run"
    texts: list[str] = []
    procs = [
        _run(
            [
                "synth",
                "--n",
                "6",
                "--n-eval",
                "2",
                "--seed",
                "1",
                "--out",
                str(out / "tasks"),
                "--no-progress",
            ],
            env,
            tmp_path,
        )
    ]
    procs.append(_run(["rollout", "--policy", "gold", "--tasks", str(out / "tasks" / "train.jsonl"), "--out", str(out / "gold.jsonl"), "--no-progress"], env, tmp_path))  # fmt: skip
    with StandInJudge() as judge:  # the key is sent to the judge (that is its purpose), never written
        config = {"base_url": judge.base_url, "model": judge.model, "api_key_env": "MCP_RL_JUDGE_API_KEY",
                  "cache_path": str(out / "judge_cache.jsonl")}  # fmt: skip
        procs.append(_run(["score", "--reward", "rubric-judge", "--json", "--tasks", str(out / "tasks" / "train.jsonl"),
                           "--trajectories", str(out / "gold.jsonl"), "--config", json.dumps(config)], env, tmp_path))  # fmt: skip
    procs.append(_run(["score", "--reward", "rubric-judge", "--tasks", str(out / "tasks" / "train.jsonl"),
                       "--trajectories", str(out / "gold.jsonl"), "--config", json.dumps({"base_url": "http://127.0.0.1:9/v1",
                       "model": "m", "api_key_env": "OPENAI_API_KEY", "max_retries": 0, "timeout": 0.5})], env, tmp_path))  # fmt: skip
    for p in procs:
        assert p.returncode == 0, p.stderr[-2000:]
        texts += [p.stdout, p.stderr]
    assert (out / "gold.jsonl").stat().st_size > 0 and (out / "judge_cache.jsonl").exists()
    assert json.loads(procs[2].stdout)["aggregate"]["n"] > 0
    assert leaked_in(tmp_path, texts, list(PLANTED.values())) == []


def test_leak_search_finds_a_planted_key(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "log.txt").write_text("config: sk-PLANTED-x\n")
    assert leaked_in(tmp_path, [], ["sk-PLANTED-x"]) == [str(tmp_path / "a" / "b" / "log.txt")]
    (tmp_path / "a" / "b" / "log.txt").write_text("nothing here\n")
    assert leaked_in(tmp_path, ["...x-DETNALP-ks..."], ["sk-PLANTED-x"]) == ["text #0"]
