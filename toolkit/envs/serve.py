"""Serve the kit's MCP servers standalone, for any MCP client (MCP Inspector, a desktop assistant, stdio).

    python -m toolkit.envs.serve helpdesk,crm --seed 3 --transport stdio
    mcp-rl serve all --transport http --port 8000        # streamable HTTP at http://127.0.0.1:8000/mcp

Several servers can share one endpoint (comma-separated names, or ``all``): they share one world, so a
ticket created through helpdesk shows up in crm's company view. The resource ``world://diff`` returns
the changes made since the process started, for state-based checks from outside.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the MCP SDK and the servers load on use, so `mcp-rl --help` stays fast
    from mcp.server.mcpserver import MCPServer

    from toolkit.envs.state import WorldState


def parse_servers(spec: str) -> list[str]:
    """``"all"`` or a comma-separated list of server names (unknown names raise KeyError with hints)."""
    from toolkit.envs import registry

    if spec == "all":
        return list(registry.DOMAIN_SERVERS)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    known = registry.server_names()
    for n in names:
        if n not in known:
            raise registry._unknown(n)
    return names


def build_endpoint(names: list[str], seed: int = 0) -> tuple[MCPServer, WorldState]:
    """One MCPServer exposing the tools of ``names`` over one shared world for ``seed``."""
    from mcp.server.mcpserver import MCPServer

    from toolkit.envs import registry
    from toolkit.envs.state import WorldState

    state = WorldState.from_seed(seed)
    if len(names) == 1:
        server = registry.build_server(names[0], state)
    else:
        bfcl = [n for n in names if n not in registry.DOMAIN_SERVERS]
        if bfcl:
            raise ValueError(f"BFCL servers are served one at a time: {bfcl}")
        tools = [t for n in names for t in registry.DOMAIN_SERVERS[n](state).bound_tools()]
        server = MCPServer(
            "mcp-rl", instructions=f"mcp-rl-kit servers: {', '.join(names)} (seed {seed})", tools=tools
        )

    @server.resource("world://diff", mime_type="application/json")
    def world_diff() -> str:
        """Changes to the world since this server started (toolkit.records state-diff format)."""
        return json.dumps(state.diff(), sort_keys=True)

    return server, state


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "server", help="server name, comma-separated names, or 'all' (see `mcp-rl envs list`)"
    )
    parser.add_argument("--seed", type=int, default=0, help="world seed (default 0)")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP host (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")


def serve(
    spec: str, seed: int = 0, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000
) -> None:
    server, _ = build_endpoint(parse_servers(spec), seed)
    if transport == "stdio":
        server.run("stdio")
    elif transport == "http":
        print(f"serving {spec} (seed {seed}) at http://{host}:{port}/mcp", file=sys.stderr)
        server.run("streamable-http", host=host, port=port)
    else:
        raise ValueError(f"unknown transport '{transport}' (stdio or http)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m toolkit.envs.serve", description=__doc__.splitlines()[0])
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    serve(args.server, args.seed, args.transport, args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
