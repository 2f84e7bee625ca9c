"""A run stops the engine its backend started, so that the process ends when the run does.

Before: the vLLM backend's rollout engine stayed up after ``run_recipe`` returned, and nothing stopped it;
in a spawned process (``bench.reproduce_claim``'s stages) ``multiprocessing``'s exit then waited on the
engine's non-daemon process, and GRPO seed 0 of issue 49's claim sat idle 17 minutes after its last line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from toolkit.train.config import recipe_from_dict

TINY = {"model": "tiny-random", "reward": "rubric"}


def fake_llm(stopped: list[str], name: str) -> SimpleNamespace:
    core = SimpleNamespace(shutdown=lambda: stopped.append(name))
    return SimpleNamespace(llm_engine=SimpleNamespace(engine_core=core))


def test_the_vllm_backend_stops_the_engine_it_started_and_not_one_handed_in(monkeypatch):
    from toolkit.train import vllm_backend

    stopped: list[str] = []
    monkeypatch.setattr(vllm_backend, "start_engine", lambda model, **kw: (fake_llm(stopped, "own"), None))
    recipe = recipe_from_dict({**TINY, "backend": "vllm"}, "t")
    backend = vllm_backend.VLLMBackend(recipe)
    backend.close()  # nothing started: nothing to stop
    assert stopped == []
    assert backend.engine[0] is not None
    backend.close()
    assert stopped == ["own"] and backend._engine is None
    backend.close()  # twice is harmless
    assert stopped == ["own"]

    handed_in = vllm_backend.VLLMBackend(recipe, engine=(fake_llm(stopped, "caller's"), None))
    handed_in.close()
    assert stopped == ["own"]  # the caller's engine is the caller's to stop


class Closing:
    name = "fake"

    def __init__(self):
        self.closed = 0

    def close(self):
        self.closed += 1


@pytest.mark.parametrize("stage_fails", [False, True])
def test_run_recipe_closes_the_backend_it_made_when_the_run_ends_or_fails(monkeypatch, tmp_path, stage_fails):
    from toolkit.train import pipeline

    made: list[Closing] = []
    monkeypatch.setattr(
        pipeline, "make_backend", lambda name, recipe, **kw: made.append(Closing()) or made[-1]
    )

    def stages(*args, **kwargs):
        if stage_fails:
            raise RuntimeError("a stage failed")
        return {}

    monkeypatch.setattr(pipeline, "run_stages", stages)
    recipe = recipe_from_dict(TINY, "t")
    if stage_fails:
        with pytest.raises(RuntimeError, match="a stage failed"):
            pipeline.run_recipe(recipe, tmp_path / "run", backend="cpu")
    else:
        pipeline.run_recipe(recipe, tmp_path / "run", backend="cpu")
    assert [b.closed for b in made] == [1]


def test_run_recipe_leaves_a_backend_handed_in_to_its_caller(monkeypatch, tmp_path):
    from toolkit.train import pipeline

    monkeypatch.setattr(pipeline, "run_stages", lambda *args, **kwargs: {})
    mine = Closing()
    pipeline.run_recipe(recipe_from_dict(TINY, "t"), tmp_path / "run", backend=mine)
    assert mine.closed == 0


def test_the_claim_evaluator_closes_its_backend_on_leaving(monkeypatch):
    from toolkit.train import claim_eval, pipeline

    made: list[Closing] = []
    monkeypatch.setattr(
        pipeline, "make_backend", lambda name, recipe, **kw: made.append(Closing()) or made[-1]
    )
    with claim_eval.ClaimEvaluator(recipe_from_dict(TINY, "t"), samples=0, backend="cpu") as evaluator:
        assert evaluator.backend is made[0]
    assert made[0].closed == 1 and evaluator._backend is None
    with claim_eval.ClaimEvaluator(recipe_from_dict(TINY, "t"), samples=0, backend="cpu"):
        pass  # never used: nothing made, nothing to close
    assert len(made) == 1


def test_every_registered_backend_has_close():
    import importlib

    from toolkit.train.backends import BACKENDS

    for name, entry in BACKENDS.items():
        cls = getattr(importlib.import_module(entry.module), entry.cls)
        assert callable(getattr(cls, "close", None)), f"backend {name!r} ({entry.cls}) has no close()"


def test_the_unsloth_backend_stops_its_fast_inference_engine():
    from toolkit.train.unsloth_backend import UnslothBackend

    stopped: list[str] = []
    backend = UnslothBackend(recipe_from_dict({**TINY, "backend": "gpu"}, "t"), fast_inference=True)
    backend.model = SimpleNamespace(vllm_engine=fake_llm(stopped, "unsloth"))
    backend.close()
    assert stopped == ["unsloth"] and backend.model is None
    backend.close()
    assert stopped == ["unsloth"]
