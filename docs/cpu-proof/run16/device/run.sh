# The cpu-demo recipe end to end on one GPU with the transformers backend, MAX GRPO steps, every SAVE
# steps a checkpoint evaluated on the dev set by watch.py while training goes on.
R=$1; MAX=$2; SAVE=$3; HERE=$(dirname "$0")
SETS="--set grpo.save_steps=$SAVE --set grpo.save_total_limit=null"
python3 "$HERE/watch.py" "$R" "$MAX" > /tmp/watch.log 2>&1 &
python3 -m toolkit.cli train --recipe cpu-demo --backend cpu --out "$R" --max-steps "$MAX" $SETS
touch "$R/.grpo-done"
wait
python3 -m toolkit.cli train --recipe cpu-demo --backend cpu --out "$R" --resume --evaluate --curve --max-steps "$MAX" $SETS
touch "$R/.all-done"
