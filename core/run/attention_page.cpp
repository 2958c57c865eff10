// The self-contained attention page (attention_page.h). A head's cells are (zeros skipped as a varint, then the value
// as a byte) pairs, row-major over [queries, keys]; those bytes are Huffman-coded (a canonical code per head, its 256
// code lengths stored in front) and base64'd. The page's script undoes both. Diffuse heads, whose pairs are nearly all
// "no zeros, value 1", shrink about fivefold, so every head of a 12-layer, 512-token text stays a few MB.
#include "run/attention_page.h"

#include "analysis/attention_grid.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
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

// The page's script: decodes the cells, draws the grid on a canvas (viridis), and wires the selectors and the text.
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
function cells(layer, head) {
  const bin = unpack(D.cells[layer][head]), out = new Float32Array(D.rows.length * D.cols.length);
  let at = 0, i = 0;
  while (i < bin.length) {
    let skip = 0, shift = 0, b;
    do { b = bin[i++]; skip += (b & 127) * Math.pow(2, shift); shift += 7; } while (b & 128);
    at += skip;
    out[at++] = bin[i++] / 255;
  }
  return out;
}
let layer = 0, head = 0, current = null, locked = -1;
const canvas = document.getElementById('grid'), ctx = canvas.getContext('2d');
function draw() {
  current = cells(layer, head);
  const R = D.rows.length, C = D.cols.length, cell = Math.max(1, Math.floor(560 / Math.max(R, C)));
  canvas.width = C * cell; canvas.height = R * cell;
  const img = ctx.createImageData(canvas.width, canvas.height);
  let checksum = 0;
  for (let r = 0; r < R; ++r) for (let c = 0; c < C; ++c) {
    const v = current[r * C + c], masked = D.causal && D.colPos[c] > D.rowPos[r], rgb = masked ? [245,245,245] : colour(v);
    checksum += masked ? 0 : v * (r + 1) * (c + 1);
    for (let y = 0; y < cell; ++y) for (let x = 0; x < cell; ++x) {
      const p = ((r * cell + y) * canvas.width + c * cell + x) * 4;
      img.data[p] = rgb[0]; img.data[p + 1] = rgb[1]; img.data[p + 2] = rgb[2]; img.data[p + 3] = 255;
    }
  }
  ctx.putImageData(img, 0, 0);
  document.querySelectorAll('#heads button').forEach((b, i) => b.classList.toggle('on', i === head));
  document.getElementById('caption').textContent = `${D.model} · layer ${D.layers[layer]} · head ${D.heads[head]}`;
  document.body.dataset.layer = D.layers[layer]; document.body.dataset.head = D.heads[head];
  document.body.dataset.checksum = checksum.toFixed(6); document.body.dataset.rendered = 'yes';
  shade(locked);
}
function shade(row) {
  const spans = document.querySelectorAll('#text span');
  spans.forEach(s => { s.style.background = ''; s.classList.remove('query'); });
  if (row < 0 || !current) return;
  const C = D.cols.length;
  for (let c = 0; c < C; ++c) {
    const k = D.colPos[c] - D.firstPos;
    if (k < 0 || k >= spans.length) continue;
    const v = current[row * C + c], rgb = colour(v);
    spans[k].style.background = v > 0.01 ? `rgba(${rgb[0]},${rgb[1]},${rgb[2]},${Math.min(0.9, 0.25 + v)})` : '';
  }
  spans[D.rowPos[row] - D.firstPos].classList.add('query');
  document.getElementById('hover').textContent = `query: ${D.rows[row]}`;
}
const heads = document.getElementById('heads');
D.heads.forEach((h, i) => { const b = document.createElement('button'); b.textContent = 'H' + h;
  b.onclick = () => { head = i; draw(); }; heads.appendChild(b); });
const layers = document.getElementById('layer');
D.layers.forEach((l, i) => { const o = document.createElement('option'); o.value = i; o.textContent = 'layer ' + l; layers.appendChild(o); });
layers.onchange = () => { layer = +layers.value; draw(); };
const text = document.getElementById('text');
D.rows.forEach((t, r) => { const s = document.createElement('span'); s.textContent = t;
  s.onmouseenter = () => { if (locked < 0) shade(r); }; s.onclick = () => { locked = locked === r ? -1 : r; shade(r); };
  text.appendChild(s); text.appendChild(document.createTextNode(' ')); });
canvas.onmousemove = e => {
  const rect = canvas.getBoundingClientRect(), cell = canvas.width / D.cols.length;
  const r = Math.floor((e.clientY - rect.top) / cell), c = Math.floor((e.clientX - rect.left) / cell);
  if (r < 0 || r >= D.rows.length || c < 0 || c >= D.cols.length) return;
  document.getElementById('hover').textContent =
    `${D.rows[r]} → ${D.cols[c]}: ${current[r * D.cols.length + c].toFixed(3)}`;
  if (locked < 0) shade(r);
};
draw();
// page.html#layer=2&head=3 opens that head by clicking its controls (what a test drives).
const want = new URLSearchParams(location.hash.slice(1));
if (want.has('layer')) { const i = D.layers.indexOf(+want.get('layer')); if (i >= 0) { layers.value = i; layers.onchange(); } }
if (want.has('head')) { const i = D.heads.indexOf(+want.get('head')); if (i >= 0) heads.children[i].click(); }
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
#text span { padding: 1px 2px; border-radius: 3px; cursor: pointer; }
#text span.query { outline: 2px solid #e65a00; }
#caption, #hover { font-size: 13px; color: #555; min-height: 1.2em; }
)CSS";

std::string escapeHtml(const std::string& s)
{
    std::string out;
    for (char c : s)
        out += c == '<' ? std::string("&lt;") : c == '>' ? std::string("&gt;") : c == '&' ? std::string("&amp;") : std::string(1, c);
    return out;
}

} // namespace

std::string attentionPageHtml(const TextCapture& capture, const std::string& modelName, const PageOptions& o)
{
    const ModelInfo& info = capture.model;
    const int segments = static_cast<int>(capture.segments.size());
    const int segment = o.segment < 0 ? segments - 1 : o.segment;
    if (segment < 0 || segment >= segments)
        throw Error(ErrorCode::BadInput, "segment " + std::to_string(segment + 1) + " does not exist (" + std::to_string(segments) + ")");
    std::vector<int> layers = o.layers, heads = o.heads;
    if (layers.empty())
        for (int l = 0; l < info.layers; ++l)
            layers.push_back(l);
    if (heads.empty())
        for (int h = 0; h < info.heads; ++h)
            heads.push_back(h);
    for (int l : layers)
        if (l < 0 || l >= info.layers)
            throw Error(ErrorCode::BadInput, "layer " + std::to_string(l + 1) + " does not exist: layers are 1 .. " + std::to_string(info.layers));
    for (int h : heads)
        if (h < 0 || h >= info.heads)
            throw Error(ErrorCode::BadInput, "head " + std::to_string(h + 1) + " does not exist: heads are 1 .. " + std::to_string(info.heads));

    nlohmann::json data;
    data["model"] = modelName;
    data["causal"] = info.can.causal;
    nlohmann::json cells = nlohmann::json::array();
    bool labelled = false;
    for (int l : layers) {
        nlohmann::json byHead = nlohmann::json::array();
        for (int h : heads) {
            const AttentionGrid g = attentionGrid(capture, segment, l, {h});
            if (!labelled) {
                labelled = true;
                nlohmann::json rows = nlohmann::json::array(), cols = nlohmann::json::array();
                for (int t : g.rowTokens)
                    rows.push_back(capture.tokens[static_cast<std::size_t>(t)].text);
                for (int t : g.colTokens)
                    cols.push_back(capture.tokens[static_cast<std::size_t>(t)].text);
                data["rows"] = rows;
                data["cols"] = cols;
                data["rowPos"] = g.rowTokens;
                data["colPos"] = g.colTokens;
                data["firstPos"] = g.rowTokens.empty() ? 0 : g.rowTokens.front();
            }
            byHead.push_back(packCells(g.values));
        }
        cells.push_back(byHead);
    }
    nlohmann::json layerNumbers = nlohmann::json::array(), headNumbers = nlohmann::json::array();
    for (int l : layers)
        layerNumbers.push_back(l + 1);
    for (int h : heads)
        headNumbers.push_back(h + 1);
    data["layers"] = layerNumbers;
    data["heads"] = headNumbers;
    data["cells"] = cells;
    std::string json = data.dump();
    for (std::size_t at = 0; (at = json.find("</", at)) != std::string::npos; at += 3)
        json.replace(at, 2, "<\\/"); // never closes the script element
    const std::string title = o.title.empty() ? modelName + " · " + std::to_string(capture.tokens.size()) + " tokens" : o.title;
    return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escapeHtml(title) +
           " — attnscope</title>\n<style>" + kStyle + "</style></head>\n<body>\n<h1>" + escapeHtml(title) +
           "</h1>\n<div id=\"controls\"><select id=\"layer\"></select><span id=\"heads\"></span></div>\n"
           "<div id=\"caption\"></div>\n<div id=\"main\"><div><canvas id=\"grid\"></canvas><div id=\"hover\"></div></div>"
           "<div id=\"text\"></div></div>\n<script type=\"application/json\" id=\"attnscope-data\">" + json +
           "</script>\n<script>" + kScript + "</script>\n</body></html>\n";
}

} // namespace attnscope::core
