"""Rewards: pure functions of (task, trajectory) -> score + breakdown, usable as TRL reward_funcs."""
