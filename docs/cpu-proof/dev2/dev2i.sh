#!/bin/bash
# Session 17: the mixed two-round arm on seed 0 (runs/rekeep2.py), evaluated on dev set 2. Alone on the
# cores, from the frozen worktree /work/frozen3.
set -euo pipefail
cd /work/frozen3
export PYTHONPATH=/work/frozen3
PY=.venv/bin/python
C=/work/frozen/runs/claim/grpo
echo "== $(date -u +%FT%TZ) r2m-s0: the second round re-kept with the abstains"
$PY runs/rekeep2.py runs/r2m/seed-0
echo "== $(date -u +%FT%TZ) dev 2: r2m-round-s0"
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter r2m-round-s0=runs/r2m/seed-0/rft-2/adapter
$PY runs/dev2_table.py r2m-round-s0
echo "== $(date -u +%FT%TZ) done"
