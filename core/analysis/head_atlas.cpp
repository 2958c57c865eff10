// Head atlas: text scores over a capture, the induction run, Jensen-Shannon distances and their clustering.
#include "analysis/head_atlas.h"

#include "attention/attention_scores.h"
#include "model/attention_model.h"
#include "tokenize/tokenizer.h"
#include "tokenize/unicode_class.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace attnscope::core {

namespace {

// The atlas describes attention heads: a convolution's channels or a scan's heads have no distribution to describe.
bool attentionSite(const TextCapture& capture, int site) { return capture.model.site(site).mixer == Mixer::Softmax; }
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void checkStop(const StopToken* stop)
{
    if (stop && stop->stopRequested())
        throw Error(ErrorCode::Cancelled, "head atlas cancelled");
}
} // namespace

HeadAtlas emptyAtlas(int layers, int heads)
{
    HeadAtlas a;
    a.layers = layers;
    a.heads = heads;
    a.rows.resize(static_cast<std::size_t>(layers) * heads);
    for (int l = 0; l < layers; ++l)
        for (int h = 0; h < heads; ++h) {
            auto& r = a.rows[static_cast<std::size_t>(l) * heads + h];
            r.scan = {l, h, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
            r.duplicateToken = kNaN;
            r.induction = kNaN;
        }
    return a;
}

HeadAtlas atlasFromScan(const ScanResult& scan, const std::string& profile)
{
    HeadAtlas a = emptyAtlas(scan.layers, scan.heads);
    const auto summaries = summariseHeads(scan, profile);
    for (std::size_t i = 0; i < summaries.size(); ++i)
        a.rows[i].scan = summaries[i];
    a.hasScan = true;
    return a;
}

bool isPunctuationToken(const std::string& text)
{
    bool any = false;
    for (std::size_t i = 0; i < text.size();) {
        std::size_t len;
        const char32_t c = decodeUtf8(text, i, len);
        i += len;
        if (isWhiteSpace(c) || c == U'\u0120' || c == U'\u2581') // Ġ and ▁: byte-level and SentencePiece spaces
            continue;
        const bool ascii = (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
        if (!ascii && !(categoryGroupMask('P') & categoryBit(generalCategory(c))))
            return false;
        any = true;
    }
    return any;
}

std::vector<TokenAttention> tokenAttentionScores(const TextCapture& capture, const StopToken* stop,
                                                 const AtlasProgress& progress)
{
    const int L = capture.model.layers, H = capture.model.heads;
    // What each token is: the special token starting the text (BERT's [CLS], <s>, BOS: an added special token in
    // first place), the other special tokens ([SEP], </s>: empty spans), punctuation.
    enum Kind : std::uint8_t { Plain, Cls, Sep, Punct };
    std::vector<std::uint8_t> kind(capture.tokens.size(), Plain);
    bool anyCls = false, anySep = false;
    const bool image = capture.model.can.image; // an image's tokens: CLS, DIST / registers, then patches
    for (std::size_t t = 0; t < capture.tokens.size(); ++t) {
        const auto& tok = capture.tokens[t];
        if (image) {
            kind[t] = tok.text == "CLS" ? Cls : tok.text == "DIST" || tok.text.rfind("REG", 0) == 0 ? Sep : Plain;
            anyCls |= kind[t] == Cls;
            anySep |= kind[t] == Sep;
            continue;
        }
        const bool special = tok.begin == tok.end;
        if ((special && t == 0) || tok.text == "[CLS]")
            kind[t] = Cls;
        else if (special || tok.text == "[SEP]")
            kind[t] = Sep;
        else if (isPunctuationToken(tok.text))
            kind[t] = Punct;
        anyCls |= kind[t] == Cls;
        anySep |= kind[t] == Sep;
    }
    struct Sums {
        double cls = 0, sep = 0, punct = 0, prev = 0, next = 0, entropy = 0, queries = 0, sink = 0;
        bool hasSink = false;
    };
    std::vector<Sums> sums(static_cast<std::size_t>(L) * H);
    const int total = L * static_cast<int>(capture.segments.size());
    int done = 0;
    for (int s = 0; s < static_cast<int>(capture.segments.size()); ++s) {
        const auto& seg = capture.segment(s);
        const auto keyPos = [&](int j) { return static_cast<std::size_t>(seg.firstPosition - seg.mlen + j); };
        for (int l = 0; l < L; ++l) {
            checkStop(stop);
            if (!attentionSite(capture, l))
                continue;
            const ScoreInputs in = capture.inputs(s, l);
#pragma omp parallel for schedule(dynamic)
            for (int h = 0; h < H; ++h) {
                std::vector<float> probs(static_cast<std::size_t>(seg.qlen) * seg.klen);
                headAttention(in, h, {}, probs.data(), seg.klen, 0.0f);
                Sums& acc = sums[static_cast<std::size_t>(l) * H + h];
                for (int i = 0; i < seg.qlen; ++i) {
                    const float* row = probs.data() + static_cast<std::size_t>(i) * seg.klen;
                    const int self = seg.mlen + i; // the query's own key
                    double entropy = 0, real = 0;
                    for (int j = 0; j < seg.klen; ++j) {
                        const double p = row[j];
                        real += p;
                        if (p <= 0)
                            continue;
                        entropy -= p * std::log(p);
                        switch (kind[keyPos(j)]) {
                        case Cls: acc.cls += p; break;
                        case Sep: acc.sep += p; break;
                        case Punct: acc.punct += p; break;
                        default: break;
                        }
                    }
                    if (self > 0)
                        acc.prev += row[self - 1];
                    if (self + 1 < seg.klen)
                        acc.next += row[self + 1];
                    acc.entropy += entropy;
                    acc.queries += 1;
                    if (in.sinks) { // what the real keys do not take, the sink does
                        acc.sink += 1.0 - real;
                        acc.hasSink = true;
                    }
                }
            }
            if (progress)
                progress(++done, total);
        }
    }
    std::vector<TokenAttention> out(sums.size());
    for (std::size_t i = 0; i < sums.size(); ++i) {
        const auto& a = sums[i];
        if (a.queries == 0)
            continue;
        auto& o = out[i];
        o.cls = anyCls ? a.cls / a.queries : kNaN;
        o.sep = anySep ? a.sep / a.queries : kNaN;
        o.punctuation = a.punct / a.queries;
        o.previous = a.prev / a.queries;
        o.next = a.next / a.queries;
        o.entropy = a.entropy / a.queries;
        o.learnedSink = a.hasSink ? a.sink / a.queries : kNaN;
    }
    return out;
}

std::vector<TokenAttention> tokenAttentionByLayer(const std::vector<TokenAttention>& heads, int layers)
{
    std::vector<TokenAttention> out(static_cast<std::size_t>(layers));
    if (layers <= 0 || heads.empty())
        return out;
    const std::size_t H = heads.size() / static_cast<std::size_t>(layers);
    for (int l = 0; l < layers; ++l) {
        auto mean = [&](double TokenAttention::*field) {
            double s = 0;
            for (std::size_t h = 0; h < H; ++h)
                s += heads[static_cast<std::size_t>(l) * H + h].*field;
            return s / static_cast<double>(H);
        };
        auto& o = out[static_cast<std::size_t>(l)];
        o.cls = mean(&TokenAttention::cls);
        o.sep = mean(&TokenAttention::sep);
        o.punctuation = mean(&TokenAttention::punctuation);
        o.previous = mean(&TokenAttention::previous);
        o.next = mean(&TokenAttention::next);
        o.entropy = mean(&TokenAttention::entropy);
        o.learnedSink = mean(&TokenAttention::learnedSink);
        o.highNorm = mean(&TokenAttention::highNorm);
    }
    return out;
}

void addHighNormAttention(const AttentionModel& model, const TextCapture& capture, std::vector<TokenAttention>& scores,
                          const StopToken* stop)
{
    // Each layer's input norms: the embedding for layer 0, the previous layer's output after that.
    struct Norms final : AttentionObserver {
        bool wantProbabilities() const override { return false; }
        void onSegment(const SegmentView& s) override { add(s.embedding, s.qlen, s.dModel); }
        void onLayer(const LayerView& l) override { add(l.hidden, l.qlen, l.dModel); }
        void add(const float* x, int rows, int width)
        {
            std::vector<double> n(static_cast<std::size_t>(rows));
            for (int r = 0; r < rows; ++r) {
                double s = 0;
                for (int c = 0; c < width; ++c)
                    s += static_cast<double>(x[static_cast<std::size_t>(r) * width + c]) * x[static_cast<std::size_t>(r) * width + c];
                n[static_cast<std::size_t>(r)] = std::sqrt(s);
            }
            norms.push_back(std::move(n));
        }
        std::vector<std::vector<double>> norms; // [layers + 1][tokens]
    } observer;
    rerunSegment(model, capture, 0, observer, stop);
    const auto& seg = capture.segment(0);
    const int L = capture.model.layers, H = capture.model.heads;
    for (int l = 0; l < L && static_cast<std::size_t>(l) < observer.norms.size(); ++l) {
        auto sorted = observer.norms[static_cast<std::size_t>(l)];
        if (sorted.size() != static_cast<std::size_t>(seg.klen))
            continue; // a segment with memory: its keys are not this run's rows
        std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
        const double median = sorted[sorted.size() / 2];
        std::vector<int> high;
        for (int j = 0; j < seg.klen; ++j)
            if (observer.norms[static_cast<std::size_t>(l)][static_cast<std::size_t>(j)] > 4.0 * median)
                high.push_back(j);
        if (high.empty())
            continue;
        if (!attentionSite(capture, l))
            continue;
        const ScoreInputs in = capture.inputs(0, l);
        std::vector<float> probs(static_cast<std::size_t>(seg.qlen) * seg.klen);
        for (int h = 0; h < H; ++h) {
            headAttention(in, h, {}, probs.data(), seg.klen, 0.0f);
            double mass = 0;
            for (int i = 0; i < seg.qlen; ++i)
                for (const int j : high)
                    mass += probs[static_cast<std::size_t>(i) * seg.klen + static_cast<std::size_t>(j)];
            scores[static_cast<std::size_t>(l) * H + h].highNorm = mass / seg.qlen;
        }
    }
}

void addTokenAttention(HeadAtlas& atlas, const std::vector<TokenAttention>& scores)
{
    for (std::size_t i = 0; i < atlas.rows.size() && i < scores.size(); ++i)
        atlas.rows[i].tokens = scores[i];
    atlas.hasText = true;
}

void addTextScores(HeadAtlas& atlas, const std::vector<double>& duplicateToken)
{
    for (std::size_t i = 0; i < atlas.rows.size() && i < duplicateToken.size(); ++i)
        atlas.rows[i].duplicateToken = duplicateToken[i];
    atlas.hasText = true;
}

void addInductionScores(HeadAtlas& atlas, const std::vector<double>& induction)
{
    for (std::size_t i = 0; i < atlas.rows.size() && i < induction.size(); ++i)
        atlas.rows[i].induction = induction[i];
    atlas.hasInduction = true;
}

void addDuplicateToken(const float* probs, int rows, int cols, std::span<const int> rowPos, std::span<const int> colPos,
                       std::span<const std::int32_t> ids, double& sum, double& queries)
{
    for (int i = 0; i < rows; ++i) {
        const int qp = rowPos[static_cast<std::size_t>(i)];
        const std::int32_t id = ids[static_cast<std::size_t>(qp)];
        double mass = 0;
        bool seen = false;
        for (int j = 0; j < cols; ++j) {
            const int kp = colPos[static_cast<std::size_t>(j)];
            if (kp >= 0 && kp < qp && ids[static_cast<std::size_t>(kp)] == id) {
                mass += probs[static_cast<std::size_t>(i) * cols + j];
                seen = true;
            }
        }
        if (seen) {
            sum += mass;
            queries += 1;
        }
    }
}

double inductionScore(const float* probs, int T, int prefix, int R)
{
    if (R < 1 || prefix + 2 * R > T)
        throw Error(ErrorCode::BadInput, "the induction sequence needs " + std::to_string(prefix + 2 * R) +
                                             " tokens, the attention has " + std::to_string(T));
    double sum = 0;
    for (int i = prefix + R; i < prefix + 2 * R; ++i)
        sum += probs[static_cast<std::size_t>(i) * T + (i - R + 1)];
    return sum / R;
}

double jensenShannonDistance(std::span<const float> p, std::span<const float> q)
{
    double sp = 0, sq = 0;
    for (float v : p)
        sp += std::max(0.0f, v);
    for (float v : q)
        sq += std::max(0.0f, v);
    if (sp <= 0 || sq <= 0)
        return kNaN;
    double js = 0;
    for (std::size_t d = 0; d < p.size(); ++d) {
        const double a = std::max(0.0f, p[d]) / sp, b = std::max(0.0f, q[d]) / sq, m = 0.5 * (a + b);
        if (a > 0)
            js += 0.5 * a * std::log2(a / m);
        if (b > 0)
            js += 0.5 * b * std::log2(b / m);
    }
    return std::sqrt(std::max(0.0, js));
}

std::vector<double> duplicateTokenScores(const TextCapture& capture, const StopToken* stop, const AtlasProgress& progress)
{
    const int L = capture.model.layers, H = capture.model.heads;
    std::vector<std::int32_t> ids = idsOf(capture.tokens);
    std::vector<double> sum(static_cast<std::size_t>(L) * H, 0.0), queries(sum.size(), 0.0);
    const int total = L * static_cast<int>(capture.segments.size());
    int done = 0;
    for (int s = 0; s < static_cast<int>(capture.segments.size()); ++s) {
        const auto& seg = capture.segment(s);
        std::vector<int> rowPos(static_cast<std::size_t>(seg.qlen)), colPos(static_cast<std::size_t>(seg.klen));
        for (int i = 0; i < seg.qlen; ++i)
            rowPos[static_cast<std::size_t>(i)] = static_cast<int>(seg.firstPosition) + i;
        for (int j = 0; j < seg.klen; ++j)
            colPos[static_cast<std::size_t>(j)] = static_cast<int>(seg.firstPosition) - seg.mlen + j;
        // Only queries whose token is among their visible earlier keys count: compute just those rows.
        std::vector<int> rows, rowsPos;
        for (int i = 0; i < seg.qlen; ++i) {
            const auto& span = seg.spans[static_cast<std::size_t>(i)];
            for (int j = span.lo; j < span.lo + span.len; ++j)
                if (colPos[static_cast<std::size_t>(j)] < rowPos[static_cast<std::size_t>(i)] &&
                    ids[static_cast<std::size_t>(colPos[static_cast<std::size_t>(j)])] == ids[static_cast<std::size_t>(rowPos[static_cast<std::size_t>(i)])]) {
                    rows.push_back(i);
                    rowsPos.push_back(rowPos[static_cast<std::size_t>(i)]);
                    break;
                }
        }
        for (int l = 0; l < L; ++l) {
            checkStop(stop);
            if (!rows.empty() && attentionSite(capture, l)) {
                const ScoreInputs in = capture.inputs(s, l);
#pragma omp parallel for schedule(dynamic)
                for (int h = 0; h < H; ++h) {
                    std::vector<float> probs(rows.size() * static_cast<std::size_t>(seg.klen));
                    headAttentionRows(in, h, {}, rows, probs.data(), seg.klen, 0.0f);
                    const std::size_t at = static_cast<std::size_t>(l) * H + h;
                    addDuplicateToken(probs.data(), static_cast<int>(rows.size()), seg.klen, rowsPos, colPos, ids, sum[at],
                                      queries[at]);
                }
            }
            if (progress)
                progress(++done, total);
        }
    }
    std::vector<double> out(sum.size());
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = queries[i] > 0 ? sum[i] / queries[i] : kNaN;
    return out;
}

std::vector<std::int32_t> inductionSequence(int vocabSize, const Tokenizer* tokenizer, int R, unsigned seed)
{
    std::vector<std::int32_t> ids;
    std::vector<std::int32_t> specials;
    if (tokenizer) {
        for (const auto& t : tokenizer->specialPrefix())
            ids.push_back(t.id);
        for (const auto& t : tokenizer->specialSuffix())
            specials.push_back(t.id);
    }
    specials.insert(specials.end(), ids.begin(), ids.end());
    // Ordinary tokens: vocabularies keep special and byte tokens at their ends (Llama 2's first 259, Llama 3's last
    // 256, GPT-2's last), so draw from the middle 85%.
    const int lo = vocabSize / 20, hi = std::max(lo + 1, vocabSize * 9 / 10);
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> pick(lo, hi - 1);
    std::vector<std::int32_t> part;
    while (static_cast<int>(part.size()) < R) {
        const int id = pick(rng);
        if (std::find(specials.begin(), specials.end(), id) == specials.end())
            part.push_back(id);
    }
    ids.insert(ids.end(), part.begin(), part.end());
    ids.insert(ids.end(), part.begin(), part.end());
    return ids;
}

std::vector<double> inductionScores(const AttentionModel& model, const Tokenizer* tokenizer, int R,
                                    const StopToken* stop, const AtlasProgress& progress)
{
    const auto& info = model.info();
    const auto ids = inductionSequence(info.vocabSize, tokenizer, R);
    const int T = static_cast<int>(ids.size()), prefix = T - 2 * R;
    if (T > info.maxSegmentLen)
        throw Error(ErrorCode::BadInput, "the induction sequence (" + std::to_string(T) +
                                             " tokens) is longer than this model's context");
    // One segment from an empty memory: the second copy sees the first directly.
    std::vector<Token> tokens;
    for (auto id : ids)
        tokens.push_back({id, {}, 0, 0});
    CaptureOptions opt;
    opt.segmentLen = T;
    opt.run.memLen = 0;
    opt.run.stop = stop;
    opt.stateBudget = 0;
    const auto capture = captureText(model, std::move(tokens), opt);
    std::vector<double> out(static_cast<std::size_t>(info.layers) * info.heads);
    std::vector<float> probs(static_cast<std::size_t>(T) * T);
    for (int l = 0; l < info.layers; ++l) {
        checkStop(stop);
        const ScoreInputs in = capture->inputs(0, l);
        for (int h = 0; h < info.heads; ++h) {
            headAttention(in, h, {}, probs.data(), T, 0.0f);
            out[static_cast<std::size_t>(l) * info.heads + h] = inductionScore(probs.data(), T, prefix, R);
        }
        if (progress)
            progress(l + 1, info.layers);
    }
    return out;
}

std::vector<double> headDistances(const ScanResult& scan, const std::string& profile)
{
    const auto avg = scan.average(profile);
    const int n = scan.layers * scan.heads, D = scan.distances;
    std::vector<double> out(static_cast<std::size_t>(n) * n, 0.0);
    for (int a = 0; a < n; ++a)
        for (int b = a + 1; b < n; ++b) {
            const double d = jensenShannonDistance(std::span(avg).subspan(static_cast<std::size_t>(a) * D, D),
                                                   std::span(avg).subspan(static_cast<std::size_t>(b) * D, D));
            out[static_cast<std::size_t>(a) * n + b] = out[static_cast<std::size_t>(b) * n + a] = std::isnan(d) ? 1.0 : d;
        }
    return out;
}

std::vector<int> clusterOrder(const std::vector<double>& dist, int n)
{
    // Average linkage: clusters merge by the mean distance between their members; the order lists each merged
    // pair's members side by side (left cluster first), so the final cluster's order puts neighbours together.
    std::vector<std::vector<int>> clusters(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        clusters[static_cast<std::size_t>(i)] = {i};
    std::vector<double> d(dist); // linkage between clusters, indexed by their first slot
    std::vector<bool> alive(static_cast<std::size_t>(n), true);
    for (int merges = 0; merges + 1 < n; ++merges) {
        int bestA = -1, bestB = -1;
        double best = std::numeric_limits<double>::infinity();
        for (int a = 0; a < n; ++a) {
            if (!alive[static_cast<std::size_t>(a)])
                continue;
            for (int b = a + 1; b < n; ++b)
                if (alive[static_cast<std::size_t>(b)] && d[static_cast<std::size_t>(a) * n + b] < best) {
                    best = d[static_cast<std::size_t>(a) * n + b];
                    bestA = a;
                    bestB = b;
                }
        }
        auto& A = clusters[static_cast<std::size_t>(bestA)];
        auto& B = clusters[static_cast<std::size_t>(bestB)];
        const double na = static_cast<double>(A.size()), nb = static_cast<double>(B.size());
        for (int c = 0; c < n; ++c) {
            if (!alive[static_cast<std::size_t>(c)] || c == bestA || c == bestB)
                continue;
            const double v = (na * d[static_cast<std::size_t>(bestA) * n + c] + nb * d[static_cast<std::size_t>(bestB) * n + c]) / (na + nb);
            d[static_cast<std::size_t>(bestA) * n + c] = d[static_cast<std::size_t>(c) * n + bestA] = v;
        }
        A.insert(A.end(), B.begin(), B.end());
        B.clear();
        alive[static_cast<std::size_t>(bestB)] = false;
    }
    for (int i = 0; i < n; ++i)
        if (alive[static_cast<std::size_t>(i)])
            return clusters[static_cast<std::size_t>(i)];
    return {};
}

const std::vector<AtlasColumn>& atlasColumns()
{
    static const std::vector<AtlasColumn> columns{
        {"query_entropy", "query entropy", 3},  {"attended_distance", "attended dist", 1},
        {"previous_token", "prev token", 3},    {"sink_rate", "sink rate", 3},
        {"first_key_mass", "first key", 3},     {"profile_entropy", "profile entropy", 3},
        {"profile_span", "span", 0},            {"duplicate_token", "dup token", 3},
        {"induction", "induction", 3},
        // Clark et al.'s statistics over the current text.
        {"to_cls", "to [CLS]", 3},              {"to_sep", "to [SEP]", 3},
        {"to_punct", "to punct", 3},            {"to_prev", "to prev", 3},
        {"to_next", "to next", 3},              {"text_entropy", "text entropy", 3},
        {"learned_sink", "learned sink", 3}, // gpt-oss: the sink's mean share of a query's attention
        {"to_high_norm", "to high-norm", 3}, // attention to tokens of outlying norm (vision registers' artefacts)
    };
    return columns;
}

double atlasValue(const AtlasRow& r, std::size_t column)
{
    const auto& s = r.scan;
    switch (column) {
    case 0: return s.queryEntropy;
    case 1: return s.attendedDistance;
    case 2: return s.previousToken;
    case 3: return s.sinkRate;
    case 4: return s.firstKeyMass;
    case 5: return s.entropy;
    case 6: return s.span;
    case 7: return r.duplicateToken;
    case 8: return r.induction;
    case 9: return r.tokens.cls;
    case 10: return r.tokens.sep;
    case 11: return r.tokens.punctuation;
    case 12: return r.tokens.previous;
    case 13: return r.tokens.next;
    case 14: return r.tokens.entropy;
    case 15: return r.tokens.learnedSink;
    case 16: return r.tokens.highNorm;
    default: return kNaN;
    }
}

std::string formatAtlas(const HeadAtlas& atlas, TableFormat format, const std::vector<std::size_t>& orderIn)
{
    std::vector<std::size_t> order = orderIn;
    if (order.empty()) {
        order.resize(atlas.rows.size());
        std::iota(order.begin(), order.end(), 0);
    }
    const auto& cols = atlasColumns();
    std::string out;
    char buf[64];
    auto number = [&](double v, int decimals, const char* missing) -> std::string {
        if (std::isnan(v))
            return missing;
        std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
        return buf;
    };
    if (format == TableFormat::Json) {
        out = "[\n";
        for (std::size_t k = 0; k < order.size(); ++k) {
            const auto& r = atlas.rows[order[k]];
            out += "  {\"layer\": " + std::to_string(r.scan.layer + 1) + ", \"head\": " + std::to_string(r.scan.head + 1);
            for (std::size_t c = 0; c < cols.size(); ++c) {
                const double v = atlasValue(r, c);
                if (std::isnan(v))
                    out += std::string(", \"") + cols[c].key + "\": null";
                else {
                    std::snprintf(buf, sizeof buf, "%.9g", v);
                    out += std::string(", \"") + cols[c].key + "\": " + buf;
                }
            }
            out += k + 1 < order.size() ? "},\n" : "}\n";
        }
        return out + "]\n";
    }
    if (format == TableFormat::Csv) {
        out = "layer,head";
        for (const auto& c : cols)
            out += std::string(",") + c.key;
        out += "\n";
        for (std::size_t i : order) {
            const auto& r = atlas.rows[i];
            out += std::to_string(r.scan.layer + 1) + "," + std::to_string(r.scan.head + 1);
            for (std::size_t c = 0; c < cols.size(); ++c) {
                const double v = atlasValue(r, c);
                if (!std::isnan(v)) {
                    std::snprintf(buf, sizeof buf, ",%.9g", v);
                    out += buf;
                } else {
                    out += ",";
                }
            }
            out += "\n";
        }
        return out;
    }
    // Text: right-aligned columns as wide as their titles.
    out = "layer  head";
    for (const auto& c : cols) {
        std::snprintf(buf, sizeof buf, "  %*s", static_cast<int>(std::max<std::size_t>(7, std::string(c.title).size())), c.title);
        out += buf;
    }
    out += "\n";
    for (std::size_t i : order) {
        const auto& r = atlas.rows[i];
        std::snprintf(buf, sizeof buf, "%5d  %4d", r.scan.layer + 1, r.scan.head + 1);
        out += buf;
        for (std::size_t c = 0; c < cols.size(); ++c) {
            const std::string v = number(atlasValue(r, c), cols[c].decimals, "-");
            std::snprintf(buf, sizeof buf, "  %*s", static_cast<int>(std::max<std::size_t>(7, std::string(cols[c].title).size())), v.c_str());
            out += buf;
        }
        out += "\n";
    }
    return out;
}

} // namespace attnscope::core
