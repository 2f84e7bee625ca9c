"""The command line's shape (issue 50): each of train's former modes and own-server synthesis is a
subcommand with only its own flags (`recipes`, `publish RUN DEST`, `ship RUN DEST`, `synth-own`), and an
old spelling is refused with one line naming the command that replaced it (exit 2), never taken for
something else: `synth --server NAME=COMMAND` used to make tasks for an own server, `synth --server NAME`
filters only `synth graph`."""

from __future__ import annotations

import pytest

from toolkit.cli import build_parser, main
from toolkit.cli import publish as publish_cli
from toolkit.train.config import list_recipes

OLD_SPELLINGS = [
    (["train", "--out", "RUN", "--ship", "data/adapters/x"], "mcp-rl ship RUN DEST"),
    (["train", "--ship", "data/adapters/x", "--out", "RUN"], "mcp-rl ship RUN DEST"),
    (["train", "--out", "RUN", "--publish", "docs/cpu-proof/x"], "mcp-rl publish RUN DEST"),
    (["train", "--list"], "mcp-rl recipes"),
    (["synth", "--server", "memory=node server.js", "--n", "5", "--out", "OUT"], "mcp-rl synth-own --server"),
    (["synth", "--n", "5", "--server", "api=http://127.0.0.1:1/mcp", "--out", "OUT"], "mcp-rl synth-own --server"),
    (["synth", "--server", "helpdesk", "--n", "5", "--out", "OUT"], "mcp-rl synth graph"),
    (["synth", "--json", "--out", "OUT"], "mcp-rl synth graph"),
]  # fmt: skip


def exit_code(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # the parser's refusals
        return exc.code


@pytest.mark.parametrize(("argv", "command"), OLD_SPELLINGS, ids=[" ".join(a[:2]) for a, _ in OLD_SPELLINGS])
def test_an_old_spelling_is_one_line_naming_the_new_command(argv, command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert exit_code(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith(f"mcp-rl {argv[0]}: error: ") and command in err[0], err
    assert not list(tmp_path.iterdir())  # nothing made: no tasks, no run folder


def test_the_old_spellings_are_off_the_help():
    parsers = build_parser()._subparsers._group_actions[0].choices
    train_help, synth_help = parsers["train"].format_help(), parsers["synth"].format_help()
    assert not {"--list", "--publish", "--ship"} & set(train_help.split())
    assert "--env" not in synth_help and "--seed-dir" not in synth_help and "synth-own" in synth_help


def test_each_command_has_only_its_own_flags(capsys):
    parser = build_parser()
    for argv in (
        ["synth", "--env", "K=V"],  # own-server flags belong to synth-own
        ["synth-own", "--server", "a=x", "--out", "OUT", "--preset", "cpu"],  # kit presets to synth
        ["synth-own", "--out", "OUT"],  # a server is what synth-own is for
        ["publish", "RUN"],  # RUN and DEST, both
        ["ship", "--out", "RUN", "DEST"],
        ["recipes", "--out", "RUN"],
    ):
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(argv)
        assert exit_.value.code == 2, argv
    args = parser.parse_args(["ship", "runs/r", "data/adapters/x"])
    assert (args.func, args.run, args.dest) == (publish_cli.ship, "runs/r", "data/adapters/x")
    args = parser.parse_args(["publish", "runs/r", "docs/cpu-proof/x"])
    assert (args.func, args.run, args.dest) == (publish_cli.publish, "runs/r", "docs/cpu-proof/x")
    args = parser.parse_args(
        ["synth-own", "--server", "a=x", "--server", "b=y", "--out", "OUT", "--env", "b:K=V"]
    )
    assert args.server == ["a=x", "b=y"] and args.env == ["b:K=V"] and args.n == 200
    assert parser.parse_args(["synth", "graph", "--server", "helpdesk"]).server == "helpdesk"


def test_recipes_lists_the_shipped_recipes(capsys):
    assert main(["recipes"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == list_recipes() and "cpu-learn" in names
