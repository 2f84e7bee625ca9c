#!/bin/bash
# Issue 49 lever: the outcome reward without its process term (weights outcome 0.60, process 0), GRPO's
# 8 steps from each seed's wide RFT round (rft.keep_no_call=false), paired with rftgrpo-sS-call.
set -euo pipefail
cd /work/frozen
export PYTHONPATH=/work/frozen
PY=.venv/bin/python
ROOT=runs/sweep-noproc
mkdir -p $ROOT/logs
[ -d $ROOT/warm ] || cp -a runs/sweep-rftgrpo/warm $ROOT/warm
W="reward_config.outcome.weights.outcome=0.6,reward_config.outcome.weights.process=0"
for s in 0 1; do
  arm=noproc-s$s-call
  if [ ! -d $ROOT/$arm/run ]; then mkdir -p $ROOT/$arm; cp -a runs/sweep-call/rft-all320-s$s-call/run $ROOT/$arm/run; fi
  echo "== $(date -u +%FT%TZ) $arm: GRPO"
  .venv/bin/mcp-rl train --out $ROOT/$arm/run --resume --allow-recipe-change \
     --set reward_config.outcome.weights.outcome=0.6 --set reward_config.outcome.weights.process=0
  echo "== $(date -u +%FT%TZ) $arm: dev evaluation"
  $PY -m bench.lever_sweep $ROOT --out $ROOT/sweep.json \
     --set tasks=runs/regrade-cpu-learn/tasks/train.jsonl --set eval_tasks=runs/regrade-cpu-learn/tasks/eval.jsonl \
     --arm $arm:rft.num_generations=2,rft.keep_no_call=false,seed=$s,rollout.seed=$s,$W --parallel 1
done
echo "== $(date -u +%FT%TZ) done"
