"""Study tools: code that examines the rewards rather than being one.

- ``drift``: scripted episodes of every task kind, scored by the old and the new reward (reward drift)
- ``perturb``: a gold trajectory perturbed the way a weak policy goes wrong, and named scenarios
- ``rescore``: a run's rollout log scored again with several rewards (``mcp-rl rescore``)
- ``calibration``: a grader's agreement with the programmatic rubric (Cohen's kappa)
- ``examples``: hand-written example tasks and their gold trajectories
- ``comparisons``: the rewards side by side, as notebook 03 shows them

None of them scores an episode for training or evaluation, so none is a reward: they read the rewards
(``toolkit.rewards``) and only the command line, the notebooks, the benchmarks and the tests read them.
"""
