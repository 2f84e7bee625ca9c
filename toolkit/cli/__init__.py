"""`mcp-rl`: the kit's command line.

The top floor of the kit: each module of this package registers its subcommands (``register(subparsers)``)
and calls down into the areas (envs, synth, rewards, agent, train, eval), which never import it back. The
modules import heavy libraries (torch, transformers) only inside their handlers, so `mcp-rl --help` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn

# What a bug raises (not a refusal the kit words itself): the one line says so and names Python's error.
BUG_ERRORS = (AssertionError, AttributeError, KeyError, IndexError, NameError, TypeError)

# Modules that register subcommands, in the order `mcp-rl --help` lists them.
COMMAND_MODULES = (
    "toolkit.cli.envs",  # envs, serve
    "toolkit.cli.synth",  # synth (generate, graph): the kit's own domains
    "toolkit.cli.synth_own",  # synth-own: tasks for your own MCP server
    "toolkit.cli.rollout",  # rollout
    "toolkit.cli.score",  # score, rescore
    "toolkit.cli.train",  # train, recipes
    "toolkit.cli.publish",  # publish, ship: a finished run's record and adapters
    "toolkit.cli.eval",  # eval, compare, plot
    "toolkit.cli.atlas",  # atlas
    "toolkit.notebooks",  # notebooks
)


class Parser(argparse.ArgumentParser):
    """Every command's parser (subparsers inherit the class): a bad command line is one line, the
    problem and where help is, not the problem after a screenful of usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def moved_option(parser: argparse.ArgumentParser, option: str, command: str, nargs: int | str = "?") -> None:
    """An old spelling of what is now a command of its own (``train --ship`` is ``ship``): kept off the
    help, and refused with one line naming the new command (exit 2), so it never means something else."""

    class Moved(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None) -> NoReturn:
            parser.exit(2, f"{parser.prog}: error: {option_string} is a command of its own now: {command}\n")

    parser.add_argument(option, nargs=nargs, action=Moved, default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    from toolkit import __version__

    parser = Parser(prog="mcp-rl", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one clear line for users; MCP_RL_DEBUG=1 shows the traceback
        import os

        if os.environ.get("MCP_RL_DEBUG"):
            raise
        print(f"mcp-rl {args.command}: error: {error_line(exc)}", file=sys.stderr)
        return 1


def error_line(exc: BaseException) -> str:
    """An exception as one plain line: its message (``FILE: No such file or directory`` for a missing
    file), the first line of a long one, and Python's class name only for what reads as a bug."""
    if isinstance(exc, BUG_ERRORS):
        return f"internal error ({type(exc).__name__}: {exc}); MCP_RL_DEBUG=1 shows the traceback"
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    lines = str(exc).strip().splitlines() or [type(exc).__name__]
    more = f" ({len(lines) - 1} more lines: MCP_RL_DEBUG=1 shows them)" if len(lines) > 1 else ""
    return lines[0].strip() + more
