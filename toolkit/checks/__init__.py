"""The checks every layer shares: value normalisation, the answer check that requires commitment, and
the one interpreter of rubric ``state`` checks. Synthesis validates a task's gold with them and the
rewards grade episodes with them, so a task is kept by the same rule it is later graded by."""
