// Query-key space: vectors out of the capture, AttentionViz's normalisation, the 2-D embedding (core/embed) and how
// far its distances stand for the dot products.
#include "analysis/qk_space.h"

#include "analysis/attention_grid.h"

#include "embed/pca.h"
#include "util/csv_field.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace attnscope::core {

namespace {
// The one range check of a head the vectors are taken from (text, Transformer-XL's positions, corpus).
void checkHead(int layers, int heads, int layer, int head)
{
    if (layer < 0 || layer >= layers)
        throw Error(ErrorCode::BadInput, "no layer " + std::to_string(layer + 1) + " in this model");
    if (head < 0 || head >= heads)
        throw Error(ErrorCode::BadInput, "no head " + std::to_string(head + 1) + " in this layer");
}
} // namespace

QkVectors headQkVectors(const TextCapture& capture, int segment, int site, int head)
{
    checkHead(capture.model.siteCount(), capture.model.site(std::clamp(site, 0, capture.model.siteCount() - 1)).heads,
              site, head);
    const ScoreInputs in = capture.inputs(segment, site);
    if (in.mixer != Mixer::Softmax)
        throw Error(ErrorCode::BadInput, capture.model.site(site).label() + " mixes tokens by a " + mixerRow(in.mixer).name +
                                             ": it has no query and key vectors to embed");
    AttentionGrid placed;
    placeGrid(capture, segment, site, placed);
    QkVectors v;
    v.dim = in.headDim;
    v.queryStream = placed.rowStream;
    v.keyStream = placed.colStream;
    const int kh = in.keyHead(head);
    for (int i = 0; i < in.qlen; ++i) {
        const float* q = in.queries.row(i) + static_cast<std::size_t>(head) * in.headDim;
        v.queries.insert(v.queries.end(), q, q + in.headDim);
        v.queryPositions.push_back(placed.rowTokens[static_cast<std::size_t>(i)]);
    }
    for (int j = 0; j < in.klen; ++j) {
        const std::int64_t pos = placed.colTokens[static_cast<std::size_t>(j)];
        if (!capture.padding.empty() && placed.colStream == capture.model.segmentStream() && pos >= 0 &&
            pos < static_cast<std::int64_t>(capture.padding.size()) && capture.padding[static_cast<std::size_t>(pos)])
            continue; // an encoder's padding is no key anyone sees
        const float* k = in.keys.row(j) + static_cast<std::size_t>(kh) * in.headDim;
        v.keys.insert(v.keys.end(), k, k + in.headDim);
        v.keyPositions.push_back(pos);
    }
    return v;
}

QkVectors headPositionVectors(const TextCapture& capture, int segment, int layer, int head)
{
    const auto& seg = capture.segment(segment);
    checkHead(capture.model.siteCount(), capture.model.heads, layer, head);
    const ScoreInputs in = capture.inputs(segment, layer);
    if (!in.relativeTerms())
        throw Error(ErrorCode::BadInput, "only Transformer-XL has a position part (relative encodings R) to embed");
    QkVectors v;
    v.dim = in.headDim;
    v.keysAreDistances = true;
    const std::size_t off = static_cast<std::size_t>(head) * in.headDim;
    for (int i = 0; i < in.qlen; ++i) {
        const float* q = in.queries.row(i) + off;
        for (int c = 0; c < in.headDim; ++c)
            v.queries.push_back(q[c] + (in.v ? in.v[off + static_cast<std::size_t>(c)] : 0.0f));
        v.queryPositions.push_back(seg.firstPosition + i);
    }
    for (int d = 0; d < in.klen; ++d) {
        const float* r = in.relative.row(d) + off;
        v.keys.insert(v.keys.end(), r, r + in.headDim);
        v.keyPositions.push_back(d);
    }
    return v;
}

QkVectors corpusQkVectors(const AttentionModel& model, std::span<const Token> tokens, int layer, int head,
                          const StopToken* stop, const std::function<void(double)>& progress)
{
    const auto& info = model.info();
    checkHead(info.layers, info.heads, layer, head);
    if (tokens.empty())
        throw Error(ErrorCode::BadInput, "the corpus tokenizes to nothing");
    // Collects the head's rows of one layer while the segments run; nothing else is kept.
    class Collector final : public AttentionObserver {
    public:
        Collector(int layer, int head, std::size_t total, const std::function<void(double)>& progress)
            : m_layer(layer), m_head(head), m_total(total), m_progress(progress)
        {
        }
        bool wantProbabilities() const override { return false; }
        void onLayer(const LayerView& l) override
        {
            if (l.layer != m_layer)
                return;
            const ScoreInputs& in = l.inputs;
            v.dim = in.headDim;
            const int kh = in.keyHead(m_head);
            for (int i = 0; i < in.qlen; ++i) {
                const float* q = in.queries.row(i) + static_cast<std::size_t>(m_head) * in.headDim;
                v.queries.insert(v.queries.end(), q, q + in.headDim);
                v.queryPositions.push_back(m_seen + i);
            }
            for (int j = in.mlen; j < in.klen; ++j) { // this segment's own keys (memory ones came with theirs)
                const float* k = in.keys.row(j) + static_cast<std::size_t>(kh) * in.headDim;
                v.keys.insert(v.keys.end(), k, k + in.headDim);
                v.keyPositions.push_back(m_seen + (j - in.mlen));
            }
            m_seen += in.qlen;
            if (m_progress)
                m_progress(static_cast<double>(m_seen) / static_cast<double>(m_total));
        }
        QkVectors v;

    private:
        int m_layer, m_head;
        std::size_t m_total;
        const std::function<void(double)>& m_progress;
        std::int64_t m_seen = 0;
    } collector(layer, head, tokens.size(), progress);
    std::vector<std::int32_t> ids = idsOf(tokens);
    RunOptions options;
    options.memLen = info.defaultMemLen;
    options.stop = stop;
    model.runSplit(ids, std::min(info.defaultSegmentLen, info.maxSegmentLen), options, collector);
    return std::move(collector.v);
}

std::vector<std::array<int, 3>> strongestKeys(const QkVectors& v, const SegmentCapture& seg)
{
    using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    const int nq = v.nq(), nk = v.nk();
    std::vector<std::array<int, 3>> out(static_cast<std::size_t>(nq), {-1, -1, -1});
    if (nq == 0 || nk == 0)
        return out;
    const Eigen::Map<const RowMatrix> q(v.queries.data(), nq, v.dim), k(v.keys.data(), nk, v.dim);
    constexpr int kBlock = 256; // rows of dot products at a time: memory stays small for long segments
    for (int b0 = 0; b0 < nq; b0 += kBlock) {
        const int rows = std::min(kBlock, nq - b0);
        const RowMatrix dots = q.middleRows(b0, rows) * k.transpose();
        for (int r = 0; r < rows; ++r) {
            const int i = b0 + r;
            std::array<std::pair<float, int>, 3> best{{{0, -1}, {0, -1}, {0, -1}}};
            for (int j = 0; j < nk; ++j) {
                const int key = static_cast<int>(v.keyPositions[static_cast<std::size_t>(j)] - (seg.firstPosition - seg.mlen));
                if (seg.masked(i, key))
                    continue;
                const float d = dots(r, j);
                int at = 3;
                while (at > 0 && (best[static_cast<std::size_t>(at) - 1].second < 0 || d > best[static_cast<std::size_t>(at) - 1].first))
                    --at;
                if (at < 3) {
                    for (int m = 2; m > at; --m)
                        best[static_cast<std::size_t>(m)] = best[static_cast<std::size_t>(m) - 1];
                    best[static_cast<std::size_t>(at)] = {d, nq + j};
                }
            }
            for (std::size_t m = 0; m < 3; ++m)
                out[static_cast<std::size_t>(i)][m] = best[m].second;
        }
    }
    return out;
}

void normaliseQk(QkVectors& v)
{
    const int d = v.dim, nq = v.nq(), nk = v.nk();
    if (nq == 0 || nk == 0)
        return;
    std::vector<double> mq(static_cast<std::size_t>(d), 0.0), mk(static_cast<std::size_t>(d), 0.0);
    for (int i = 0; i < nq; ++i)
        for (int c = 0; c < d; ++c)
            mq[static_cast<std::size_t>(c)] += v.queries[static_cast<std::size_t>(i) * d + c] / nq;
    for (int j = 0; j < nk; ++j)
        for (int c = 0; c < d; ++c)
            mk[static_cast<std::size_t>(c)] += v.keys[static_cast<std::size_t>(j) * d + c] / nk;
    for (int j = 0; j < nk; ++j)
        for (int c = 0; c < d; ++c)
            v.keys[static_cast<std::size_t>(j) * d + c] += static_cast<float>(mq[static_cast<std::size_t>(c)] - mk[static_cast<std::size_t>(c)]);
    auto meanNorm = [d](const std::vector<float>& rows, int n) {
        double s = 0;
        for (int i = 0; i < n; ++i) {
            double r = 0;
            for (int c = 0; c < d; ++c)
                r += static_cast<double>(rows[static_cast<std::size_t>(i) * d + c]) * rows[static_cast<std::size_t>(i) * d + c];
            s += std::sqrt(r);
        }
        return s / n;
    };
    const double nqNorm = meanNorm(v.queries, nq), nkNorm = meanNorm(v.keys, nk);
    if (nqNorm <= 0 || nkNorm <= 0)
        return;
    const double a = std::sqrt(nqNorm / nkNorm);
    for (auto& x : v.queries)
        x = static_cast<float>(x / a);
    for (auto& x : v.keys)
        x = static_cast<float>(x * a);
}

std::optional<QkMethod> qkMethodNamed(const std::string& name)
{
    for (const QkMethod m : {QkMethod::Pca, QkMethod::Tsne, QkMethod::Umap})
        if (name == qkMethodName(m))
            return m;
    return std::nullopt;
}

const char* qkMethodName(QkMethod method)
{
    switch (method) {
    case QkMethod::Pca: return "pca";
    case QkMethod::Tsne: return "tsne";
    case QkMethod::Umap: return "umap";
    }
    return "pca";
}

QkEmbedding embedQk(const QkVectors& v, QkMethod method, const TsneOptions& tsneOptions, const StopToken* stop,
                    const EmbeddingProgress& progress)
{
    QkEmbedding e;
    e.queries = v.nq();
    e.keys = v.nk();
    const int n = e.queries + e.keys, d = v.dim;
    std::vector<float> all(v.queries);
    all.insert(all.end(), v.keys.begin(), v.keys.end());
    std::vector<float> xy;
    if (method == QkMethod::Pca) {
        xy = pca2(all, n, d);
    } else if (method == QkMethod::Umap) {
        xy = umap2(all, n, d, {}, stop, progress);
    } else {
        TsneResult t = tsne2(all, n, d, tsneOptions, stop, progress);
        e.klDivergence = t.klDivergence;
        xy = std::move(t.xy);
    }
    e.x.resize(static_cast<std::size_t>(n));
    e.y.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        e.x[static_cast<std::size_t>(i)] = xy[static_cast<std::size_t>(i) * 2];
        e.y[static_cast<std::size_t>(i)] = xy[static_cast<std::size_t>(i) * 2 + 1];
    }
    // Per query, the Pearson correlation over its keys of q.k with minus the distance in the picture (a softmax only
    // compares one query's keys), averaged over the queries; a fixed subset past 400 queries.
    const int qStep = std::max(1, e.queries / 400);
    double total = 0;
    int counted = 0;
    for (int i = 0; i < e.queries; i += qStep) {
        double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
        for (int j = 0; j < e.keys; ++j) {
            double dot = 0;
            for (int c = 0; c < d; ++c)
                dot += static_cast<double>(v.queries[static_cast<std::size_t>(i) * d + c]) * v.keys[static_cast<std::size_t>(j) * d + c];
            const std::size_t a = static_cast<std::size_t>(i), b = static_cast<std::size_t>(e.queries + j);
            const double dist = -std::hypot(e.x[a] - e.x[b], e.y[a] - e.y[b]);
            sa += dot, sb += dist, saa += dot * dot, sbb += dist * dist, sab += dot * dist;
        }
        const double m = e.keys;
        const double cov = sab / m - sa / m * sb / m;
        const double va = saa / m - sa / m * sa / m, vb = sbb / m - sb / m * sb / m;
        if (va > 1e-12 && vb > 1e-12) {
            total += cov / std::sqrt(va * vb);
            ++counted;
        }
    }
    e.correlation = counted ? total / counted : 0;
    return e;
}

namespace {
// Every point of the embedding in export order (queries, then keys): kind, the position as exported (a token's from
// 1, a relative encoding's distance from 0), token text, index.
template <class F>
void forEachPoint(const QkVectors& v, const QkEmbedding& e, const std::vector<Token>& tokens, F&& f)
{
    auto text = [&](std::int64_t pos) {
        return pos >= 0 && pos < static_cast<std::int64_t>(tokens.size()) ? tokens[static_cast<std::size_t>(pos)].text
                                                                           : std::string();
    };
    for (int i = 0; i < e.queries; ++i) {
        const std::int64_t pos = v.queryPositions[static_cast<std::size_t>(i)];
        f('q', pos + 1, text(pos), static_cast<std::size_t>(i));
    }
    for (int j = 0; j < e.keys; ++j) {
        const std::int64_t pos = v.keyPositions[static_cast<std::size_t>(j)];
        if (v.keysAreDistances)
            f('r', pos, std::string(), static_cast<std::size_t>(e.queries + j));
        else
            f('k', pos + 1, text(pos), static_cast<std::size_t>(e.queries + j));
    }
}
} // namespace

std::string qkCsv(const QkVectors& v, const QkEmbedding& e, const std::vector<Token>& tokens)
{
    std::string out = "kind,position,token,x,y\n";
    char buf[64];
    forEachPoint(v, e, tokens, [&](char kind, std::int64_t shown, const std::string& text, std::size_t i) {
        std::snprintf(buf, sizeof buf, "%.6g,%.6g", e.x[i], e.y[i]);
        out += std::string(1, kind) + "," + std::to_string(shown) + "," + csvField(text) + "," + buf + "\n";
    });
    return out;
}

std::string qkJson(const QkVectors& v, const QkEmbedding& e, const std::vector<Token>& tokens)
{
    nlohmann::json points = nlohmann::json::array();
    forEachPoint(v, e, tokens, [&](char kind, std::int64_t shown, const std::string& text, std::size_t i) {
        points.push_back({{"kind", std::string(1, kind)}, {"position", shown}, {"token", text}, {"x", e.x[i]}, {"y", e.y[i]}});
    });
    const nlohmann::json doc{{"correlation", e.correlation}, {"kl_divergence", e.klDivergence}, {"points", std::move(points)}};
    return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

} // namespace attnscope::core
