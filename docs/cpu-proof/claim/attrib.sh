#!/bin/bash
# After the claim: which stage lost the abstains? The warm start, each seed's RFT round (no GRPO) and each
# seed's GRPO adapter, greedy, on test seed 3101's tasks whose gold makes no call (abstain, clarify).
set -euo pipefail
cd /work/frozen
R=runs/claim; OUT=runs/claim-attrib
mkdir -p $OUT
python3 -c "
import json
rows=[l for l in open('$R/tasks/test-seed3101.jsonl') if json.loads(l)['metadata']['kind'] in ('abstain','clarify')]
open('$OUT/nocall-3101.jsonl','w').writelines(rows); print(len(rows), 'no-call tasks')"
ev() { [ -f $OUT/$1/results.json ] || /work/main/.venv/bin/mcp-rl eval --policy vllm:smollm2-135m --adapter $2 \
  --recipe $R/grpo/seed-0/recipe.json --suite kit-eval --tasks $OUT/nocall-3101.jsonl --label $1 --out $OUT/$1 --json | tail -3; }
ev warm_start $R/warm_start
for s in 0 1 2; do ev rft-seed$s $R/grpo/seed-$s/rft/adapter; done
