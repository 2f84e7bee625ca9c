#!/bin/bash
# Issue 49 lever: half the GRPO steps (4 of the recipe's 8, constant learning rate: the same first 4 steps
# as the 8-step runs of the same seed) from each seed's wide RFT round, paired with rftgrpo-sS-call.
set -euo pipefail
cd /work/frozen
export PYTHONPATH=/work/frozen
PY=.venv/bin/python
ROOT=runs/sweep-steps4
mkdir -p $ROOT/logs
[ -d $ROOT/warm ] || cp -a runs/sweep-rftgrpo/warm $ROOT/warm
for s in ${SEEDS:-0 1}; do
  arm=steps4-s$s-call
  if [ ! -d $ROOT/$arm/run ]; then mkdir -p $ROOT/$arm; cp -a runs/sweep-call/rft-all320-s$s-call/run $ROOT/$arm/run; fi
  echo "== $(date -u +%FT%TZ) $arm: GRPO"
  .venv/bin/mcp-rl train --out $ROOT/$arm/run --resume --allow-recipe-change --set grpo.max_steps=4 --set grpo.save_steps=4
  echo "== $(date -u +%FT%TZ) $arm: dev evaluation"
  $PY -m bench.lever_sweep $ROOT --out $ROOT/sweep.json \
     --set tasks=runs/regrade-cpu-learn/tasks/train.jsonl --set eval_tasks=runs/regrade-cpu-learn/tasks/eval.jsonl \
     --arm $arm:rft.num_generations=2,rft.keep_no_call=false,seed=$s,rollout.seed=$s,grpo.max_steps=4,grpo.save_steps=4 --parallel 1
done
echo "== $(date -u +%FT%TZ) done"
