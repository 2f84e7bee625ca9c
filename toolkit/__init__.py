"""mcp-rl-kit: train LLMs on multi-turn tool use over MCP servers with GRPO.

Importing the package is cheap and never imports torch, unsloth or vllm; each area loads what it
needs when used.
"""

__version__ = "0.1.0"
