"""`mcp-rl envs list` and the serve argument parsing."""

from __future__ import annotations

import json

import pytest

from toolkit.cli import main
from toolkit.envs.serve import parse_servers


def test_envs_list_json(capsys):
    assert main(["envs", "list", "--json", "--server", "helpdesk", "--server", "calculator"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in out["servers"]] == ["helpdesk", "calculator"]
    tools = {t["name"]: t for s in out["servers"] for t in s["tools"]}
    assert tools["delete_ticket"]["annotations"]["destructiveHint"] is True
    assert tools["calculate"]["annotations"]["readOnlyHint"] is True
    assert "expression" in tools["calculate"]["input_schema"]["properties"]


def test_envs_list_text(capsys):
    assert main(["envs", "list", "--server", "weather"]) == 0
    out = capsys.readouterr().out
    assert "get_forecast" in out and "1 servers, 8 tools" in out


def test_serve_parses_names_and_suggests_on_typos():
    assert parse_servers("helpdesk,crm") == ["helpdesk", "crm"]
    assert "calculator" in parse_servers("all")
    with pytest.raises(KeyError, match="helpdesk"):
        parse_servers("helpdsk")
