"""`mcp-rl envs list` and `mcp-rl serve`."""

from __future__ import annotations

import argparse

from toolkit.envs.serve import add_serve_arguments, serve
from toolkit.records import dumps


def _list(args: argparse.Namespace) -> int:
    from toolkit.envs import registry

    names = args.server or registry.server_names()
    specs = registry.tool_specs(names)
    if args.json:
        out = {
            "servers": [
                {
                    "name": n,
                    "tools": [
                        {
                            "name": t.name,
                            "description": t.description,
                            "annotations": t.annotations,
                            "input_schema": t.input_schema,
                        }
                        for t in specs
                        if t.server == n
                    ],
                }  # fmt: skip
                for n in names
            ]
        }
        print(dumps(out, indent=1))
        return 0
    for n in names:
        tools = [t for t in specs if t.server == n]
        print(f"{n} ({len(tools)} tools)")
        for t in tools:
            a = t.annotations
            flags = "read" if a.get("readOnlyHint") else ("write!" if a.get("destructiveHint") else "write")
            first = t.description.strip().splitlines()[0] if t.description.strip() else ""
            print(f"  {t.name:<28} {flags:<7} {first[:70]}")
    print(f"{len(names)} servers, {len(specs)} tools")
    return 0


def _serve(args: argparse.Namespace) -> int:
    serve(args.server, args.seed, args.transport, args.host, args.port)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    envs = subparsers.add_parser("envs", help="the kit's MCP environments")
    envs_sub = envs.add_subparsers(dest="envs_command", metavar="ACTION", required=True)
    p = envs_sub.add_parser("list", help="servers, tools and annotations")
    p.add_argument("--json", action="store_true", help="machine-readable output with input schemas")
    p.add_argument("--server", action="append", help="only this server (repeatable)")
    p.set_defaults(func=_list)

    s = subparsers.add_parser("serve", help="serve MCP servers over stdio or streamable HTTP")
    add_serve_arguments(s)
    s.set_defaults(func=_serve)
