"""Evaluation suites, metrics with confidence intervals, plots, trajectory viewer."""
