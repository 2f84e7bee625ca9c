"""The ``vllm-server`` backend's protocol against a fake vLLM server (no vLLM needed): the adapter is saved
and loaded under a new name per optimizer step, then the previous one unloaded; rollouts go to
``/v1/completions`` on token ids with the current name and keep the server's token ids and logprobs; a
server that is not up, serves another model or refuses runtime LoRA fails with a clear error. The real
server runs in tests/test_vllm_server_grpo.py."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

from toolkit.agent.loop import RolloutConfig, rollout
from toolkit.agent.testing import fake_opener
from toolkit.records import Task

BASE = "base-model"
LOGITS = [2.0, 1.0, 0.5, 0.0, -1.0, -3.0]  # the fake model's next-token logits (token ids 100..105)


def top_logprobs(mode: str, temperature: float, k: int) -> dict[str, float]:
    """What vLLM's ``--logprobs-mode`` gives as the top-k logprobs of the fake model's next token."""
    scaled = [x / temperature for x in LOGITS] if mode.startswith("processed") else LOGITS
    norm = math.log(sum(math.exp(x) for x in scaled))
    values = scaled if mode.endswith("logits") else [x - norm for x in scaled]
    return {f"token_id:{100 + i}": v for i, v in enumerate(values[:k])}


class FakeVLLM:
    """A loopback HTTP server with the four endpoints the backend uses, recording every request."""

    def __init__(
        self,
        root: str,
        *,
        runtime_lora: bool = True,
        logprobs: bool = True,
        eos: int = 2,
        logprobs_mode: str = "processed_logprobs",
    ):
        self.root, self.runtime_lora, self.logprobs, self.eos = root, runtime_lora, logprobs, eos
        self.logprobs_mode = logprobs_mode
        self.adapters: dict[str, str] = {}
        self.requests: list[tuple[str, dict]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _reply(self, code, body):
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path != "/v1/models":
                    return self._reply(404, {"detail": "Not Found"})
                data = [{"id": BASE, "root": fake.root, "parent": None}]
                data += [{"id": n, "root": p, "parent": BASE} for n, p in fake.adapters.items()]
                self._reply(200, {"object": "list", "data": data})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.requests.append((self.path, body))
                if self.path == "/v1/load_lora_adapter" and fake.runtime_lora:
                    assert (Path(body["lora_path"]) / "adapter_config.json").exists()
                    fake.adapters[body["lora_name"]] = body["lora_path"]
                    return self._reply(200, "Success")
                if self.path == "/v1/unload_lora_adapter" and fake.runtime_lora:
                    fake.adapters.pop(body["lora_name"])
                    return self._reply(200, "Success")
                if self.path == "/v1/completions":
                    if body["model"] not in (BASE, *fake.adapters):
                        return self._reply(404, {"error": {"message": f"model {body['model']} not found"}})
                    ids = [11, 12, fake.eos]
                    logprobs = {"token_logprobs": [-0.5, -1.5, -0.25]} if fake.logprobs else None
                    if body.get("logprobs"):  # top logprobs asked for: the logprobs-mode probe
                        top = top_logprobs(fake.logprobs_mode, body["temperature"], body["logprobs"])
                        ids = [100]
                        logprobs = {"token_logprobs": [top["token_id:100"]], "top_logprobs": [top]}
                    choice = {"text": "x", "token_ids": ids, "logprobs": logprobs, "finish_reason": "stop"}
                    return self._reply(200, {"choices": [choice]})
                self._reply(404, {"detail": "Not Found"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def paths(self) -> list[str]:
        return [p for p, _ in self.requests]


@pytest.fixture
def tiny():
    from peft import LoraConfig, get_peft_model

    from toolkit.models import load_policy

    model, tokenizer = load_policy("tiny-random")
    return get_peft_model(model, LoraConfig(r=4, target_modules="all-linear")), tokenizer


def fake_server(**kwargs):
    return FakeVLLM("tiny-random", **kwargs)  # the base model's root: what the recipe trains


def trainer_at(peft, step, out="unused"):
    return SimpleNamespace(
        state=SimpleNamespace(global_step=step),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
        model=peft,
        args=SimpleNamespace(output_dir=str(out)),
    )


def test_each_optimizer_step_loads_a_new_adapter_then_unloads_the_previous(tiny, tmp_path):
    from toolkit.train.vllm_server_backend import ServerLoraSync

    peft, tokenizer = tiny
    server = fake_server(eos=tokenizer.eos_token_id)
    sync = ServerLoraSync(server.url, tokenizer, tmp_path / "served", prefix="run")
    first = sync(trainer_at(peft, 0))
    assert sync(trainer_at(peft, 0)).model == first.model  # same step: no new load
    later = sync(trainer_at(peft, 1))
    assert server.paths() == ["/v1/load_lora_adapter", "/v1/load_lora_adapter", "/v1/unload_lora_adapter"]
    assert list(server.adapters) == [later.model] and later.model != first.model
    assert [h["step"] for h in sync.history] == [0, 1] and sync.samples_off_policy

    # the rollout goes to /v1/completions on the episode's token ids, with the adapter's name
    task = Task(id="t", split="train", prompt="Add 1 and 3.", servers=["calc"], tools=["add"], seed=0)
    (traj,) = rollout([task], later, RolloutConfig(max_turns=1), open_episode=fake_opener())
    _, body = server.requests[-1]
    assert body["model"] == later.model and body["prompt"] == traj.prompt_ids
    assert body["logprobs"] == 0 and body["return_token_ids"] is True
    assert traj.completion_ids == [11, 12, tokenizer.eos_token_id]
    assert traj.logprobs == [-0.5, -1.5, -0.25]


def test_a_server_without_logprobs_leaves_the_tokens_counted_as_missing(tiny, tmp_path):
    from toolkit.agent.loop import MISSING_LOGPROBS
    from toolkit.agent.policies import VLLMServerPolicy

    _, tokenizer = tiny
    server = fake_server(logprobs=False, eos=tokenizer.eos_token_id)
    policy = VLLMServerPolicy(server.url, BASE, tokenizer)
    task = Task(id="t", split="train", prompt="Add 1 and 3.", servers=["calc"], tools=["add"], seed=0)
    (traj,) = rollout([task], policy, RolloutConfig(max_turns=1), open_episode=fake_opener())
    assert traj.metadata[MISSING_LOGPROBS] == 3


def test_the_backend_checks_the_server_and_evaluates_through_it(tiny, tmp_path):
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import make_backend
    from toolkit.train.vllm_server_backend import ServerError

    peft, tokenizer = tiny
    recipe = recipe_from_dict({"model": "tiny-random", "reward": "rubric"}, name="t")
    server = fake_server(eos=tokenizer.eos_token_id)
    backend = make_backend("vllm-server", recipe, url=server.url)
    assert backend.samples_off_policy
    config = backend.grpo_config(tmp_path / "grpo", "none")
    assert config.vllm_importance_sampling_mode == "token_truncate"
    policy = backend.rollout_policy(trainer_at(peft, 0))
    assert policy.model in server.adapters
    adapter = tmp_path / "adapter"
    peft.save_pretrained(str(adapter))
    evaluated = backend.eval_policy(adapter, "after")
    assert evaluated.name == "after" and server.adapters[evaluated.model] == str(adapter.resolve())
    assert backend.eval_policy(None, "before").model == BASE
    backend.release()
    assert evaluated.model not in server.adapters

    other = FakeVLLM("/somewhere/else")
    with pytest.raises(ServerError, match="start the server on that checkpoint"):
        make_backend("vllm-server", recipe, url=other.url)
    with pytest.raises(ServerError, match="no vLLM server answers"):
        make_backend("vllm-server", recipe, url="http://127.0.0.1:9/v1")
    refusing = fake_server(runtime_lora=False)
    sync = make_backend("vllm-server", recipe, url=refusing.url)
    with pytest.raises(ServerError, match="VLLM_ALLOW_RUNTIME_LORA_UPDATING"):
        sync.rollout_policy(trainer_at(peft, 0, tmp_path / "refused"))


@pytest.mark.parametrize("mode", ["raw_logprobs", "raw_logits", "processed_logits"])
def test_the_backend_refuses_a_server_that_does_not_return_sampling_logprobs(mode):
    """vLLM's default (raw_logprobs) ignores the temperature: every importance ratio would be biased. The
    backend probes the mode before training and names the flag; processed_logprobs passes."""
    from toolkit.train.config import recipe_from_dict
    from toolkit.train.pipeline import make_backend
    from toolkit.train.vllm_server_backend import ServerError

    recipe = recipe_from_dict({"model": "tiny-random", "reward": "rubric"}, name="t")
    server = fake_server(logprobs_mode=mode)
    with pytest.raises(ServerError, match="restart it with --logprobs-mode processed_logprobs"):
        make_backend("vllm-server", recipe, url=server.url)
    probes = [body for path, body in server.requests if path == "/v1/completions"]
    assert [b["temperature"] for b in probes] == [1.0, 0.5] and all(b["model"] == BASE for b in probes)
    make_backend("vllm-server", recipe, url=fake_server().url)  # processed_logprobs: no error


def test_two_trainers_on_one_server_name_their_adapters_apart(tiny, tmp_path):
    """Trainers in containers share process ids (often 1): adapter names must differ all the same, or vLLM
    serves one trainer's rollouts with the other's adapter."""
    from toolkit.train.vllm_server_backend import ServerLoraSync

    peft, tokenizer = tiny
    server = fake_server(eos=tokenizer.eos_token_id)
    one = ServerLoraSync(server.url, tokenizer, tmp_path / "one")
    two = ServerLoraSync(server.url, tokenizer, tmp_path / "two")
    assert one.prefix != two.prefix
    assert one(trainer_at(peft, 0)).model != two(trainer_at(peft, 0)).model
    assert len(server.adapters) == 2


def test_mcp_rl_train_hands_the_server_url_to_the_backend(tmp_path, capsys):
    """``--backend vllm-server --vllm-url URL`` reaches the backend: here a server serving another model,
    refused before anything is written to the run folder."""
    from toolkit.cli import main

    other = FakeVLLM("/somewhere/else")
    out = tmp_path / "run"
    code = main(["train", "--recipe", "cpu-demo", "--out", str(out), "--backend", "vllm-server",
                 "--vllm-url", other.url])  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "the recipe trains 'smollm2-135m'" in err and "/somewhere/else" in err
    assert not out.exists()
