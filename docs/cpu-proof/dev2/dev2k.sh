#!/bin/bash
# Session 17: the recipe's 8 GRPO steps from the second abstain-keeping round of seed 0 (iter2-s0; GRPO's
# rollout seed is that run's, 100): does GRPO undo the rounds' answers without a needed call, and what does it
# cost? Then its dev-2 evaluation. Alone on the cores, from the frozen worktree; resumable (checkpoints every 2 steps).
set -euo pipefail
cd /work/frozen2
export PYTHONPATH=/work/frozen2
PY=.venv/bin/python
C=/work/frozen/runs/claim/grpo
A=runs/dev2-arms/iter2-s0/run
echo "== $(date -u +%FT%TZ) iter2-s0: GRPO from the second round"
.venv/bin/mcp-rl train --out $A --resume
echo "== $(date -u +%FT%TZ) dev 2: iter2-grpo-s0"
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter iter2-grpo-s0=$A/adapter
$PY runs/dev2_table.py iter2-grpo-s0
echo "== $(date -u +%FT%TZ) done"
