#!/bin/bash
# Issue 49, sixteenth session: dev set 2 (seed 5201, 300 tasks, the test sets' kind mix); the claim's seed-0
# round and GRPO adapters on it; then the round re-kept with rft.keep_no_call_if_gold_has_none (seed 0's
# samples, not drawn again), its GRPO, both on dev 2. Alone on the cores, from the frozen worktree.
set -euo pipefail
cd /work/frozen2
export PYTHONPATH=/work/frozen2
PY=.venv/bin/python
C=/work/frozen/runs/claim/grpo/seed-0
A=runs/dev2-arms/abst-s0/run
echo "== $(date -u +%FT%TZ) at $(git rev-parse --short HEAD) on$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
$PY runs/dev2_eval.py claim-round-s0=$C/rft/adapter claim-grpo-s0=$C/adapter
echo "== $(date -u +%FT%TZ) abst-s0: the round re-kept, then GRPO"
.venv/bin/mcp-rl train --out $A --resume --allow-recipe-change --set rft.keep_no_call_if_gold_has_none=true
echo "== $(date -u +%FT%TZ) abst-s0: dev 2"
$PY runs/dev2_eval.py claim-round-s0=$C/rft/adapter abst-round-s0=$A/rft/adapter abst-grpo-s0=$A/adapter
echo "== $(date -u +%FT%TZ) done"
