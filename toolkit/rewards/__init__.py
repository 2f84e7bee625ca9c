"""Rewards: pure functions of (task, trajectory) -> RewardResult(score, breakdown, details).

``get_reward(name, **config)`` builds one by name (``list_rewards()``); ``combine`` weights several;
``binarize`` turns a dense reward into a {0, 1} one;
``as_trl_reward_func`` adapts any of them to TRL's ``reward_funcs``. Ranges:

- ``rubric`` / ``rubric-judge``: fraction of essential rubric items passed, [0, 1] (Scale).
- ``rubric-pass``: 1 when at least ``threshold`` (0.75) of the essential rubric items pass, {0, 1}.
- ``answer``: the rubric over its essential ``answer_correctness`` items only, [0, 1].
- ``finished``: 1 when the episode ended with a reply to the user, not at the turn or token cap, {0, 1}.
- ``outcome``: finishing right and short is strictly best on every task kind; extra calls, the turn cap
  and empty replies cost (docs/rewards.md), [0, 1].
- ``atlas``: MCP-Atlas claim coverage (fulfilled 1 / partial 0.5 / not 0), [0, 1], with pass@0.50/0.75.
- ``prove``: PROVE's programmatic reward as published (PROVE, arXiv 2606.03892), (-inf, 1.3] (negative
  only through the efficiency term).
- ``prove-kit``: the kit's normalised PROVE variant (the cpu-demo recipe's), (-inf, 1].
- ``graduated``: atomic validity + orchestration consistency, [0, 1].
- ``toolrl``: format {0, 1} + correctness [-3, 3], [-3, 4].
- ``bfcl``: BFCL multi-turn state + response check, {0, 1} (``toolkit.rewards.bfcl``, loaded lazily).
"""

from toolkit.rewards.base import Reward, as_reward, binarize, combine, get_reward, list_rewards
from toolkit.rewards.trl import as_trl_reward_func

__all__ = ["Reward", "as_reward", "as_trl_reward_func", "binarize", "combine", "get_reward", "list_rewards"]
