#!/bin/bash
# The Python module's cost against the C++ CLI for the same work (#41's target: within 10%): a random SmolLM2-135M
# shape (float32 folder, written once by attnscope-bench), 1,024 token ids, the model loaded, the text run and one
# layer's [heads, q, k] written as .npy (the machine's threads: 2 here): `attnscope-cli attention` against `python3 -c "attnscope.load ... run ...
# attention ... numpy.save"`. Both whole processes (the interpreter's and numpy's start-up included), taken in turn,
# ROUNDS rounds, medians printed. Usage: python_vs_cli.sh BUILD_DIR [ROUNDS] [TOKENS] [LAYER]
set -euo pipefail
build=$(realpath "${1:-build}")
rounds=${2:-5}
tokens=${3:-1024}
layer=${4:-15}
dir=${TMPDIR:-/tmp}/attnscope-bench-smollm2-135m-f32
[ -f "$dir/model.safetensors" ] || "$build/bench/attnscope-bench" --make-llama "$dir" smollm2-135m f32 >/dev/null
ids=$(seq -s, 1 "$tokens" | awk -F, '{ for (i = 1; i <= NF; i++) printf "%s%d", (i > 1 ? "," : ""), ($i * 7919) % 49152 }')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cli() { "$build/app/cli/attnscope-cli" attention --model "$dir" --ids "$ids" --layer "$layer" --out "$out/cli.npy" 2>/dev/null; }
py() {
    PYTHONPATH="$build/python" /usr/bin/python3 -c "
import numpy, attnscope
m = attnscope.load('$dir')
cap = m.run(ids=[int(i) for i in '$ids'.split(',')])
numpy.save('$out/py.npy', cap.attention($layer))"
}
seconds() { local t0 t1; t0=$(date +%s%N); "$@"; t1=$(date +%s%N); awk -v d=$((t1 - t0)) 'BEGIN { print d / 1e9 }'; }
cli; py # warm the page cache
declare -a a b
for ((r = 0; r < rounds; r++)); do
    if ((r % 2 == 0)); then a+=("$(seconds cli)"); b+=("$(seconds py)"); else b+=("$(seconds py)"); a+=("$(seconds cli)"); fi
done
cmp -s <(tail -c +129 "$out/cli.npy") <(tail -c +129 "$out/py.npy") && same="the same bytes" || same="DIFFERENT arrays"
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
ma=$(median "${a[@]}"); mb=$(median "${b[@]}")
printf 'python vs cli, SmolLM2-135M shape, %d tokens, layer %d, 2 threads, %d rounds in turn: cli %.2f s, python %.2f s (%+.1f%%), %s\n' \
    "$tokens" "$layer" "$rounds" "$ma" "$mb" "$(awk -v a="$ma" -v b="$mb" 'BEGIN { print (b - a) / a * 100 }')" "$same"
