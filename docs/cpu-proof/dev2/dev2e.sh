#!/bin/bash
# Reorder dev2d.sh's tail: once abst-grpo-s0 is evaluated, stop dev2d.sh (it is starting the second round),
# run the claim's seeds 1-2 on dev 2 first (three seeds of round vs round + GRPO), then the second round.
set -uo pipefail
cd /work/frozen2
export PYTHONPATH=/work/frozen2
PY=.venv/bin/python
C=/work/frozen/runs/claim/grpo
until grep -aq 'second round (iter2)' runs/dev2d.log; do sleep 5; done
PG=$(ps -o pgid= -p $(pgrep -f 'bash runs/dev2d.sh') | tr -d ' ')
echo "== $(date -u +%FT%TZ) stopping dev2d.sh (process group $PG)"
kill -TERM -- -$PG; sleep 15; kill -KILL -- -$PG 2>/dev/null; sleep 2
ps -eo pid,pgid,cmd | awk -v g=$PG '$2==g'
set -e
echo "== $(date -u +%FT%TZ) dev 2: the claim's seeds 1 and 2"
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter claim-round-s1=$C/seed-1/rft/adapter claim-grpo-s1=$C/seed-1/adapter \
    claim-round-s2=$C/seed-2/rft/adapter claim-grpo-s2=$C/seed-2/adapter
echo "== $(date -u +%FT%TZ) second round (iter2), resumed"
$PY runs/iter2.py runs/dev2-arms/iter2-s0/run
$PY runs/dev2_eval.py claim-round-s0=$C/seed-0/rft/adapter iter2-round-s0=runs/dev2-arms/iter2-s0/run/rft/adapter
echo "== $(date -u +%FT%TZ) done"
