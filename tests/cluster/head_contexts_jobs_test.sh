#!/usr/bin/env bash
# The heads-over-a-corpus job scripts of tools/slurm without Slurm (part of make test): each array task run by hand
# with the variables Slurm sets, then the merge: the same contexts as one run (every heads/ file byte for byte), the
# same metrics up to the order their sums were added in; a merge without a shard, or of another window, refused.
#   head_contexts_jobs_test.sh SOURCE_DIR CLI
set -euo pipefail
source_dir=$1 cli=$2
model="$source_dir/../shared/testdata/llama-gqa/model-f32.gguf"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The case has no tokenizer: its text is token ids.
python3 -c "import random; random.seed(3); print(' '.join(str(random.randrange(80)) for _ in range(700)))" > "$work/corpus.txt"
export ATTNSCOPE_CLI=$cli
options=(--window 32 --top 3 --per-decile 1)
"$cli" head-contexts --model "$model" --text-file "$work/corpus.txt" "${options[@]}" --out "$work/single" 2>/dev/null

for task in 1 2 3; do
  SLURM_ARRAY_TASK_ID=$task bash "$source_dir/tools/slurm/head-contexts-shard.sbatch" 3 "$work/shards" "$model" \
    "$work/corpus.txt" "${options[@]}" >/dev/null 2>&1
done
ls "$work/shards"/shard-{1,2,3}-of-3.safetensors >/dev/null
mv "$work/shards/shard-2-of-3.safetensors" "$work/held-back.safetensors"
if bash "$source_dir/tools/slurm/head-contexts-merge.sbatch" "$work/shards" "$work/part" "$model" "$work/corpus.txt" \
  "${options[@]}" 2>"$work/err"; then
  echo "FAIL: a merge without shard 2 succeeded" >&2; exit 1
fi
grep -q "shards 2 of 3 are missing" "$work/err" || { echo "FAIL: the refusal does not name shard 2: $(cat "$work/err")" >&2; exit 1; }
[ ! -e "$work/part" ] || { echo "FAIL: a refused merge wrote a result" >&2; exit 1; }
mv "$work/held-back.safetensors" "$work/shards/shard-2-of-3.safetensors"
if bash "$source_dir/tools/slurm/head-contexts-merge.sbatch" "$work/shards" "$work/other" "$model" "$work/corpus.txt" \
  --window 16 2>"$work/err"; then
  echo "FAIL: shards of windows of 32 merged as windows of 16" >&2; exit 1
fi
SLURM_ARRAY_TASK_ID=1 bash "$source_dir/tools/slurm/head-contexts-shard.sbatch" 3 "$work/shards" "$model" "$work/corpus.txt" \
  "${options[@]}" | grep -q "nothing to do" || { echo "FAIL: a finished task ran again" >&2; exit 1; }

bash "$source_dir/tools/slurm/head-contexts-merge.sbatch" "$work/shards" "$work/merged" "$model" "$work/corpus.txt" \
  "${options[@]}" 2>/dev/null
diff -r "$work/single/heads" "$work/merged/heads" >/dev/null || { echo "FAIL: the merged contexts differ from one run's" >&2; exit 1; }
cmp -s "$work/single/index.json" "$work/merged/index.json" || { echo "FAIL: index.json differs" >&2; exit 1; }
python3 - "$work/single/scatter.json" "$work/merged/scatter.json" <<'PY'
import json, math, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert len(a) == len(b) and len(a) > 0, "scatter lengths differ"
for x, y in zip(a, b):
    for k, v in x.items():
        w = y[k]
        if v is None or w is None:
            assert v is None and w is None, (k, v, w)
        else:
            assert math.isclose(v, w, rel_tol=1e-12, abs_tol=1e-12), (x["layer"], x["head"], k, v, w)
PY
echo "head contexts: 3 shards merged equal one run"
