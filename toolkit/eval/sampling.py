"""Sampled evaluation: k scored episodes per task at the training temperature, one row each.

Greedy pass@0.75 says what the policy does at its most likely; the mean pass over k sampled episodes says
what it samples, which is what GRPO sharpens (``bench.gain_zones``) and the second half of a learning
claim (``toolkit.eval.claim``)."""

from __future__ import annotations

from toolkit.records import SampleRow


def sample_scores(tasks: list, policy: object, loop: object, n: int) -> list[SampleRow]:
    """``n`` episodes per task with ``policy`` through the agent loop, each scored with the rubric (the
    rows of ``samples.jsonl``). A line on stderr as the episodes finish ("[sampled] 80/800 episodes, 1.2
    s/episode"): 800 episodes run for minutes. Most episodes failed on the policy's backend: EndpointDown
    (a table of zeros would read as a model that never passes)."""
    from toolkit.agent.loop import policy_failure, rollout, watch_episodes
    from toolkit.eval.metrics import first_call_well_formed
    from toolkit.eval.watch import Progress, check_endpoint
    from toolkit.rewards import get_reward

    rubric = get_reward("rubric")
    with Progress(len(tasks) * n, "sampled") as progress, watch_episodes(lambda _: progress.episode()):
        trajs = rollout(tasks, policy, loop, n=n)
    reasons = [r for r in map(policy_failure, trajs) if r is not None]
    check_endpoint(reasons, len(trajs), "policy endpoint", "sampled")
    rows = []
    for task, traj in zip([t for t in tasks for _ in range(n)], trajs, strict=True):
        graded = rubric(task, traj)
        rows.append(
            SampleRow(
                task_id=task.id,
                category=task.metadata.get("kind"),
                score=float(graded.score),
                answer_failed=bool(graded.details.get("answer_failed")),
                stop_reason=traj.stop_reason,
                first_call_well_formed=first_call_well_formed(traj),
            )
        )
    return rows
