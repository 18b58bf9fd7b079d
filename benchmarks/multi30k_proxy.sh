#!/usr/bin/env bash
# One proxy run of the README's Multi30k recipe (docs/multi30k_recipe.md): the recipe's first
# STEPS steps (default 600; the Noam schedule does not depend on the total, so they are exactly
# the full run's first steps) on one process with one BLAS thread, then greedy BLEU of the last
# weights on the whole validation set. A fixed number of steps, not of seconds, makes the result
# independent of what else the machine is doing; settings that change the cost of a step are
# compared at equal time through the seconds per step measured on a quiet machine.
#
#   bash benchmarks/multi30k_proxy.sh NAME [--option value ...]   # options replace the recipe's
#   bash benchmarks/multi30k_proxy.sh bpe4k --bpe 4000
#
# DATA: the folder of the tokenised files (default data/multi30k/tok, as `data multi30k` saves
# them); OUT: where runs, logs and the one-line results (OUT/table.txt) go (default runs/proxy);
# SRC and TGT: the direction (default de and en; SRC=en TGT=de for English -> German).
set -u
name=$1; shift; overrides="$*"
DATA=${DATA:-data/multi30k/tok}; OUT=${OUT:-runs/proxy}; SRC=${SRC:-de}; TGT=${TGT:-en}
declare -A opt=([--bpe]=8000 [--d-model]=256 [--num-heads]=4 [--d-ff]=1024 [--num-layers]=3
                [--dropout]=0.15 [--label-smoothing]=0.1 [--lr]=1.5e-3 [--warmup]=400
                [--batch-tokens]=2000)
while [ $# -gt 0 ]; do opt[$1]=$2; shift 2; done
args=""; for k in "${!opt[@]}"; do args="$args $k ${opt[$k]}"; done
mkdir -p "$OUT"; log=$OUT/$name.log; run=$OUT/$name
start=$(date +%s)
python -m numpy_transformer train \
  --src "$DATA/train.lc.norm.tok.$SRC" --tgt "$DATA/train.lc.norm.tok.$TGT" \
  --val-src "$DATA/val.lc.norm.tok.$SRC" --val-tgt "$DATA/val.lc.norm.tok.$TGT" \
  --bleu-tokenize none --joint-vocab --share-embeddings --schedule noam --steps "${STEPS:-600}" \
  --eval-every 100000 --checkpoint-every 100000 --log-every 50 --no-figures $args \
  --out "$run" > "$log" 2>&1
echo "train exit $? after $(( $(date +%s) - start )) s" >> "$log"
python -m numpy_transformer evaluate --checkpoint "$run/last.npz" \
  --src "$DATA/val.lc.norm.tok.$SRC" --tgt "$DATA/val.lc.norm.tok.$TGT" --bleu-tokenize none \
  --json "$run/val_greedy.json" >> "$log" 2>&1
steps=${STEPS:-600}
bleu=$(python -c "import json, sys; print(round(json.load(open(sys.argv[1]))['scores']['bleu'], 2))" "$run/val_greedy.json")
echo "$name | $SRC-$TGT | ${overrides:-the recipe} | $steps | $bleu | $(grep -o '[0-9]* s$' "$log" | head -1)" >> "$OUT/table.txt"
