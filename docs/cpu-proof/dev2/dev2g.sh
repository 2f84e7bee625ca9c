#!/bin/bash
# Session 17: the two-round recipe (abstain-keeping round, then a second round from it) for the claim's
# seeds 1 and 2, as seed 0 ran it (rekeep.py on the claim's samples, then iter2.py with rollout seed 100+S);
# each second round evaluated on dev 2, then each first round. Alone on the cores, from the frozen worktree.
set -euo pipefail
cd /work/frozen2
export PYTHONPATH=/work/frozen2
PY=.venv/bin/python
C=/work/frozen/runs/claim/grpo
for s in 1 2; do
  A=runs/dev2-arms/abst-s$s/run
  if [ ! -d $A ]; then
    mkdir -p $A/rft
    (cd $C/seed-$s && cp -a recipe.json sft tasks /work/frozen2/$A/ && cp rft/samples.jsonl /work/frozen2/$A/rft/)
  fi
  echo "== $(date -u +%FT%TZ) abst-s$s: the round re-kept"
  $PY runs/rekeep.py $A
  echo "== $(date -u +%FT%TZ) iter2-s$s: the second round"
  $PY runs/iter2.py runs/dev2-arms/iter2-s$s/run $A $((100 + s))
  echo "== $(date -u +%FT%TZ) dev 2: iter2-round-s$s"
  $PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter iter2-round-s$s=runs/dev2-arms/iter2-s$s/run/rft/adapter
done
echo "== $(date -u +%FT%TZ) dev 2: the first rounds of seeds 1 and 2"
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter abst-round-s1=runs/dev2-arms/abst-s1/run/rft/adapter \
    abst-round-s2=runs/dev2-arms/abst-s2/run/rft/adapter
echo "== $(date -u +%FT%TZ) done"
