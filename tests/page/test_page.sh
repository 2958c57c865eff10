#!/usr/bin/env bash
# The exported attention page in a real browser (Debian's headless Chromium), offline: it renders the grid, a scripted
# click on another head redraws it, and the page asks for nothing over the network. What it drew is checked against
# the head's attention as `attnscope-cli attention` writes it: the page's checksum (sum of cell x row x column over the
# grid, cells at the page's 1/255 steps) recomputed with numpy, so its packing and decoder are tested too.
# Usage: test_page.sh ATTNSCOPE-CLI
set -euo pipefail
cli=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
text="the war ended in 1945 . the army returned home in 1946 ."
"$cli" page --model builtin:llama-wikitext2 --text "$text" --layers 1,2 --out "$tmp/page.html" 2>/dev/null
# Nothing to fetch: no address in the page at all.
if grep -Eq 'https?://|src="//' "$tmp/page.html"; then echo "the page names a network address"; exit 1; fi
body() { # the <body> element after the page's script ran, for the heads and layer in the URL's fragment
  timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$tmp/profile" \
      --host-resolver-rules="MAP * ~NOTFOUND" --virtual-time-budget=5000 --dump-dom "file://$tmp/page.html#$1" \
      2>/dev/null | grep -o '<body[^>]*>'
}
one=$(body "layer=2&head=1")
two=$(body "layer=2&head=2")
echo "$one"; echo "$two"
[[ $one == *'data-rendered="yes"'* ]] || { echo "the grid was not drawn"; exit 1; }
[[ $one == *'data-head="1"'* && $two == *'data-head="2"'* ]] || { echo "the click did not select the head"; exit 1; }
[[ $two == *'data-layer="2"'* ]] || { echo "the layer selector did not switch"; exit 1; }
sum() { sed -E 's/.*data-checksum="([^"]*)".*/\1/' <<<"$1"; }
[[ $(sum "$one") != "$(sum "$two")" ]] || { echo "head 2 drew the same grid as head 1"; exit 1; }
[[ $(sum "$one") != "0.000000" ]] || { echo "an empty grid"; exit 1; }
for head in 1 2; do
  "$cli" attention --model builtin:llama-wikitext2 --text "$text" --layer 2 --head $head --out "$tmp/h$head.npy" 2>/dev/null
done
expected() {
  /usr/bin/python3 -c "
import sys, numpy as np
a = np.load(sys.argv[1])[0]
v = (np.rint(np.clip(a, 0, 1) * 255) / 255).astype(np.float32).astype(np.float64)
r, c = np.indices(v.shape)
print(f'{(v * (r + 1) * (c + 1)).sum():.6f}')" "$1"
}
for pair in "1:$one" "2:$two"; do
  want=$(expected "$tmp/h${pair%%:*}.npy"); got=$(sum "${pair#*:}")
  awk -v a="$want" -v b="$got" 'BEGIN { exit !(a - b < 1e-3 && b - a < 1e-3) }' ||
    { echo "head ${pair%%:*}: the page drew checksum $got, the head's attention gives $want"; exit 1; }
done
# A picture's page and a translation's page (their numbers are compared in python/tests: Chromium there too).
testdata=$(dirname "$0")/../../../shared/testdata
if [[ -d $testdata/vit-tiny && -d $testdata/t5-tiny ]]; then
  "$cli" page --model "$testdata/vit-tiny" --image "$testdata/vit-tiny/image.png" --out "$tmp/page.html" 2>/dev/null
  grep -q '"image":{' "$tmp/page.html" || { echo "the picture's page has no picture"; exit 1; }
  [[ $(body "head=2") == *'data-rendered="yes"'*'data-head="2"'* || $(body "head=2") == *'data-head="2"'*'data-rendered="yes"'* ]] ||
    { echo "the picture's page did not draw head 2"; exit 1; }
  "$cli" page --model "$testdata/t5-tiny" --ids "5,6,7,8,1" --out "$tmp/page.html" 2>/dev/null
  cross=$(body "site=cross&head=2"); encoder=$(body "site=encoder&layer=2")
  [[ $cross == *'data-site="cross"'* && $encoder == *'data-site="encoder"'* && $encoder == *'data-layer="2"'* ]] ||
    { echo "the translation's page did not switch sites: $cross / $encoder"; exit 1; }
fi
echo "page renders offline, follows a click and draws the heads' own numbers"
