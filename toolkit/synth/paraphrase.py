"""Optional prompt paraphrase through any OpenAI-compatible endpoint (off by default).

Templates already vary their wording; a paraphrase model adds more. A paraphrase is accepted only
when it keeps every grounded string (ids, names, dates, numbers) the answers depend on; otherwise the
template's prompt stays. Endpoints are not bit-deterministic, so paraphrased output is reproducible
only as far as the endpoint is (temperature 0 and a fixed seed are requested).
"""

from __future__ import annotations

from typing import Any

from toolkit.endpoint import Endpoint, chat

INSTRUCTION = (
    "Rewrite the user's request below in different words, as a person would type it to an assistant. "
    "Keep every name, id, date, number and quoted value exactly as written. Keep all sub-questions. "
    "Reply with the rewritten request only."
)


def rewriter_endpoint(model: str, base_url: str | None = None) -> Endpoint:
    """The endpoint of a model that rewrites prompts (the paraphraser, the own-server teacher):
    ``base_url`` or $OPENAI_BASE_URL, the key from $OPENAI_API_KEY; up to 10 minutes a try, 2 retries."""
    return Endpoint(base_url, model, timeout=600.0, retries=2)


def make_client(base_url: str | None = None) -> Any:
    """An ``openai.OpenAI`` client for a rewriter at ``base_url`` (the client does not depend on the model)."""
    return rewriter_endpoint("", base_url).client()


def paraphrase(prompt: str, keep: list[str], client: Any, model: str, seed: int = 0) -> tuple[str, bool]:
    """(new prompt, accepted). Any endpoint error or a dropped grounded string keeps the original."""
    messages = [{"role": "system", "content": INSTRUCTION}, {"role": "user", "content": prompt}]
    try:
        reply = chat(client, rewriter_endpoint(model), messages, temperature=0, seed=seed, max_tokens=400)
    except Exception:  # noqa: BLE001 (an endpoint gone after its retries, or a client that broke)
        return prompt, False
    text = reply.text.strip()
    if not text or any(k and k not in text for k in keep):
        return prompt, False
    return text, True
