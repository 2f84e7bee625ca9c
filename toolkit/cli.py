"""`mcp-rl`: the kit's command line.

Each area registers its own subcommands (``register(subparsers)`` in ``toolkit/<area>/commands.py``)
and imports heavy libraries (torch, transformers) only inside its handlers, so `mcp-rl --help` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules that register subcommands, in the order `mcp-rl --help` lists them.
COMMAND_MODULES = (
    "toolkit.envs.commands",  # envs, serve
    "toolkit.synth.commands",  # synth
    "toolkit.agent.commands",  # rollout
    "toolkit.rewards.commands",  # score
    "toolkit.train.commands",  # train
    "toolkit.eval.commands",  # eval, plot
    "toolkit.eval.atlas_commands",  # atlas
    "toolkit.notebooks",  # notebooks
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mcp-rl", description=__doc__.splitlines()[0])
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
        print(f"mcp-rl {args.command}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
