"""Task and rubric synthesis grounded in live server state, validated by replay."""
