#!/usr/bin/env bash
# The Slurm job scripts of tools/slurm without Slurm (part of make test): each array task run by hand with the
# variables Slurm sets, then the merge, equal to a single-process scan; a finished task is not run again; a task
# outside 1..N and a merge of an incomplete set are refused. run_cluster_test.sh runs them on a real Slurm.
#   job_scripts_test.sh SOURCE_DIR CLI COMPARE
set -euo pipefail
source_dir=$1 cli=$2 compare=$3
model="$source_dir/../shared/testdata/llama-gqa/model-f32.gguf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
head -c 20000 "$source_dir/../shared/data/wikitext-2/valid.txt" > "$work/corpus.txt"
export ATTNSCOPE_CLI=$cli
options=(--mem-len 0 --segment-length 32)
"$cli" scan --model "$model" --text-file "$work/corpus.txt" "${options[@]}" --out "$work/single.safetensors" 2>/dev/null

for task in 1 2 3; do
  SLURM_ARRAY_TASK_ID=$task bash "$source_dir/tools/slurm/scan-shard.sbatch" 3 "$work/shards" "$model" \
    "$work/corpus.txt" "${options[@]}" >/dev/null 2>&1
done
ls "$work/shards"/shard-{1,2,3}-of-3.safetensors >/dev/null
if bash "$source_dir/tools/slurm/merge-shards.sbatch" "$work/empty" "$work/none.safetensors" 2>"$work/err"; then
  echo "FAIL: a merge of no shards succeeded" >&2; exit 1
fi
mv "$work/shards/shard-2-of-3.safetensors" "$work/held-back.safetensors"
if bash "$source_dir/tools/slurm/merge-shards.sbatch" "$work/shards" "$work/part.safetensors" 2>"$work/err"; then
  echo "FAIL: a merge without shard 2 succeeded" >&2; exit 1
fi
grep -q "shards 2 of 3 are missing" "$work/err" || { echo "FAIL: the refusal does not name shard 2: $(cat "$work/err")" >&2; exit 1; }
[ ! -e "$work/part.safetensors" ] || { echo "FAIL: a refused merge wrote a result" >&2; exit 1; }
mv "$work/held-back.safetensors" "$work/shards/shard-2-of-3.safetensors"

# A finished task does nothing when run again (its file keeps its time); a task outside the array is refused.
touch -d @1000000000 "$work/shards/shard-1-of-3.safetensors"
out=$(SLURM_ARRAY_TASK_ID=1 bash "$source_dir/tools/slurm/scan-shard.sbatch" 3 "$work/shards" "$model" "$work/corpus.txt" "${options[@]}")
[[ $out == *"nothing to do"* ]] && [ "$(stat -c %Y "$work/shards/shard-1-of-3.safetensors")" = 1000000000 ] ||
  { echo "FAIL: a finished task ran again: $out" >&2; exit 1; }
if SLURM_ARRAY_TASK_ID=4 bash "$source_dir/tools/slurm/scan-shard.sbatch" 3 "$work/shards" "$model" "$work/corpus.txt" 2>/dev/null; then
  echo "FAIL: task 4 of 3 ran" >&2; exit 1
fi

bash "$source_dir/tools/slurm/merge-shards.sbatch" "$work/shards" "$work/merged.safetensors" 2>/dev/null
"$compare" "$work/single.safetensors" "$work/merged.safetensors"
