"""What docs/guide.md (and the README) state about the kit is what the kit does: the server and tool
counts are the registry's, the MCP client snippet for `mcp-rl serve` runs, and `train --help` names the
recipe the Makefile's CPU proof runs (issue 51)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from toolkit.paths import REPO_ROOT

GUIDE = REPO_ROOT / "docs" / "guide.md"
README = REPO_ROOT / "README.md"


def kit_counts() -> dict[str, tuple[int, int]]:
    """(servers, tools) for all domain servers, the core 11, PROVE's domains and BFCL's, from the registry."""
    from toolkit.envs.registry import DOMAIN_SERVERS, bfcl_server_names, tool_specs

    domain = list(DOMAIN_SERVERS)
    core = domain[:11]  # the cpu/default/hard presets' servers, listed first
    prove = domain[11:]
    bfcl = bfcl_server_names()
    return {
        name: (len(servers), len(tool_specs(servers)))
        for name, servers in {"all": domain, "core": core, "prove": prove, "bfcl": bfcl}.items()
    }


def quoted_counts(text: str) -> dict[str, list[tuple[int, int]]]:
    """Every (servers, tools) pair the text quotes, by kind (line breaks in prose read as spaces)."""
    text = " ".join(text.split()).replace("**", "")
    pairs = lambda pattern: [tuple(map(int, m)) for m in re.findall(pattern, text)]  # noqa: E731
    return {
        "all": pairs(r"(\d+) (?:real )?MCP servers (?:with |\()(\d+) tools"),
        "core": pairs(r"core (\d+) \((\d+) tools"),
        "prove": pairs(r"(\d+) of PROVE's domains \((\d+) tools"),
        "bfcl": pairs(r"BFCL's (\d+) multi-turn environments \((\d+) tools"),
    }


def test_the_server_and_tool_counts_the_docs_quote_are_the_registrys():
    """Before: the guide's table said "11 MCP servers (122 tools)", the count before PROVE's domains."""
    counts = kit_counts()
    for page in (GUIDE, README):
        for kind, pairs in quoted_counts(page.read_text(encoding="utf-8")).items():
            assert all(pair == counts[kind] for pair in pairs), (
                f"{page.name}: {kind} {pairs} != {counts[kind]}"
            )
    quoted = quoted_counts(GUIDE.read_text(encoding="utf-8"))
    assert all(quoted[kind] for kind in counts), quoted  # each count is stated, so the check can fail


def test_the_check_reads_the_counts_it_should():
    text = "behind 11 MCP servers (122 tools) and **25 real MCP servers with 359 tools**, the **core 11** (122\ntools)"
    assert quoted_counts(text)["all"] == [(11, 122), (25, 359)] and quoted_counts(text)["core"] == [(11, 122)]


def snippet(page: Path, heading: str) -> str:
    """The first ```python block under ``heading``."""
    section = page.read_text(encoding="utf-8").split(heading, 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_mcp_client_snippet_for_serve_runs(tmp_path):
    """Before: no doc showed a client for `mcp-rl serve` (the heading did not exist)."""
    code = snippet(GUIDE, "### A client for `mcp-rl serve`")
    assert "from mcp import Client" in code
    bin_dir = str(Path(sys.executable).parent)  # where the kit's `mcp-rl` is installed
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, reply = done.stdout.splitlines()[:2]
    assert first.startswith("16 tools: search_tickets")
    assert '"group_by": "status"' in reply and '"total": 40' in reply


def test_train_help_names_the_recipe_the_cpu_proof_runs():
    """Before: `train --help` called `--recipe cpu-demo` "the CPU proof"; make reproduce-cpu-learn runs cpu-learn."""
    from toolkit.cli import train as commands

    make = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    proof = re.search(r"^reproduce-cpu-learn:.*\n\t\$\(BIN\)/(mcp-rl train .*)$", make, re.M).group(1)
    lines = commands.__doc__.splitlines()
    at = next(i for i, line in enumerate(lines) if "the CPU proof" in line)
    assert proof in " ".join(lines[at - 1 : at + 1]), lines[at - 1 : at + 1]
