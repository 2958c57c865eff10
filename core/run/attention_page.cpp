// The self-contained attention page (attention_page.h). Cells are stored per head as base64 of (zeros skipped as a
// varint, then the value as a byte) pairs, row-major over [queries, keys]; the page's script decodes them.
#include "run/attention_page.h"

#include "analysis/attention_grid.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cmath>

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
std::string packCells(const std::vector<float>& values)
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
    return base64(out);
}

// The page's script: decodes the cells, draws the grid on a canvas (viridis), and wires the selectors and the text.
constexpr const char* kScript = R"JS(
const D = JSON.parse(document.getElementById('attnscope-data').textContent);
const stops = [[68,1,84],[71,44,122],[59,81,139],[44,113,142],[33,144,141],[39,173,129],[92,200,99],[170,220,50],[253,231,37]];
function colour(t) {
  const x = Math.min(1, Math.max(0, t)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), f = x - i;
  return stops[i].map((c, k) => Math.round(c + f * (stops[i + 1][k] - c)));
}
function cells(layer, head) {
  const bin = atob(D.cells[layer][head]), out = new Float32Array(D.rows.length * D.cols.length);
  let at = 0, i = 0;
  while (i < bin.length) {
    let skip = 0, shift = 0, b;
    do { b = bin.charCodeAt(i++); skip += (b & 127) * Math.pow(2, shift); shift += 7; } while (b & 128);
    at += skip;
    out[at++] = bin.charCodeAt(i++) / 255;
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
