"""The rollout loop: chat rendering, tool-call parsing, MCP calls, truncation, token masks."""
