"""Library log noise off, unless asked for (``--verbose`` or ``MCP_RL_VERBOSE=1``).

A training run on the CPU printed vLLM's and TRL's warnings (TRL's vLLM version check five times),
Triton's INFO line, transformers' tokenizer notes and progress bars for every dataset pass, around the
kit's own lines; in notebooks they end up in the published outputs. The kit's own lines and errors stay:
only the libraries' loggers drop below ERROR, and only the libraries' Python warnings are filtered.
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

VERBOSE_ENV = "MCP_RL_VERBOSE"
LIBRARIES = ("vllm", "transformers", "trl", "peft", "accelerate", "datasets", "torch", "unsloth")
# read at import (vLLM's also by its engine processes, which inherit the environment), so set before
ENVIRONMENT = {
    "VLLM_LOGGING_LEVEL": "ERROR",
    "TRANSFORMERS_VERBOSITY": "error",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",  # transformers' "Loading weights" bar follows this one
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
    "TOKENIZERS_PARALLELISM": "false",  # its fork warning
}


def verbose_requested() -> bool:
    return os.environ.get(VERBOSE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def quiet_libraries(verbose: bool | None = None) -> bool:
    """Turn the libraries' logging and warnings down to errors; returns whether it did. ``verbose``
    (default: ``$MCP_RL_VERBOSE``) leaves everything as the libraries set it. Values already in the
    environment are kept, so ``VLLM_LOGGING_LEVEL=INFO`` still shows vLLM's lines."""
    if verbose is None:
        verbose = verbose_requested()
    if verbose:
        return False
    for key, value in ENVIRONMENT.items():
        os.environ.setdefault(key, value)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(logging.ERROR)
    pattern = "|".join(LIBRARIES)
    warnings.filterwarnings("ignore", module=rf"({pattern})(\.|$)")
    if "transformers" in sys.modules:  # imported before the environment was set: tell it directly
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    if "datasets" in sys.modules:
        import datasets

        datasets.disable_progress_bars()
    return True
