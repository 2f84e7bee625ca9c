#!/bin/bash
# Session 17: the second round's dev-2 evaluation.
set -euo pipefail
cd /work/frozen2
export PYTHONPATH=/work/frozen2
PY=.venv/bin/python
C=/work/frozen/runs/claim/grpo
echo "== $(date -u +%FT%TZ) dev 2: the second round (iter2)"
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter iter2-round-s0=runs/dev2-arms/iter2-s0/run/rft/adapter
$PY runs/dev2_table.py iter2-round-s0
echo "== $(date -u +%FT%TZ) done"
