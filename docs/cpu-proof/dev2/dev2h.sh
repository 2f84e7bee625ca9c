#!/bin/bash
# Session 17: the claim's recipe with rft.rounds 2 (the kit's rounds at 0839f2d), on copies of the claim's
# seed runs (warm start and first round kept), each second round evaluated on dev set 2. Alone on the
# cores, from the frozen worktree /work/frozen3. Resumable: a finished round or evaluation is kept.
set -euo pipefail
cd /work/frozen3
export PYTHONPATH=/work/frozen3
PY=.venv/bin/python
C=/work/frozen/runs/claim/grpo
for s in 0 1 2; do
  echo "== $(date -u +%FT%TZ) r2-s$s: the second round"
  $PY runs/rounds2.py runs/r2/seed-$s
  echo "== $(date -u +%FT%TZ) dev 2: r2-round-s$s"
  $PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter r2-round-s$s=runs/r2/seed-$s/rft-2/adapter
  $PY runs/dev2_table.py r2-round-s$s
done
echo "== $(date -u +%FT%TZ) done"
