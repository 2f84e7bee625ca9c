#!/bin/bash
# Issue 49 lever: the outcome reward with a dearer extra call, GRPO's
# 8 steps from each seed's wide RFT round (rft.keep_no_call=false), paired with rftgrpo-sS-call.
set -euo pipefail
cd /work/frozen
export PYTHONPATH=/work/frozen
PY=.venv/bin/python
ROOT=runs/sweep-dearcall
mkdir -p $ROOT/logs
[ -d $ROOT/warm ] || cp -a runs/sweep-rftgrpo/warm $ROOT/warm
W="reward_config.outcome.extra_call_factor=0.25"
for s in ${SEEDS:-0 1}; do
  arm=dearcall-s$s-call
  if [ ! -d $ROOT/$arm/run ]; then mkdir -p $ROOT/$arm; cp -a runs/sweep-call/rft-all320-s$s-call/run $ROOT/$arm/run; fi
  echo "== $(date -u +%FT%TZ) $arm: GRPO"
  .venv/bin/mcp-rl train --out $ROOT/$arm/run --resume --allow-recipe-change \
     --set reward_config.outcome.extra_call_factor=0.25
  echo "== $(date -u +%FT%TZ) $arm: dev evaluation"
  $PY -m bench.lever_sweep $ROOT --out $ROOT/sweep.json \
     --set tasks=runs/regrade-cpu-learn/tasks/train.jsonl --set eval_tasks=runs/regrade-cpu-learn/tasks/eval.jsonl \
     --arm $arm:rft.num_generations=2,rft.keep_no_call=false,seed=$s,rollout.seed=$s,$W --parallel 1
done
echo "== $(date -u +%FT%TZ) done"
