// The self-contained attention page (attention_page.h). A head's cells are (zeros skipped as a varint, then the value
// as a byte) pairs, row-major over [queries, keys]; those bytes are Huffman-coded (a canonical code per head, its 256
// code lengths stored in front) and base64'd. The page's script undoes both. Diffuse heads, whose pairs are nearly all
// "no zeros, value 1", shrink about fivefold, so every head of a 12-layer, 512-token text stays a few MB.
#include "export/attention_page.h"

#include "analysis/attention_grid.h"
#include "util/error.h"

#include <regex>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <queue>

namespace attnscope::core {

namespace {

std::string base64(const std::vector<std::uint8_t>& in)
{
    static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((in.size() + 2) / 3 * 4);
    for (std::size_t i = 0; i < in.size(); i += 3) {
        const std::uint32_t n = (std::uint32_t(in[i]) << 16) | (i + 1 < in.size() ? std::uint32_t(in[i + 1]) << 8 : 0) |
                                (i + 2 < in.size() ? in[i + 2] : 0);
        out += abc[(n >> 18) & 63];
        out += abc[(n >> 12) & 63];
        out += i + 1 < in.size() ? abc[(n >> 6) & 63] : '=';
        out += i + 2 < in.size() ? abc[n & 63] : '=';
    }
    return out;
}

// (zeros skipped, value) pairs of the quantised cells; masked cells count as zeros.
std::vector<std::uint8_t> cellPairs(const std::vector<float>& values)
{
    std::vector<std::uint8_t> out;
    std::uint32_t skip = 0;
    for (float v : values) {
        const int q = std::isnan(v) ? 0 : static_cast<int>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f));
        if (q == 0) {
            ++skip;
            continue;
        }
        for (std::uint32_t s = skip; ; s >>= 7) { // varint, low 7 bits first
            out.push_back(static_cast<std::uint8_t>((s & 127) | (s >= 128 ? 128 : 0)));
            if (s < 128)
                break;
        }
        out.push_back(static_cast<std::uint8_t>(q));
        skip = 0;
    }
    return out;
}

constexpr int kMaxCodeBits = 24; // the page's decoder reads codes as numbers; far from the 53 bits it could hold

// Huffman code lengths of the bytes' frequencies (0: the byte does not occur). Over-long codes (extremely skewed
// counts) are avoided by halving the counts and building again.
std::array<std::uint8_t, 256> codeLengths(std::array<std::uint64_t, 256> freq)
{
    for (;;) {
        std::array<std::uint8_t, 256> length{};
        struct Node {
            std::uint64_t weight;
            int left, right; // children (-1: a leaf)
        };
        std::vector<Node> nodes;
        using Item = std::pair<std::uint64_t, int>;
        std::priority_queue<Item, std::vector<Item>, std::greater<>> heap;
        for (int b = 0; b < 256; ++b)
            if (freq[static_cast<std::size_t>(b)]) {
                nodes.push_back({freq[static_cast<std::size_t>(b)], -1, b});
                heap.push({freq[static_cast<std::size_t>(b)], static_cast<int>(nodes.size()) - 1});
            }
        if (nodes.size() == 1) { // one symbol still needs one bit
            length[static_cast<std::size_t>(nodes[0].right)] = 1;
            return length;
        }
        while (heap.size() > 1) {
            const auto a = heap.top();
            heap.pop();
            const auto b = heap.top();
            heap.pop();
            nodes.push_back({a.first + b.first, a.second, b.second});
            heap.push({a.first + b.first, static_cast<int>(nodes.size()) - 1});
        }
        bool tooLong = false;
        // Depth of every leaf, walking down from the root (the last node made).
        std::vector<std::pair<int, int>> stack{{static_cast<int>(nodes.size()) - 1, 0}};
        while (!stack.empty()) {
            const auto [n, depth] = stack.back();
            stack.pop_back();
            const Node& node = nodes[static_cast<std::size_t>(n)];
            if (node.left < 0) {
                tooLong |= depth > kMaxCodeBits;
                length[static_cast<std::size_t>(node.right)] = static_cast<std::uint8_t>(std::min(depth, 255));
            } else {
                stack.push_back({node.left, depth + 1});
                stack.push_back({node.right, depth + 1});
            }
        }
        if (!tooLong)
            return length;
        for (auto& f : freq)
            if (f)
                f = (f + 1) / 2;
    }
}

// The bytes as [count: 4 bytes little-endian][256 code lengths][the canonical Huffman code, most significant bit first].
std::vector<std::uint8_t> huffmanPack(const std::vector<std::uint8_t>& bytes)
{
    std::array<std::uint64_t, 256> freq{};
    for (auto b : bytes)
        ++freq[b];
    std::vector<std::uint8_t> out;
    if (bytes.size() > 0xFFFFFFFFu) // the page's four-byte count; far beyond any page a browser opens
        throw Error(ErrorCode::BadInput, "a head's grid is too large for a page: choose fewer tokens");
    const auto n = static_cast<std::uint32_t>(bytes.size());
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
    if (bytes.empty()) {
        out.resize(out.size() + 256, 0);
        return out;
    }
    const auto length = codeLengths(freq);
    out.insert(out.end(), length.begin(), length.end());
    // Canonical codes: shorter first, then by byte value; each length's codes follow the previous length's, shifted.
    std::array<std::uint32_t, 256> code{};
    std::array<int, kMaxCodeBits + 2> count{};
    for (auto l : length)
        ++count[l];
    count[0] = 0;
    std::array<std::uint32_t, kMaxCodeBits + 2> next{};
    std::uint32_t c = 0;
    for (int bits = 1; bits <= kMaxCodeBits; ++bits) {
        c = (c + static_cast<std::uint32_t>(count[static_cast<std::size_t>(bits) - 1])) << 1;
        next[static_cast<std::size_t>(bits)] = c;
    }
    for (int b = 0; b < 256; ++b)
        if (length[static_cast<std::size_t>(b)])
            code[static_cast<std::size_t>(b)] = next[length[static_cast<std::size_t>(b)]]++;
    std::uint64_t acc = 0;
    int held = 0;
    for (auto b : bytes) {
        acc = (acc << length[b]) | code[b];
        held += length[b];
        while (held >= 8) {
            held -= 8;
            out.push_back(static_cast<std::uint8_t>(acc >> held));
        }
        acc &= (std::uint64_t(1) << held) - 1;
    }
    if (held > 0)
        out.push_back(static_cast<std::uint8_t>(acc << (8 - held)));
    return out;
}

std::string packCells(const std::vector<float>& values)
{
    return base64(huffmanPack(cellPairs(values)));
}

// The page's script: decodes the cells, draws the grid on a canvas (viridis), and wires the selectors, the tokens, the
// picture (vision) and the alignment (cross-attention). D.sites[s] holds one site's layers x heads of packed cells;
// its rows and columns index tokens of D.streams.
constexpr const char* kScript = R"JS(
const D = JSON.parse(document.getElementById('attnscope-data').textContent);
const stops = [[68,1,84],[71,44,122],[59,81,139],[44,113,142],[33,144,141],[39,173,129],[92,200,99],[170,220,50],[253,231,37]];
function colour(t) {
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  return stops[i].map((c, k) => Math.round(c + f * (stops[i + 1][k] - c)));
}
// A head's bytes: base64, then its canonical Huffman code (count, 256 code lengths, the bits; attention_page.cpp).
function unpack(b64) {
  const bin = atob(b64), n = (bin.charCodeAt(0) | bin.charCodeAt(1) << 8 | bin.charCodeAt(2) << 16) + bin.charCodeAt(3) * 16777216;
  const len = [], count = new Array(33).fill(0);
  for (let s = 0; s < 256; ++s) { len.push(bin.charCodeAt(4 + s)); count[len[s]]++; }
  count[0] = 0;
  const symbols = [];
  for (let l = 1; l <= 32; ++l) for (let s = 0; s < 256; ++s) if (len[s] === l) symbols.push(s);
  const out = new Uint8Array(n);
  let at = 260, bits = 0, held = 0;
  for (let i = 0; i < n; ++i) {
    let code = 0, first = 0, index = 0;
    for (let l = 1; ; ++l) {
      if (held === 0) { bits = bin.charCodeAt(at++); held = 8; }
      code = code * 2 + ((bits >> --held) & 1);
      if (code - first < count[l]) { out[i] = symbols[index + code - first]; break; }
      index += count[l]; first = (first + count[l]) * 2;
    }
  }
  return out;
}
// (zeros skipped, value) pairs back into the [rows, cols] cells.
function cells(S, layer, head) {
  const bin = unpack(S.cells[layer][head]), out = new Float32Array(S.rowPos.length * S.colPos.length);
  let at = 0, i = 0;
  while (i < bin.length) {
    let skip = 0, shift = 0, b;
    do { b = bin[i++]; skip += (b & 127) * Math.pow(2, shift); shift += 7; } while (b & 128);
    at += skip;
    out[at++] = bin[i++] / 255;
  }
  return out;
}
let site = 0, layer = 0, head = 0, current = null, locked = -1, S = D.sites[0];
const canvas = document.getElementById('grid'), ctx = canvas.getContext('2d');
const tokenOf = (stream, pos) => D.streams[stream].tokens[pos];
function masked(r, c) { return S.causal && S.rowStream === S.colStream && S.colPos[c] > S.rowPos[r]; }
// The grid's layout on its canvas: token labels left and below (slanted), the colour bar right.
let G = { left: 0, top: 10, cell: 1 };
const cut = t => t.length > 12 ? t.slice(0, 11) + '…' : t;
function labels(R, C, cell) {
  const font = Math.min(12, Math.max(8, cell - 2)), every = Math.max(1, Math.ceil((font + 2) / cell));
  ctx.font = `${font}px sans-serif`;
  let rowW = 0, colW = 0;
  for (let r = 0; r < R; r += every) rowW = Math.max(rowW, ctx.measureText(cut(tokenOf(S.rowStream, S.rowPos[r]))).width);
  for (let c = 0; c < C; c += every) colW = Math.max(colW, ctx.measureText(cut(tokenOf(S.colStream, S.colPos[c]))).width);
  return { font, every, left: Math.ceil(rowW) + 8, bottom: Math.ceil(colW * 0.71 + font) + 8 };
}
function draw() {
  current = cells(S, layer, head);
  const R = S.rowPos.length, C = S.colPos.length, cell = Math.max(1, Math.floor(560 / Math.max(R, C)));
  const L = labels(R, C, cell), barX = L.left + C * cell + 14;
  G = { left: L.left, top: 10, cell };
  canvas.width = barX + 56; canvas.height = G.top + R * cell + L.bottom;
  ctx.fillStyle = 'white'; ctx.fillRect(0, 0, canvas.width, canvas.height);
  const img = ctx.createImageData(C * cell, R * cell);
  let checksum = 0;
  for (let r = 0; r < R; ++r) for (let c = 0; c < C; ++c) {
    const v = current[r * C + c], m = masked(r, c), rgb = m ? [245,245,245] : colour(v);
    checksum += m ? 0 : v * (r + 1) * (c + 1);
    for (let y = 0; y < cell; ++y) for (let x = 0; x < cell; ++x) {
      const p = ((r * cell + y) * C * cell + c * cell + x) * 4;
      img.data[p] = rgb[0]; img.data[p + 1] = rgb[1]; img.data[p + 2] = rgb[2]; img.data[p + 3] = 255;
    }
  }
  ctx.putImageData(img, G.left, G.top);
  // Token labels: the queries left of their rows, the keys slanted under their columns (every k-th when crowded).
  ctx.font = `${L.font}px sans-serif`; ctx.fillStyle = '#222'; ctx.textBaseline = 'middle';
  ctx.textAlign = 'right';
  for (let r = 0; r < R; r += L.every)
    ctx.fillText(cut(tokenOf(S.rowStream, S.rowPos[r])), G.left - 4, G.top + (r + 0.5) * cell);
  for (let c = 0; c < C; c += L.every) {
    ctx.save(); ctx.translate(G.left + (c + 0.5) * cell, G.top + R * cell + 4); ctx.rotate(-Math.PI / 4);
    ctx.fillText(cut(tokenOf(S.colStream, S.colPos[c])), 0, 0); ctx.restore();
  }
  // The colour bar: attention 0 at the bottom to 1 at the top, as the cells are coloured.
  const barH = R * cell;
  for (let y = 0; y < barH; ++y) { const rgb = colour(1 - y / Math.max(1, barH - 1)); ctx.fillStyle = `rgb(${rgb})`; ctx.fillRect(barX, G.top + y, 12, 1); }
  ctx.fillStyle = '#222'; ctx.textAlign = 'left';
  [[1, '1'], [0.5, '0.5'], [0, '0']].forEach(([v, t]) => ctx.fillText(t, barX + 16, G.top + (1 - v) * barH));
  document.querySelectorAll('#heads button').forEach((b, i) => b.classList.toggle('on', i === head));
  document.getElementById('caption').textContent = `${D.model} · ${S.label} ${S.layers[layer]} · head ${S.heads[head]}`;
  Object.assign(document.body.dataset, { site: S.key, layer: S.layers[layer], head: S.heads[head],
    checksum: checksum.toFixed(6), rendered: 'yes' });
  shade(locked);
}
// The row's attention over the column tokens: on the tokens, the picture and the alignment.
function shade(row) {
  document.querySelectorAll('#text span').forEach(s => { s.style.background = ''; s.classList.remove('query'); });
  const shown = row >= 0 ? row : (D.image ? 0 : -1);
  picture(shown);
  alignment(row);
  if (shown < 0 || !current) return;
  const C = S.colPos.length, spans = document.querySelectorAll(`#text .s${S.colStream} span`);
  for (let c = 0; c < C; ++c) {
    const v = current[shown * C + c], rgb = colour(v), s = spans[S.colPos[c]];
    if (s) s.style.background = v > 0.01 ? `rgba(${rgb[0]},${rgb[1]},${rgb[2]},${Math.min(0.9, 0.25 + v)})` : '';
  }
  const q = document.querySelectorAll(`#text .s${S.rowStream} span`)[S.rowPos[shown]];
  if (q) q.classList.add('query');
  document.getElementById('hover').textContent = `query: ${tokenOf(S.rowStream, S.rowPos[shown])}`;
}
// Vision: the picture with the row's attention over its patches.
function picture(row) {
  if (!D.image) return;
  const I = D.image, pc = document.getElementById('picture'), g = pc.getContext('2d');
  const scale = Math.max(1, Math.floor(320 / Math.max(I.width, I.height)));
  pc.width = I.width * scale; pc.height = I.height * scale;
  const raw = atob(I.rgb), img = g.createImageData(I.width, I.height);
  for (let i = 0; i < I.width * I.height; ++i) {
    img.data[4 * i] = raw.charCodeAt(3 * i); img.data[4 * i + 1] = raw.charCodeAt(3 * i + 1);
    img.data[4 * i + 2] = raw.charCodeAt(3 * i + 2); img.data[4 * i + 3] = 255;
  }
  const off = document.createElement('canvas'); off.width = I.width; off.height = I.height;
  off.getContext('2d').putImageData(img, 0, 0);
  g.imageSmoothingEnabled = false; g.drawImage(off, 0, 0, pc.width, pc.height);
  if (row < 0 || !current || S.colStream !== 0) return;
  const C = S.colPos.length, byToken = {};
  I.patches.forEach(p => { byToken[p[0]] = p; });
  let top = 0;
  for (let c = 0; c < C; ++c) if (byToken[S.colPos[c]]) top = Math.max(top, current[row * C + c]);
  const w = pc.width / I.gridCols, h = pc.height / I.gridRows;
  for (let c = 0; c < C; ++c) {
    const p = byToken[S.colPos[c]];
    if (!p || top <= 0) continue;
    g.fillStyle = `rgba(255,90,0,${0.75 * current[row * C + c] / top})`;
    g.fillRect((p[2] - 1) * w, (p[1] - 1) * h, w, h);
  }
  document.getElementById('picture-caption').textContent =
    `${tokenOf(S.rowStream, S.rowPos[row])}'s attention over the patches (brightest: ${top.toFixed(3)})`;
}
// Cross-attention: target tokens (rows) below, source tokens (columns) above, a line for every weight above 0.05.
function alignment(row) {
  const ac = document.getElementById('alignment');
  if (S.rowStream === S.colStream || !current) { ac.style.display = 'none'; return; }
  ac.style.display = ''; ac.width = 560; ac.height = 170;
  const g = ac.getContext('2d'), R = S.rowPos.length, C = S.colPos.length;
  g.clearRect(0, 0, ac.width, ac.height);
  const xc = c => 20 + (c + 0.5) * (ac.width - 40) / C, xr = r => 20 + (r + 0.5) * (ac.width - 40) / R;
  for (let r = 0; r < R; ++r) for (let c = 0; c < C; ++c) {
    const v = current[r * C + c];
    if (v < 0.05) continue;
    g.strokeStyle = r === row ? `rgba(230,90,0,${Math.min(1, 0.2 + v)})` : `rgba(60,60,140,${0.6 * v})`;
    g.lineWidth = r === row ? 2.5 : 1.5;
    g.beginPath(); g.moveTo(xc(c), 30); g.lineTo(xr(r), 140); g.stroke();
  }
  g.fillStyle = '#222'; g.font = '11px sans-serif'; g.textAlign = 'center';
  // Labels where they have room (the row under the pointer always): no overlapping text.
  const labels = (n, x, y, stream, pos, keep) => { let right = -1e9;
    for (let i = 0; i < n; ++i) { const t = tokenOf(stream, pos[i]).slice(0, 10), w = g.measureText(t).width;
      if (x(i) - w / 2 > right + 3 || i === keep) { g.fillStyle = i === keep ? '#e65a00' : '#222'; g.fillText(t, x(i), y); right = x(i) + w / 2; } } };
  labels(C, xc, 20, S.colStream, S.colPos, -1);
  labels(R, xr, 158, S.rowStream, S.rowPos, row);
}
const heads = document.getElementById('heads'), layers = document.getElementById('layer');
const sites = document.getElementById('site'), text = document.getElementById('text');
function showSite(i) {
  site = i; S = D.sites[i];
  layer = Math.min(layer, S.layers.length - 1); head = Math.min(head, S.heads.length - 1);
  heads.innerHTML = ''; layers.innerHTML = ''; text.innerHTML = '';
  S.heads.forEach((h, k) => { const b = document.createElement('button'); b.textContent = 'H' + h;
    b.onclick = () => { head = k; draw(); }; heads.appendChild(b); });
  S.layers.forEach((l, k) => { const o = document.createElement('option'); o.value = k; o.textContent = 'layer ' + l; layers.appendChild(o); });
  layers.value = layer;
  [...new Set([S.colStream, S.rowStream])].forEach(st => {
    const block = document.createElement('div'); block.className = 's' + st;
    if (D.streams.length > 1) { const n = document.createElement('b'); n.textContent = D.streams[st].name + ': '; block.appendChild(n); }
    const rowOf = {};
    if (st === S.rowStream) S.rowPos.forEach((p, r) => { rowOf[p] = r; });
    D.streams[st].tokens.forEach((t, p) => {
      const s = document.createElement('span'); s.textContent = t;
      if (p in rowOf) { const r = rowOf[p];
        s.onmouseenter = () => { if (locked < 0) shade(r); };
        s.onclick = () => { locked = locked === r ? -1 : r; shade(r); }; }
      block.appendChild(s); block.appendChild(document.createTextNode(' '));
    });
    text.appendChild(block);
  });
  locked = -1; draw();
}
D.sites.forEach((s, i) => { const o = document.createElement('option'); o.value = i; o.textContent = s.label; sites.appendChild(o); });
sites.style.display = D.sites.length > 1 ? '' : 'none';
sites.onchange = () => showSite(+sites.value);
layers.onchange = () => { layer = +layers.value; draw(); };
document.getElementById('picture').style.display = D.image ? '' : 'none';
canvas.onmousemove = e => {
  const rect = canvas.getBoundingClientRect(), k = canvas.width / rect.width; // canvas pixels per CSS pixel
  const r = Math.floor(((e.clientY - rect.top) * k - G.top) / G.cell), c = Math.floor(((e.clientX - rect.left) * k - G.left) / G.cell);
  if (r < 0 || r >= S.rowPos.length || c < 0 || c >= S.colPos.length) return;
  document.getElementById('hover').textContent =
    `${tokenOf(S.rowStream, S.rowPos[r])} → ${tokenOf(S.colStream, S.colPos[c])}: ${current[r * S.colPos.length + c].toFixed(3)}`;
  if (locked < 0) shade(r);
};
// page.html#site=cross&layer=2&head=3 opens that site and head by using its controls (what a test drives).
const want = new URLSearchParams(location.hash.slice(1));
const first = want.has('site') ? Math.max(0, D.sites.findIndex(s => s.key === want.get('site'))) : 0;
sites.value = first; showSite(first);
if (want.has('layer')) { const i = S.layers.indexOf(+want.get('layer')); if (i >= 0) { layers.value = i; layers.onchange(); } }
if (want.has('head')) { const i = S.heads.indexOf(+want.get('head')); if (i >= 0) heads.children[i].click(); }
)JS";

constexpr const char* kStyle = R"CSS(
body { font-family: sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 8px; }
#controls { margin: 8px 0; display: flex; gap: 4px; flex-wrap: wrap; align-items: center; }
#controls button { padding: 2px 8px; border: 1px solid #999; background: #f4f4f4; cursor: pointer; }
#controls button.on { background: #e65a00; color: white; border-color: #e65a00; }
#main { display: flex; gap: 24px; align-items: flex-start; flex-wrap: wrap; }
canvas { image-rendering: pixelated; border: 1px solid #ccc; }
#text { max-width: 520px; line-height: 1.9; }
#text div { margin-bottom: 10px; }
#text span { padding: 1px 2px; border-radius: 3px; cursor: pointer; }
#text span.query { outline: 2px solid #e65a00; }
#caption, #hover, #picture-caption { font-size: 13px; color: #555; min-height: 1.2em; }
)CSS";

std::string escapeHtml(const std::string& s)
{
    std::string out;
    for (char c : s)
        out += c == '<' ? std::string("&lt;") : c == '>' ? std::string("&gt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
    return out;
}

// The layers (from 0) a page shows out of `count`: the chosen ones that exist, or all. Error(BadInput) for a chosen one
// that no stack has.
std::vector<int> chosenOf(const std::vector<int>& chosen, int count, int most, const char* what)
{
    std::vector<int> out;
    for (int i : chosen) {
        if (i < 0 || i >= most)
            throw Error(ErrorCode::BadInput, std::string(what) + " " + std::to_string(i + 1) + " does not exist: " + what +
                                                 "s are 1 .. " + std::to_string(most));
        if (i < count)
            out.push_back(i);
    }
    if (chosen.empty())
        for (int i = 0; i < count; ++i)
            out.push_back(i);
    return out;
}

nlohmann::json numbersFrom1(const std::vector<int>& zeroBased)
{
    nlohmann::json out = nlohmann::json::array();
    for (int i : zeroBased)
        out.push_back(i + 1);
    return out;
}

// The picture as the page draws it: the one given, else the pixel values stretched per channel; at most 320 pixels a
// side (nearest pixels), so a large picture does not outweigh the attention.
Image8 pagePicture(const PixelValues& px, const std::shared_ptr<const Image8>& given)
{
    Image8 full;
    if (given) {
        full = *given;
    } else {
        full.height = px.height;
        full.width = px.width;
        full.rgb.resize(static_cast<std::size_t>(px.height) * px.width * 3);
        for (int ch = 0; ch < 3; ++ch) {
            float lo = std::numeric_limits<float>::max(), hi = std::numeric_limits<float>::lowest();
            for (int y = 0; y < px.height; ++y)
                for (int x = 0; x < px.width; ++x) {
                    lo = std::min(lo, px.at(ch, y, x));
                    hi = std::max(hi, px.at(ch, y, x));
                }
            const float span = hi > lo ? hi - lo : 1.0f;
            for (int y = 0; y < px.height; ++y)
                for (int x = 0; x < px.width; ++x)
                    full.rgb[(static_cast<std::size_t>(y) * px.width + x) * 3 + ch] =
                        static_cast<std::uint8_t>(std::lround(255.0f * (px.at(ch, y, x) - lo) / span));
        }
    }
    const int step = std::max(1, (std::max(full.width, full.height) + 319) / 320);
    if (step == 1)
        return full;
    Image8 small;
    small.width = full.width / step;
    small.height = full.height / step;
    for (int y = 0; y < small.height; ++y)
        for (int x = 0; x < small.width; ++x)
            for (int ch = 0; ch < 3; ++ch)
                small.rgb.push_back(full.rgb[(static_cast<std::size_t>(y) * step * full.width + x * step) * 3 + ch]);
    return small;
}

// The page around its data: controls, grid, tokens, picture and alignment canvases, the script.
std::string pageHtml(nlohmann::json data, const std::string& title)
{
    data["title"] = title;
    std::string json = data.dump();
    for (std::size_t at = 0; (at = json.find("</", at)) != std::string::npos; at += 3)
        json.replace(at, 2, "<\\/"); // never closes the script element
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escapeHtml(title) +
           " — attnscope</title>\n<style>" + kStyle + "</style></head>\n<body>\n<h1>" + escapeHtml(title) +
           "</h1>\n<div id=\"controls\"><select id=\"site\"></select><select id=\"layer\"></select><span id=\"heads\"></span></div>\n"
           "<div id=\"caption\"></div>\n<div id=\"main\"><div><canvas id=\"grid\"></canvas><div id=\"hover\"></div></div>"
           "<div><canvas id=\"picture\"></canvas><div id=\"picture-caption\"></div><canvas id=\"alignment\"></canvas>"
           "<div id=\"text\"></div></div></div>\n<script type=\"application/json\" id=\"attnscope-data\">" + json +
           "</script>\n<script>" + kScript + "</script>\n</body></html>\n";
}

} // namespace

namespace {

// The page's tokens of one stream: the segment stream's from the segment's first memory token on, a read stream's all.
struct PageStream {
    int offset = 0; // the stream's position of the page's token 0
    nlohmann::json tokens = nlohmann::json::array();
};

std::vector<PageStream> pageStreams(const TextCapture& capture, int segment)
{
    const ModelInfo& info = capture.model;
    const auto& seg = capture.segment(segment);
    std::vector<PageStream> out(info.streams.size());
    for (int k = 0; k < static_cast<int>(info.streams.size()); ++k) {
        const bool segments = k == info.segmentStream();
        const auto& tokens = capture.streamTokens(k);
        PageStream& p = out[static_cast<std::size_t>(k)];
        p.offset = segments ? static_cast<int>(seg.firstPosition) - seg.mlen : 0;
        const int end = segments ? static_cast<int>(seg.firstPosition) + seg.qlen : static_cast<int>(tokens.size());
        for (int t = p.offset; t < end; ++t)
            p.tokens.push_back(tokens[static_cast<std::size_t>(t)].text);
    }
    return out;
}

// The site keys of a model in the order a page lists them: cross-attention first (what a class watches), then the
// others as the model has them.
std::vector<std::string> siteKeys(const ModelInfo& info)
{
    std::vector<std::string> keys;
    for (const auto& s : info.sites)
        if (std::find(keys.begin(), keys.end(), s.key()) == keys.end())
            keys.push_back(s.key());
    std::stable_partition(keys.begin(), keys.end(), [](const std::string& k) { return k == "cross"; });
    return keys;
}

// One kind of site (every layer of it the page shows): its streams, the positions of its rows and columns in the
// page's streams, and each layer's heads packed. Null when none of its layers is chosen.
nlohmann::json pageSite(const TextCapture& capture, int segment, const std::string& key, const std::vector<int>& chosen,
                        const std::vector<int>& chosenHeads, const std::vector<PageStream>& streams)
{
    const ModelInfo& info = capture.model;
    nlohmann::json site, cells = nlohmann::json::array();
    std::vector<int> layers;
    for (int i = 0; i < info.siteCount(); ++i) {
        const auto& s = info.site(i);
        if (s.key() != key || std::find(chosen.begin(), chosen.end(), s.layer) == chosen.end())
            continue;
        AttentionGrid placed;
        placeGrid(capture, segment, i, placed);
        if (layers.empty()) {
            const int rowOffset = streams[static_cast<std::size_t>(placed.rowStream)].offset;
            const int colOffset = streams[static_cast<std::size_t>(placed.colStream)].offset;
            nlohmann::json rows = nlohmann::json::array(), cols = nlohmann::json::array();
            for (int t : placed.rowTokens)
                rows.push_back(t - rowOffset);
            for (int t : placed.colTokens)
                cols.push_back(t - colOffset);
            site["rowStream"] = placed.rowStream;
            site["colStream"] = placed.colStream;
            site["causal"] = s.causal;
            site["rowPos"] = rows;
            site["colPos"] = cols;
        }
        layers.push_back(s.layer);
        const auto heads = chosenOf(chosenHeads, s.heads, std::max(s.heads, info.heads), "head");
        site["heads"] = numbersFrom1(heads);
        nlohmann::json byHead = nlohmann::json::array();
        for (int h : heads)
            byHead.push_back(packCells(attentionGrid(capture, segment, i, {h}).values));
        cells.push_back(byHead);
    }
    if (layers.empty())
        return nullptr;
    site["key"] = key;
    site["label"] = key == "self" ? "layer" : key == "cross" ? "cross-attention layer" : key + " layer";
    site["layers"] = numbersFrom1(layers);
    site["cells"] = cells;
    return site;
}

// A vision capture's picture and the places of its patches (tokens named r<row>c<col>, from 1).
nlohmann::json pageImage(const TextCapture& capture, const nlohmann::json& tokens, const PageOptions& o)
{
    const Image8 picture = pagePicture(*capture.image, o.picture);
    nlohmann::json patches = nlohmann::json::array();
    int rows = 0, cols = 0;
    static const std::regex patch("r([0-9]+)c([0-9]+)");
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        std::smatch m;
        const std::string name = tokens[t].get<std::string>();
        if (std::regex_match(name, m, patch)) {
            const int r = std::stoi(m[1]), c = std::stoi(m[2]);
            rows = std::max(rows, r);
            cols = std::max(cols, c);
            patches.push_back({t, r, c});
        }
    }
    return {{"width", picture.width}, {"height", picture.height}, {"rgb", base64(picture.rgb)},
            {"patches", patches}, {"gridRows", rows}, {"gridCols", cols}};
}

} // namespace

std::string attentionPageHtml(const TextCapture& capture, const std::string& modelName, const PageOptions& o)
{
    const ModelInfo& info = capture.model;
    const int segments = static_cast<int>(capture.segments.size());
    const int segment = o.segment < 0 ? segments - 1 : o.segment;
    if (segment < 0 || segment >= segments)
        throw Error(ErrorCode::BadInput, "segment " + std::to_string(segment + 1) + " does not exist (" + std::to_string(segments) + ")");
    int most = 0;
    for (const auto& s : info.sites)
        most = std::max(most, s.layer + 1);
    const auto chosen = chosenOf(o.layers, most, most, "layer");
    const auto streams = pageStreams(capture, segment);
    nlohmann::json sites = nlohmann::json::array();
    for (const auto& key : siteKeys(info))
        if (auto site = pageSite(capture, segment, key, chosen, o.heads, streams); !site.is_null())
            sites.push_back(std::move(site));
    if (sites.empty())
        throw Error(ErrorCode::BadInput, "no site has the chosen layers");
    nlohmann::json data, named = nlohmann::json::array();
    data["model"] = modelName;
    for (std::size_t k = 0; k < streams.size(); ++k)
        named.push_back({{"name", info.streams[k].name}, {"tokens", streams[k].tokens}});
    data["streams"] = named;
    data["sites"] = sites;
    if (capture.image)
        data["image"] = pageImage(capture, streams[0].tokens, o);
    std::string title = o.title;
    if (title.empty()) {
        title = modelName;
        for (std::size_t k = 0; k < streams.size(); ++k)
            title += (k == 0 ? " · " : ", ") + std::to_string(capture.streamTokens(static_cast<int>(k)).size()) +
                     (streams.size() > 1 ? " " + info.streams[k].name : "") + " tokens";
    }
    return pageHtml(std::move(data), title);
}

} // namespace attnscope::core
