"""Optional prompt paraphrase through any OpenAI-compatible endpoint (off by default).

Templates already vary their wording; a paraphrase model adds more. A paraphrase is accepted only
when it keeps every grounded string (ids, names, dates, numbers) the answers depend on; otherwise the
template's prompt stays. Endpoints are not bit-deterministic, so paraphrased output is reproducible
only as far as the endpoint is (temperature 0 and a fixed seed are requested).
"""

from __future__ import annotations

import os
from typing import Any

INSTRUCTION = (
    "Rewrite the user's request below in different words, as a person would type it to an assistant. "
    "Keep every name, id, date, number and quoted value exactly as written. Keep all sub-questions. "
    "Reply with the rewritten request only."
)


def make_client(base_url: str | None = None) -> Any:
    """An ``openai.OpenAI`` client for ``base_url`` (default $OPENAI_BASE_URL; key from $OPENAI_API_KEY)."""
    from openai import OpenAI

    return OpenAI(
        base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
        api_key=os.environ.get("OPENAI_API_KEY", "none"),
    )


def paraphrase(prompt: str, keep: list[str], client: Any, model: str, seed: int = 0) -> tuple[str, bool]:
    """(new prompt, accepted). Any endpoint error or a dropped grounded string keeps the original."""
    try:
        reply = client.chat.completions.create(
            model=model,
            messages=[{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": prompt}],
            temperature=0,
            seed=seed,
            max_tokens=400,
        )
        text = (reply.choices[0].message.content or "").strip()
    except Exception:
        return prompt, False
    if not text or any(k and k not in text for k in keep):
        return prompt, False
    return text, True
