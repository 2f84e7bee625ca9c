#!/bin/bash
# Outside the protocol (dev set 2 is the tuning set): GRPO over protocol v2's kept two rounds of seed S,
# with the recipe's GRPO stage changed by the --set items after `--`; then the adapter on dev set 2.
# usage, from the repository root of a frozen worktree, alone on the cores (resumable: run it again):
#   bash docs/cpu-proof/claim-v2/grpo_arms.sh NAME "S [S ...]" -- --set 'grpo_task_kinds=[lookup, write]' \
#       --set 'grpo_sampling.kind_weights={lookup: 1.0, write: 1.0}' [--max-steps N]
# (kind_weights must name only kinds GRPO samples: the trainer refuses weights for kinds it has no task of.)
# The run's root runs/claim-v2 is restored from docs/cpu-proof/claim-v2/kept when this machine lacks it.
set -euo pipefail
NAME=$1 SEEDS=$2
shift 2
[ "${1:-}" = "--" ] && shift
export PYTHONPATH=$PWD
PY=.venv/bin/python
[ -d runs/claim-v2/warm_start ] || $PY -c "from pathlib import Path; from bench.reproduce_claim import \
restore_kept; print(len(restore_kept(Path('runs/claim-v2'), Path('docs/cpu-proof/claim-v2/kept'))), 'files restored')"
for s in $SEEDS; do
  A=runs/arms/$NAME-s$s
  if [ ! -d $A ]; then
    mkdir -p $A
    (cd runs/claim-v2/grpo/seed-$s && cp -a recipe.json sft tasks rft rft-2 summary.json metrics.jsonl "$OLDPWD/$A/")
  fi
  echo "== $(date -u +%FT%TZ) $NAME-s$s: GRPO over seed $s's two rounds, $*"
  $PY -m toolkit.cli train --out $A --resume --allow-recipe-change "$@"
  echo "== $(date -u +%FT%TZ) dev 2: $NAME-s$s"
  $PY docs/cpu-proof/claim-v2/dev2_look.py abst2-s0=runs/claim-v2/grpo/seed-0/rft-2/adapter $NAME-s$s=$A/adapter
done
echo "== $(date -u +%FT%TZ) done"
