#!/usr/bin/env bash
# One proxy run of the hour's tiny Shakespeare file (configs/shakespeare_hour.toml, README): its
# first STEPS steps (default 900) on NP MPI ranks (default 1: two proxies at a time, one per
# core; NP=2 computes exactly the full run's first steps, dropout masks included), then the
# held-out loss (nats per character, every character of the last 10%) of the checkpoints every
# EVERY steps (default 300). Training runs with the file's own --steps, so the cosine schedule
# is the full run's; it is stopped once step STEPS is saved. Its log also has the periodic
# held-out loss, as the full run's log has. A fixed number of steps, not of
# seconds, makes the result independent of what else the machine is doing.
#
#   bash benchmarks/shakespeare_proxy.sh NAME [--option value ...]   # options replace the file's
#   bash benchmarks/shakespeare_proxy.sh nodrop --dropout 0
#
# CONFIG: the configuration file (default configs/shakespeare_hour.toml); OUT: where runs, logs
# and the one-line results (OUT/table.txt) go (default runs/proxy_lm); NP: MPI ranks.
set -u
name=$1; shift; overrides="$*"
CONFIG=${CONFIG:-configs/shakespeare_hour.toml}; OUT=${OUT:-runs/proxy_lm}
STEPS=${STEPS:-900}; EVERY=${EVERY:-300}; NP=${NP:-1}
launch=(); [ "$NP" -gt 1 ] && launch=(mpiexec -n "$NP")
mkdir -p "$OUT"; log=$OUT/$name.log; run=$OUT/$name
keep=$(( STEPS / EVERY + 5 ))      # a few to spare: the run goes on until it is stopped
start=$(date +%s)
${launch[@]+"${launch[@]}"} python -m numpy_transformer train-lm --config "$CONFIG" --threads 1 \
  --no-progress --no-figures --eval-every "$EVERY" --checkpoint-every "$EVERY" \
  --keep-last "$keep" --log-every 100 \
  "$@" --out "$run" > "$log" 2>&1 &
pid=$!
while kill -0 "$pid" 2> /dev/null && [ ! -f "$run/step-$STEPS.npz" ]; do sleep 1; done
kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
echo "stopped after step $STEPS: $(( $(date +%s) - start )) s" >> "$log"
row="$name | ${overrides:-the file} | $NP |"
for (( step = EVERY; step <= STEPS; step += EVERY )); do
  ckpt=$run/step-$step.npz
  [ -f "$ckpt" ] || { row="$row missing |"; continue; }
  python -m numpy_transformer evaluate --checkpoint "$ckpt" --json "$run/eval-$step.json" \
    --overwrite >> "$log" 2>&1
  loss=$(python -c "import json, sys; print(round(json.load(open(sys.argv[1]))['scores']['loss'], 4))" \
    "$run/eval-$step.json")
  row="$row $step: $loss |"
done
echo "$row $(( $(date +%s) - start )) s" >> "$OUT/table.txt"
