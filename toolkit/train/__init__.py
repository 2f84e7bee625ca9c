"""Model loading (embedded default), SFT warm start, GRPO through TRL, recipes."""
