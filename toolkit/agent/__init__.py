"""The rollout loop: chat rendering, tool-call parsing, MCP calls, truncation, token masks.

- ``loop``: ``RolloutConfig``, ``run_episodes`` (async) / ``rollout`` (sync), ``RolloutStats``.
- ``policies``: ``TransformersPolicy``, ``VLLMPolicy``, ``UnslothPolicy``, ``OpenAIPolicy``,
  ``GoldPolicy`` and ``make_policy(spec)``.
- ``parsing``: ``parse_turn`` for Qwen/Hermes ``<tool_call>`` blocks, with repairs.
- ``chat``: ``ChatFormat``, piecewise template rendering for token-exact trajectories.
- ``testing``: ``FakeToolbox``, ``ScriptedPolicy``, ``check_token_exact`` for tests and benchmarks.

Nothing here imports torch, vllm or unsloth at module level.
"""
