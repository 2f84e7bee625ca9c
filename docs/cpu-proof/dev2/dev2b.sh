#!/bin/bash
# After the abstain round's fine-tune: stop dev2.sh before its GRPO (dev 2 showed GRPO seed 0 of the claim
# below its round), evaluate the round on dev 2, then a second round from it (runs/iter2.py) and evaluate that.
set -uo pipefail
cd /work/frozen2
export PYTHONPATH=/work/frozen2
PY=.venv/bin/python
A=runs/dev2-arms/abst-s0/run
C=/work/frozen/runs/claim/grpo/seed-0
until [ -f $A/rft/adapter/adapter_model.safetensors ]; do sleep 10; done
sleep 30
PGID=3657
echo "== $(date -u +%FT%TZ) round done; stopping dev2.sh (process group $PGID) before its GRPO"
kill -TERM -- -$PGID; sleep 15; kill -KILL -- -$PGID 2>/dev/null; sleep 2
ps -eo pid,pgid,cmd | awk -v g=$PGID '$2==g' | head
set -e
echo "== $(date -u +%FT%TZ) dev 2: abstain round"
$PY runs/dev2_eval.py claim-round-s0=$C/rft/adapter abst-round-s0=$A/rft/adapter
echo "== $(date -u +%FT%TZ) second round"
$PY runs/iter2.py runs/dev2-arms/iter2-s0/run
echo "== $(date -u +%FT%TZ) dev 2: second round"
$PY runs/dev2_eval.py claim-round-s0=$C/rft/adapter iter2-round-s0=runs/dev2-arms/iter2-s0/run/rft/adapter
echo "== $(date -u +%FT%TZ) done"
