#!/bin/bash
# GRPO seed 0 from the abstain-keeping round (does GRPO undo the round's drift to answering without a
# needed call, and keep the abstains?); then the second round (iter2) resumed; then the claim's seeds 1-2
# on dev 2. Alone on the cores, from the frozen worktree.
set -euo pipefail
cd /work/frozen2
export PYTHONPATH=/work/frozen2
PY=.venv/bin/python
A=runs/dev2-arms/abst-s0/run
C=/work/frozen/runs/claim/grpo
echo "== $(date -u +%FT%TZ) abst-s0: GRPO from the abstain round"
.venv/bin/mcp-rl train --out $A --resume
echo "== $(date -u +%FT%TZ) dev 2: abst-grpo-s0"
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter abst-grpo-s0=$A/adapter
echo "== $(date -u +%FT%TZ) second round (iter2), resumed"
$PY runs/iter2.py runs/dev2-arms/iter2-s0/run
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter iter2-round-s0=runs/dev2-arms/iter2-s0/run/rft/adapter
echo "== $(date -u +%FT%TZ) dev 2: the claim's seeds 1 and 2"
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter claim-round-s1=$C/seed-1/rft/adapter claim-grpo-s1=$C/seed-1/adapter \
    claim-round-s2=$C/seed-2/rft/adapter claim-grpo-s2=$C/seed-2/adapter
echo "== $(date -u +%FT%TZ) done"
