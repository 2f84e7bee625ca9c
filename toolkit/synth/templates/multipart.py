"""Multi-part prompts: two or three sub-requests in one message, like Scale's sample task.

Each part is built by another template on the same world (its core sentence, without opener), then
the parts are joined into one prompt; gold steps are concatenated (reads first, at most one write,
last, so the reads see the state the answers were computed from), answers are prefixed by part.
"""

from __future__ import annotations

from typing import Any

from toolkit.synth.base import Answer, Draft, dress
from toolkit.synth.templates import TEMPLATES, Ctx, Skip, template

INTROS = (
    [
        "I have a few questions:",
        "Could you look into the following for me?",
        "A couple of things, please:",
        "For my weekly review I need:",
    ],
    ["Here is what I need today:"],
)


def _parts(ctx: Ctx) -> list[str]:
    pool = {t: tpl for t, tpl in TEMPLATES.items() if ctx.allows(tpl)}
    reads = sorted(t for t, tpl in pool.items() if tpl.kind in ("lookup", "aggregate") and tpl.calls[1] <= 2)
    writes = sorted(t for t, tpl in pool.items() if tpl.kind == "write" and tpl.calls[1] <= 2)
    n_reads = ctx.rng.randint(1, 2) if ctx.rng.random() < 0.4 else ctx.rng.randint(2, 3)
    chosen = ctx.rng.sample(reads, min(n_reads, len(reads)))
    if writes and (len(chosen) < 2 or ctx.rng.random() < 0.3):
        chosen.append(ctx.choose(writes))
    if len(chosen) < 2:
        raise Skip("not enough parts")
    return chosen


@template("multi_part", "multi_part", ["helpdesk", "crm"], calls=(2, 6))
def multi_part(ctx: Ctx) -> Draft:
    ids = _parts(ctx)
    parts: list[Draft] = []
    phrasings: list[str] = []
    ctx.bare = True
    try:
        for tid in ids:
            tpl = TEMPLATES[tid]
            if tpl.eval_only and ctx.split != "eval":
                raise Skip("held-out part")
            d = tpl.build(ctx)
            parts.append(d)
            phrasings.append(ctx.phrasing)
    finally:
        ctx.bare = False
    n_calls = sum(len(p.steps) for p in parts)
    if n_calls > ctx.max_calls or n_calls < ctx.min_calls:
        raise Skip("too long or too short")
    steps, answers, state, keep, refs = [], [], [], [], []
    recomputes: list[tuple[int, int, str, Any]] = []
    for k, p in enumerate(parts, start=1):
        off = len(steps)
        for s in p.steps:
            s.depends_on = [j + off for j in s.depends_on]
            steps.append(s)
        answers += [
            Answer(f"q{k}_{a.key}", a.value, a.normalize, a.tolerance, a.text, a.intermediate)
            for a in p.answers
        ]
        state += p.state_changes
        keep += p.keep
        refs.append(f"({k}) {p.reference_answer}")
        recomputes.append((off, len(p.steps), f"q{k}_", p.recompute))
    intros_train, intros_eval = INTROS
    intro = ctx.choose(
        intros_eval if ctx.split == "eval" and any(x.startswith("e") for x in phrasings) else intros_train
    )
    body = "\n".join(f"{k}. {p.prompt[0].upper() + p.prompt[1:]}" for k, p in enumerate(parts, start=1))
    prompt = dress(ctx.rng, f"{intro}\n{body}")

    def recompute(results: list[Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for off, n, prefix, fn in recomputes:
            if fn is not None:
                out.update({prefix + k: v for k, v in fn(results[off : off + n]).items()})
        return out

    draft = Draft(
        prompt=prompt,
        servers=sorted({s for p in parts for s in p.servers}),
        steps=steps,
        answers=answers,
        state_changes=state,
        reference_answer=" ".join(refs),
        recompute=recompute,
        keep=keep,
        read_only=all(p.read_only for p in parts),
        metadata={"parts": ids},
    )
    ctx.phrasing = "+".join(phrasings)
    draft.phrasing = ctx.phrasing
    return draft
