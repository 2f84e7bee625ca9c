# Print the run's progress every 45 s for up to $1 s (or until it is done), then pack its record into $OUT.
END=$((SECONDS + $1)); R=/tmp/r16
while [ $SECONDS -lt $END ]; do
  sleep 45
  echo "== $(date +%T) grpo steps logged: $(grep -c '"phase": "grpo"' $R/metrics.jsonl 2>/dev/null); evals: $(ls $R/eval/*/results.json $R/eval/curve/*/results.json 2>/dev/null | wc -l)"
  tail -n 3 /tmp/watch.log; grep -av "it/s\]\|Warning\|warn" /tmp/r16.log | tail -n 3
  [ -f $R/.all-done ] && break
done
nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv
tar czf $OUT/r16.tgz -C /tmp --exclude='checkpoint-*' --exclude='*.safetensors' --exclude='*.pt' --exclude='*.pth' r16
cp /tmp/r16.log /tmp/watch.log $OUT/ 2>/dev/null
ls -la $OUT
