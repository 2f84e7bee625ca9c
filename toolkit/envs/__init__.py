"""MCP environments: the seeded world, domain MCP servers, per-episode isolation, transports."""
