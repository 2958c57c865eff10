// Relative-position scan: the accumulation observer, the scanner and its streaming file reader.
#include "analysis/relpos_scan.h"
#include "tokenize/tokenizer.h"

#include "attention/attention_scores.h"
#include "model/run_limits.h"
#include "run/text_capture.h"

#include <Eigen/Core>
#include "util/error.h"
#include "util/message_text.h"
#include "util/stage_timer.h"
#include "util/stop_token.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace attnscope::core {

// ----------------------------------------------------------------------------------------------------------
class RelposAccumulator final : public AttentionObserver, public AttentionRowSink {
public:
    RelposAccumulator(const ModelInfo& info, int distances, std::vector<Profile> profiles)
        : m_profiles(std::move(profiles))
    {
        r.layers = info.layers;
        r.heads = info.heads;
        r.distances = distances;
        const auto n = static_cast<std::size_t>(r.layers) * r.heads * distances;
        for (const auto& p : m_profiles) {
            r.profileNames.push_back(p.key());
            r.sums[p.key()].assign(n, 0.0);
        }
        for (const auto& p : m_profiles)
            m_sumPtr.push_back(r.sums[p.key()].data());
        r.count.assign(static_cast<std::size_t>(distances), 0.0);
        for (const char* name : {kFirstKeyMass, kSinkRate, kQueryEntropy, kAttendedDistance})
            r.headMeans[name].sum.assign(static_cast<std::size_t>(r.layers) * r.heads, 0.0);
        m_firstKey = r.headMeans[kFirstKeyMass].sum.data();
        m_sink = r.headMeans[kSinkRate].sum.data();
        m_entropy = r.headMeans[kQueryEntropy].sum.data();
        m_distance = r.headMeans[kAttendedDistance].sum.data();
        m_ramp = Eigen::ArrayXf::LinSpaced(distances, 0.0f, static_cast<float>(distances - 1));
    }

    bool wantTerms() const override { return m_profiles.size() > 1; }
    const std::vector<Profile>& profiles() const { return m_profiles; }

    void onSegment(const SegmentView& s) override
    {
        const auto spans = spansOfMask(s.mask, s.qlen, s.klen);
        countSegment(s.qlen, s.mlen, spans.data());
        if (sumsRowsAsComputed()) {
            const auto blocks = static_cast<std::size_t>((s.qlen + HeadScores::kBlockRows - 1) / HeadScores::kBlockRows);
            if (blocks > m_blocks) { // enough for the longest segment so far
                m_blocks = blocks;
                m_blockSums.assign(static_cast<std::size_t>(r.heads) * m_blocks, RowSums(*this));
            }
            // Each layer's onLayer leaves them zero; a segment stopped inside a layer may not have.
            for (auto& sums : m_blockSums)
                sums.clear();
        }
    }

    // The (query, key) pairs of a segment at each distance, and the queries that count for sinks.
    void countSegment(int qlen, int mlen, const VisibleSpan* spans)
    {
        for (int i = 0; i < qlen; ++i) {
            const auto [lo, len] = spans[i];
            for (int j = lo; j < lo + len; ++j)
                r.count[static_cast<std::size_t>(i + mlen - j)] += 1.0;
            if (len >= 1) {
                r.headMeans[kQueryEntropy].queries += 1.0;
                r.headMeans[kAttendedDistance].queries += 1.0;
            }
            if (len >= 2) {
                r.headMeans[kFirstKeyMass].queries += 1.0;
                r.headMeans[kSinkRate].queries += 1.0;
            }
        }
    }

    // Full attention only: the rows as the attention computes them (onRows), no [heads, q, k] buffer per layer.
    // Other profiles need every layer's terms, kept for onLayer.
    bool wantProbabilities() const override { return !sumsRowsAsComputed(); }
    AttentionRowSink* rowSink() override { return sumsRowsAsComputed() ? this : nullptr; }

    void onRows(const ScoreInputs& in, int head, int r0, int r1, const float* p, std::ptrdiff_t stride,
                const float* entropy) override
    {
        RowSums& sums = m_blockSums[static_cast<std::size_t>(head) * m_blocks + r0 / HeadScores::kBlockRows];
        for (int i = r0; i < r1; ++i) {
            const auto span = in.spans[i];
            if (span.len > 0)
                sums.add(0, i + in.mlen, span, p + (i - r0) * stride + span.lo, entropy[i - r0]);
        }
    }

    void onLayer(const LayerView& l) override
    {
        if (l.inputs.mixer != Mixer::Softmax) // profiles of attention: a convolution's band has no softmax to average
            return;
        StageScope timed(Stage::Profiles);
        const int blocks = (l.qlen + HeadScores::kBlockRows - 1) / HeadScores::kBlockRows;
        if (sumsRowsAsComputed()) {
            // The blocks onRows summed, into the totals in a fixed order (whichever thread computed them).
#pragma omp parallel for schedule(static)
            for (int n = 0; n < l.heads; ++n)
                for (int b = 0; b < blocks; ++b)
                    m_blockSums[static_cast<std::size_t>(n) * m_blocks + b].flushInto(headIndex(l.layer, n));
            return;
        }
        const std::size_t perHead = static_cast<std::size_t>(l.qlen) * l.klen;
        // The spans the attention used (every family passes them); from the mask only for a view without them.
        std::vector<VisibleSpan> ownSpans;
        if (!l.inputs.spans)
            ownSpans = spansOfMask(l.mask, l.qlen, l.klen);
        const VisibleSpan* spans = l.inputs.spans ? l.inputs.spans : ownSpans.data();
        // Heads write disjoint slices of the sums: split them across threads.
#pragma omp parallel for schedule(dynamic)
        for (int n = 0; n < l.heads; ++n) {
            std::vector<float> probs(static_cast<std::size_t>(l.klen));
            RowSums sums(*this);
            const std::size_t headOff = static_cast<std::size_t>(n) * perHead;
            for (int b = 0; b < blocks; ++b) {
                const int r0 = b * HeadScores::kBlockRows, r1 = std::min(l.qlen, r0 + HeadScores::kBlockRows);
                for (std::size_t k = 0; k < m_profiles.size(); ++k)
                    for (int i = r0; i < r1; ++i) {
                        const auto [lo, len] = spans[static_cast<std::size_t>(i)];
                        if (len == 0)
                            continue;
                        const std::size_t off = headOff + static_cast<std::size_t>(i) * l.klen + lo;
                        const float* p = l.attnProb + off;
                        const float entropy = l.rowEntropy[static_cast<std::size_t>(n) * l.qlen + i];
                        if (m_profiles[k].kind != ProfileKind::Full) { // the chosen terms' or bands' own softmax (Fig. 7)
                            const float* termPtr[4];
                            for (int t = 0; t < 4; ++t)
                                termPtr[t] = l.terms[t] ? l.terms[t] + off : nullptr;
                            termSoftmax(termPtr, m_profiles[k].terms, len, probs.data(), l.inputs.softCap);
                            p = probs.data();
                        }
                        sums.add(k, i + l.mlen, spans[static_cast<std::size_t>(i)], p, entropy);
                    }
                sums.flushInto(headIndex(l.layer, n));
            }
        }
    }

    // Some query rows of one head (at most a block of HeadScores::kBlockRows): their distributions summed in float
    // per profile and their statistics in double, until flushInto() adds them to a head's double totals. Float keeps
    // the adds vectorised without a conversion per probability, and a block adds at most kBlockRows probabilities to
    // any distance, so its sums keep about six digits (the reference test holds profiles to 2e-5). One object per
    // (head, block) lets the attention's threads fill blocks of one head at the same time.
    class RowSums {
    public:
        explicit RowSums(RelposAccumulator& acc)
            : m_acc(&acc)
            , m_sums(acc.m_profiles.size() * static_cast<std::size_t>(acc.r.distances), 0.0f)
        {
        }

        // Query row at key position `at` (= i + mlen) in profile k: its distribution p over its span and, for the
        // full attention (k = 0), its entropy as the softmax computed it.
        void add(std::size_t k, int at, VisibleSpan span, const float* p, float entropy)
        {
            const auto distances = static_cast<std::size_t>(m_acc->r.distances);
            float* sum = m_sums.data() + k * distances + (at - span.lo);
            // Key lo + t lies at distance at - lo - t: the row, reversed, lands on distances at - lo - len + 1 .. at - lo.
            const Eigen::Map<const Eigen::ArrayXf> pv(p, span.len);
            Eigen::Map<Eigen::ArrayXf>(sum - (span.len - 1), span.len) += pv.reverse();
            if (k != 0)
                return;
            // Per-query statistics of the full attention, vectorised: this runs for every query of every head.
            // sum_t p_t (at - lo - t): every term non-negative, so float (vectorised) loses nothing to cancellation
            const float nearest = static_cast<float>(at - span.lo);
            m_distanceSum += static_cast<double>((pv * (nearest - m_acc->m_ramp.head(span.len))).sum());
            m_entropySum += entropy;
            if (span.len >= 2) {
                m_firstKeySum += p[0];
                if (p[0] > kSinkThreshold)
                    m_sinkCount += 1.0;
            }
        }

        void clear()
        {
            std::fill(m_sums.begin(), m_sums.end(), 0.0f);
            m_entropySum = m_distanceSum = m_firstKeySum = m_sinkCount = 0.0;
        }

        // The rows so far into the totals of head `head` (layer * heads + n); then summing starts again from zero.
        void flushInto(std::size_t head)
        {
            auto& acc = *m_acc;
            const auto distances = static_cast<std::size_t>(acc.r.distances);
            for (std::size_t k = 0; k < acc.m_profiles.size(); ++k) {
                double* total = acc.m_sumPtr[k] + head * distances;
                const float* rows = m_sums.data() + k * distances;
                for (std::size_t d = 0; d < distances; ++d)
                    total[d] += rows[d];
            }
            acc.m_entropy[head] += m_entropySum;
            acc.m_distance[head] += m_distanceSum;
            acc.m_firstKey[head] += m_firstKeySum;
            acc.m_sink[head] += m_sinkCount;
            clear();
        }

    private:
        RelposAccumulator* m_acc;
        std::vector<float> m_sums; // [profiles, distances]
        double m_entropySum = 0, m_distanceSum = 0, m_firstKeySum = 0, m_sinkCount = 0;
    };

    ScanResult r;

private:
    bool sumsRowsAsComputed() const { return m_profiles.size() == 1; }
    std::size_t headIndex(int layer, int n) const { return static_cast<std::size_t>(layer) * r.heads + n; }

    std::vector<Profile> m_profiles;
    std::vector<double*> m_sumPtr;
    // onRows' sums, one per (head, block of query rows) of the current segment: m_blocks per head.
    std::vector<RowSums> m_blockSums;
    std::size_t m_blocks = 0;
    double *m_firstKey = nullptr, *m_sink = nullptr, *m_entropy = nullptr, *m_distance = nullptr; // [layers, heads]
    Eigen::ArrayXf m_ramp; // 0, 1, 2, ...: a key's offset from the first visible one (exact in float)
};

// ----------------------------------------------------------------------------------------------------------
int defaultScanSegmentLen(const ModelInfo& info)
{
    if (info.can.carriesMemory)
        return std::min(info.defaultSegmentLen, info.maxSegmentLen);
    return std::min(info.maxSegmentLen, 1024);
}

int defaultScanMemLen(const ModelInfo& info)
{
    return info.can.carriesMemory ? info.defaultMemLen : 0;
}

std::string scanModeName(const ModelInfo& info, int memLen)
{
    if (info.can.carriesMemory)
        return "memory";
    return memLen > 0 ? "sliding" : "chunks";
}

namespace {
// The profiles are over look-back distances (query position minus key position, the paper's Fig. 5): a bidirectional
// model's keys after the query have none.
void checkCausal(const ModelInfo& info)
{
    if (!info.can.causal)
        throw Error(ErrorCode::BadInput, std::string("relative-position profiles measure how far back a query looks; ") +
                                             familyName(info.family) + " is an encoder and attends both ways");
    for (const auto& site : info.sites)
        if (!site.sameStream() || !site.causal)
            throw Error(ErrorCode::BadInput, std::string("relative-position profiles measure how far back a query looks in "
                                                         "its own stream; ") +
                                                 familyName(info.family) + "'s " + site.label() + " reads the " +
                                                 info.streams[static_cast<std::size_t>(site.keyStream)].name +
                                                 (site.causal ? "" : " both ways"));
}
} // namespace

void checkScanOptions(const ModelInfo& info, const ScanOptions& options)
{
    checkCausal(info);
    checkedMemoryLength(options.memLen, "", "");
    const bool relative = info.can.carriesMemory;
    if (relative && options.memLen < 1)
        throw Error(ErrorCode::BadInput, "a relative-position scan needs a memory: the memory length must be at "
                                         "least 1 (got " + std::to_string(options.memLen) + ")");
    if (options.memLen < 0)
        throw Error(ErrorCode::BadInput, "the memory length must be 0 (chunks) or more (got " + std::to_string(options.memLen) + ")");
    if (!relative && !info.can.canCarryKeys && options.memLen > 0)
        throw Error(ErrorCode::BadInput,
                    std::string(familyName(info.family)) + " cannot scan with a sliding window (memory " + std::to_string(options.memLen) +
                        "): its learned positions are absolute (0.." + std::to_string(info.maxSegmentLen - 1) +
                        "), so carried keys would need positions it does not have. Use memory 0 (chunks).");
    if (options.segmentLen < 1)
        throw Error(ErrorCode::BadInput, "the segment length must be at least 1 (got " +
                                             std::to_string(options.segmentLen) + ")");
    if (options.segmentLen > info.maxSegmentLen)
        throw Error(ErrorCode::BadInput, "segment length " + std::to_string(options.segmentLen) +
                                             " is longer than this model allows (" + std::to_string(info.maxSegmentLen) +
                                             ")");
    const auto profiles = parseProfileList(options.terms);
    // Only term or band profiles keep each layer's probabilities: the full attention is summed as it is computed.
    checkRunFits(info, options.memLen, options.segmentLen, profiles.size() > 1, "the scan");
    for (const auto& p : profiles) {
        if (p.kind == ProfileKind::Terms && !info.hasRelativeTerms)
            throw Error(ErrorCode::BadInput, "this model has no relative score terms (a)-(d); scan without them");
        if (p.kind == ProfileKind::Bands) {
            const BandSplit split = bandsFor(info, options.bands);
            const bool on[4] = {p.terms.a, p.terms.b, p.terms.c, p.terms.d};
            for (int b = split.count(); b < 4; ++b)
                if (on[b])
                    throw Error(ErrorCode::BadInput, "band " + std::to_string(b + 1) + " does not exist: the split has " +
                                                         std::to_string(split.count()) + " bands");
        }
    }
}

BandSplit bandsFor(const ModelInfo& info, const std::optional<BandSplit>& chosen)
{
    if (info.rotaryFrequencies.empty())
        throw Error(ErrorCode::BadInput, "frequency bands need a model with rotary position embeddings (Llama family)");
    if (info.fixedTerms)
        return *info.fixedTerms;
    if (chosen)
        return *chosen;
    return BandSplit::equal(static_cast<int>(info.rotaryFrequencies.size()), 3);
}

std::optional<BandSplit> defaultBands(const ModelInfo& info)
{
    return info.rotaryFrequencies.empty() ? std::nullopt : std::optional(bandsFor(info));
}

RelposScanner::RelposScanner(const AttentionModel& model, const ScanOptions& options)
    : m_model(model)
    , m_options(options)
{
    const auto& info = model.info();
    checkScanOptions(info, options);
    auto kinds = parseProfileList(options.terms);
    const int distances = options.memLen + options.segmentLen;
    m_acc = std::make_unique<RelposAccumulator>(info, distances, std::move(kinds));
    RunOptions ro;
    ro.memLen = options.memLen;
    ro.sameLength = options.sameLength;
    ro.clampLen = options.clampLen;
    ro.stop = nullptr; // see runSegment: stops only between segments
    if (!info.rotaryFrequencies.empty()) {
        ro.bands = bandsFor(info, options.bands);
        m_acc->r.metadata["bands"] = std::to_string(ro.bands->count()) + " bands from pairs";
        for (int b = 0; b < ro.bands->count(); ++b)
            m_acc->r.metadata["bands"] += " " + std::to_string(ro.bands->begin(b) + 1);
    }
    m_state = model.newState(ro);
    auto& md = m_acc->r.metadata;
    md["format"] = ScanResult::kFormat;
    md["model"] = info.source;
    md["mode"] = scanModeName(info, options.memLen);
    md["mem_len"] = std::to_string(options.memLen);
    md["segment_length"] = std::to_string(options.segmentLen);
    md["same_length"] = options.sameLength.has_value() ? (*options.sameLength ? "true" : "false") : "model default";
    md["clamp_len"] = options.clampLen.has_value() ? std::to_string(*options.clampLen) : "model default";
    md["max_tokens"] = std::to_string(options.maxTokens);
    md["terms"] = options.terms;
}

RelposScanner::~RelposScanner() = default;

std::int64_t RelposScanner::tokensDone() const
{
    return m_acc->r.tokens;
}

void RelposScanner::runSegment(std::span<const std::int32_t> ids)
{
    // Cancellation is checked between segments only, so the sums and counts always cover whole segments.
    if (m_cancelled || (m_options.stop && m_options.stop->stopRequested())) {
        m_cancelled = true;
        m_acc->r.partial = true;
        return;
    }
    m_model.forwardSegment(*m_state, ids, *m_acc);
    m_acc->r.tokens += static_cast<std::int64_t>(ids.size());
}

bool RelposScanner::feed(std::span<const std::int32_t> ids)
{
    if (m_options.maxTokens >= 0) {
        const auto room = std::max<std::int64_t>(0, m_options.maxTokens - m_fed);
        ids = ids.first(static_cast<std::size_t>(std::min<std::int64_t>(room, static_cast<std::int64_t>(ids.size()))));
    }
    m_fed += static_cast<std::int64_t>(ids.size());
    m_pending.insert(m_pending.end(), ids.begin(), ids.end());
    const auto seg = static_cast<std::size_t>(m_options.segmentLen);
    std::size_t used = 0;
    while (m_pending.size() - used >= seg && !m_cancelled) {
        runSegment(std::span(m_pending).subspan(used, seg));
        used += seg;
        if (m_options.progress)
            m_options.progress(m_acc->r.tokens, m_totalEstimate);
        if (m_options.partial)
            m_options.partial(m_acc->r);
    }
    m_pending.erase(m_pending.begin(), m_pending.begin() + static_cast<std::ptrdiff_t>(used));
    return !m_cancelled && (m_options.maxTokens < 0 || m_fed < m_options.maxTokens);
}

void RelposScanner::stoppedEarly()
{
    m_cancelled = true;
    m_acc->r.partial = true;
}

ScanResult RelposScanner::finish(bool mayBeEmpty)
{
    if (!m_pending.empty())
        runSegment(m_pending);
    m_pending.clear();
    if (m_acc->r.tokens == 0 && !m_cancelled && !mayBeEmpty)
        throw Error(ErrorCode::BadInput, "the text tokenizes to nothing: there is nothing to scan");
    if (m_options.progress)
        m_options.progress(m_acc->r.tokens, m_acc->r.tokens);
    m_acc->r.metadata["tokens"] = std::to_string(m_acc->r.tokens);
    m_acc->r.metadata["partial"] = m_acc->r.partial ? "true" : "false";
    return std::move(m_acc->r);
}


ScanResult relposFromCapture(const TextCapture& capture, const std::string& terms, const StopToken* stop,
                             const BandSplit* bandsIn)
{
    checkCausal(capture.model);
    auto kinds = parseProfileList(terms);
    std::optional<BandSplit> bands;
    for (const auto& p : kinds) {
        if (p.kind == ProfileKind::Terms && !capture.hasTerms())
            throw Error(ErrorCode::BadInput, "this capture has no score terms");
        if (p.kind == ProfileKind::Bands && !bands)
            bands = bandsFor(capture.model, bandsIn ? std::optional(*bandsIn) : std::nullopt);
    }
    int distances = 1;
    for (const auto& s : capture.segments)
        distances = std::max(distances, s->klen);
    RelposAccumulator acc(capture.model, distances, std::move(kinds));
    const auto& profiles = acc.profiles();
    for (int si = 0; si < static_cast<int>(capture.segments.size()); ++si) {
        const auto& s = capture.segment(si);
        acc.countSegment(s.qlen, s.mlen, s.spans.data());
        for (int l = 0; l < capture.model.siteCount(); ++l) {
            if (stop && stop->stopRequested())
                throw Error(ErrorCode::Cancelled, "profile cancelled");
            ScoreInputs in = capture.inputs(si, l);
            if (bands)
                in.bands = &*bands;
            // Recomputed block by block (attention_scores.h): no [heads, q, k] buffer for long texts.
#pragma omp parallel for schedule(dynamic)
            for (int n = 0; n < in.heads; ++n) {
                HeadScores hs(in, n, profiles.size() > 1);
                RelposAccumulator::RowSums rows(acc);
                std::vector<float> row(static_cast<std::size_t>(in.klen));
                for (int r0 = 0; r0 < in.qlen; r0 += HeadScores::kBlockRows) {
                    const int r1 = std::min(in.qlen, r0 + HeadScores::kBlockRows);
                    hs.compute(r0, r1);
                    for (std::size_t k = 0; k < profiles.size(); ++k)
                        for (int i = r0; i < r1; ++i) {
                            const auto span = in.spans[i];
                            if (span.len == 0)
                                continue;
                            hs.rowSum(i, profiles[k].terms, row.data());
                            float entropy = 0;
                            softmaxInPlace(row.data(), span.len, &entropy);
                            rows.add(k, i + in.mlen, span, row.data(), entropy);
                        }
                    rows.flushInto(static_cast<std::size_t>(l) * in.heads + n);
                }
            }
        }
        acc.r.tokens += s.qlen;
    }
    acc.r.metadata["model"] = capture.model.source;
    acc.r.metadata["text"] = "current text";
    acc.r.metadata["tokens"] = std::to_string(acc.r.tokens);
    return std::move(acc.r);
}

// ----------------------------------------------------------------------------------------------------------
ScanResult scanText(const AttentionModel& model, const Tokenizer& tokenizer, const std::string& text,
                    const ScanOptions& options)
{
    RelposScanner scanner(model, options);
    std::vector<std::int32_t> ids = idsOf(tokenizer.encode(text));
    scanner.setTotalEstimate(static_cast<std::int64_t>(ids.size()));
    scanner.feed(ids);
    return scanner.finish();
}

std::pair<std::int64_t, std::int64_t> shardByteRange(const std::string& path, int shardIndex, int shardCount)
{
    if (shardCount < 1 || shardIndex < 1 || shardIndex > shardCount)
        throw Error(ErrorCode::BadInput, "shard must be I/N with 1 <= I <= N (got " + std::to_string(shardIndex) + "/" +
                                             std::to_string(shardCount) + ")");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error(ErrorCode::Io, "cannot open the text file", path);
    std::error_code ec;
    const auto size = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
    auto lineStartAtOrAfter = [&](std::int64_t pos) -> std::int64_t {
        if (pos <= 0)
            return 0;
        if (pos >= size)
            return size;
        in.clear();
        in.seekg(pos - 1);
        char c;
        std::int64_t p = pos - 1;
        while (in.get(c)) {
            ++p;
            if (c == '\n')
                return p;
        }
        return size;
    };
    const std::int64_t begin = lineStartAtOrAfter(size * (shardIndex - 1) / shardCount);
    const std::int64_t end = shardIndex == shardCount ? size : lineStartAtOrAfter(size * shardIndex / shardCount);
    return {begin, std::max(begin, end)};
}

namespace {
// Reads [begin, end) of a file line by line (a line ends after its '\n') and hands each line's token ids on; the
// stream is the same whichever byte a reader starts at, as long as it starts at a line. `take` returns false to stop.
void forEachLineTokens(std::ifstream& in, const Tokenizer& tokenizer, std::int64_t begin, std::int64_t end,
                       const std::function<bool(std::span<const std::int32_t>, std::int64_t)>& take)
{
    in.clear();
    in.seekg(begin);
    std::string line;
    std::vector<std::int32_t> ids;
    std::int64_t pos = begin;
    while (pos < end && std::getline(in, line)) {
        pos += static_cast<std::int64_t>(line.size()) + (in.eof() ? 0 : 1);
        if (!in.eof())
            line.push_back('\n');
        ids = idsOf(tokenizer.encode(line));
        if (!take(ids, pos))
            return;
    }
}

// A cheap identity of a corpus file: its size and an FNV-1a hash of its first and last MiB.
std::string corpusDigest(std::ifstream& in, std::int64_t size)
{
    std::uint64_t h = 1469598103934665603ULL;
    auto mix = [&](std::int64_t from, std::int64_t n) {
        std::string buf(static_cast<std::size_t>(n), '\0');
        in.clear();
        in.seekg(from);
        in.read(buf.data(), n);
        for (char c : buf)
            h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
    };
    const std::int64_t mib = 1 << 20;
    mix(0, std::min(size, mib));
    if (size > mib)
        mix(std::max(mib, size - mib), std::min(mib, size - mib));
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}
} // namespace

ScanResult scanTextFile(const AttentionModel& model, const Tokenizer& tokenizer, const std::string& path,
                        const ScanOptions& options, int shardIndex, int shardCount)
{
    // Shard I of N owns the segments that start in its byte range: segment boundaries are counted in tokens over
    // the whole file (the shard tokenizes, without running, the text before it), so the shards together run exactly
    // the segments of a single scan. A shard runs past its range to finish its last segment.
    // Plain variables, not a structured binding: lambdas below use them (clang 14 cannot capture bindings).
    const auto range = shardByteRange(path, shardIndex, shardCount);
    const std::int64_t begin = range.first, end = range.second;
    std::error_code ec;
    const auto size = static_cast<std::int64_t>(std::filesystem::file_size(path, ec));
    std::ifstream in(path, std::ios::binary);
    if (!in || ec)
        throw Error(ErrorCode::Io, "cannot open the text file", path);
    const std::int64_t C = options.segmentLen;
    auto countTokens = [&](std::int64_t upTo) {
        std::int64_t n = 0;
        forEachLineTokens(in, tokenizer, 0, upTo, [&](std::span<const std::int32_t> ids, std::int64_t) {
            n += static_cast<std::int64_t>(ids.size());
            return true;
        });
        return n;
    };
    auto segmentStartAtOrAfter = [&](std::int64_t token) { return C > 0 ? (token + C - 1) / C * C : token; };
    const std::int64_t before = begin == 0 ? 0 : countTokens(begin); // tokens of the earlier shards' text
    const std::int64_t first = segmentStartAtOrAfter(before);
    const std::int64_t limit = options.maxTokens >= 0 ? options.maxTokens : std::numeric_limits<std::int64_t>::max();
    // Where the next shard starts (tokens), found on the way: the first segment boundary at or after the tokens before `end`.
    std::int64_t stopAt = limit; // global token index this shard stops before
    const bool last = end >= size;

    RelposScanner scanner(model, options.maxTokens >= 0 ? [&] { auto o = options; o.maxTokens = -1; return o; }() : options);
    std::int64_t token = before; // global index of the next token read
    if (!last) // the tokens before `end`, for the stop point (the prefix is counted again: one tokenizer pass)
        stopAt = std::min(limit, segmentStartAtOrAfter(countTokens(end)));
    scanner.setTotalEstimate(last && options.maxTokens < 0 ? 0 : std::max<std::int64_t>(0, stopAt - first));
    forEachLineTokens(in, tokenizer, begin, size, [&](std::span<const std::int32_t> ids, std::int64_t pos) {
        // Tokens before `first` belong to the previous shard's last segment.
        std::int64_t from = std::max<std::int64_t>(0, first - token);
        std::int64_t to = std::min<std::int64_t>(static_cast<std::int64_t>(ids.size()), stopAt - token);
        if (from < to)
            scanner.feed(ids.subspan(static_cast<std::size_t>(from), static_cast<std::size_t>(to - from)));
        token += static_cast<std::int64_t>(ids.size());
        if (last && options.maxTokens < 0) // progress against the bytes of the last shard
            scanner.setTotalEstimate(static_cast<std::int64_t>(static_cast<double>(scanner.tokensDone()) /
                                                               std::max<double>(1.0, static_cast<double>(pos - begin)) *
                                                               static_cast<double>(size - begin)));
        if (options.stop && options.stop->stopRequested()) {
            scanner.stoppedEarly();
            return false;
        }
        return token < stopAt;
    });
    // A shard of a short text may own no segment start (its lines fall inside the previous shard's last segment): it
    // is an empty part of the whole, not an error, so every job of a cluster's array succeeds and the merge adds up.
    auto result = scanner.finish(shardCount > 1);
    result.metadata["text"] = std::filesystem::path(path).filename().string();
    result.metadata["corpus_bytes"] = std::to_string(size);
    result.metadata["corpus_digest"] = corpusDigest(in, size);
    result.metadata["max_tokens"] = std::to_string(options.maxTokens);
    if (shardCount > 1) {
        result.metadata["shard"] = std::to_string(shardIndex) + "/" + std::to_string(shardCount);
        result.metadata["first_token"] = std::to_string(first);
    }
    return result;
}

ScanResult mergeScanFiles(const std::vector<std::string>& paths)
{
    if (paths.empty())
        throw Error(ErrorCode::BadInput, "nothing to merge");
    std::vector<ScanResult> parts;
    for (const auto& p : paths)
        parts.push_back(ScanResult::load(p));
    // Shards of one corpus must all be there, once each, and agree on the corpus.
    int count = 0;
    std::map<int, std::string> seen;
    const ScanResult* reference = nullptr; // the first shard: the corpus every other must match
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const auto it = parts[i].metadata.find("shard");
        if (it == parts[i].metadata.end())
            continue;
        int index = 0, n = 0;
        if (std::sscanf(it->second.c_str(), "%d/%d", &index, &n) != 2 || index < 1 || index > n)
            throw Error(ErrorCode::CorruptFile, "metadata \"shard\" is not I/N: \"" + it->second + "\"", paths[i], "shard");
        if (!reference) {
            reference = &parts[i];
            count = n;
        } else if (n != count) {
            throw Error(ErrorCode::BadInput, "is shard " + it->second + ", but the other shards are of " + std::to_string(count), paths[i]);
        }
        if (seen.count(index))
            throw Error(ErrorCode::BadInput, "shard " + std::to_string(index) + "/" + std::to_string(n) +
                                                 " is given twice (also " + seen[index] + ")", paths[i]);
        seen[index] = paths[i];
        for (const char* key : {"text", "corpus_bytes", "corpus_digest"}) {
            auto valueOf = [key](const ScanResult& r) {
                const auto v = r.metadata.find(key);
                return v == r.metadata.end() ? std::string("?") : v->second;
            };
            const std::string a = valueOf(parts[i]), r = valueOf(*reference);
            if (a != r)
                throw Error(ErrorCode::BadInput, "is a shard of another corpus (" + std::string(key) + " " + a + " vs " + r + ")",
                            paths[i]);
        }
    }
    if (count > 0) {
        if (seen.size() != parts.size())
            throw Error(ErrorCode::BadInput, "cannot merge shards with results that are not shards of the same corpus");
        // The count is the file's own word: checked against the files given before anything counts up to it.
        if (static_cast<std::size_t>(count) != parts.size()) {
            std::vector<long long> missing;
            for (int k = 1; k <= count && missing.size() < 5; ++k)
                if (!seen.count(k))
                    missing.push_back(k);
            const auto absent = static_cast<long long>(count) - static_cast<long long>(seen.size());
            throw Error(ErrorCode::BadInput, "shards " + someOf(missing, absent) + " of " + std::to_string(count) +
                                                 " are missing (" + std::to_string(parts.size()) +
                                                 " shard file(s) given; a merge of some shards is not a scan of the corpus)",
                        seen.begin()->second);
        }
    }
    ScanResult merged = std::move(parts.front());
    for (std::size_t i = 1; i < parts.size(); ++i) {
        try {
            merged.merge(parts[i]);
        } catch (const Error& e) {
            throw Error(e.code(), e.message(), paths[i]);
        }
    }
    if (count > 0) {
        merged.metadata.erase("first_token");
        merged.metadata["shard"] = "all " + std::to_string(count);
        merged.metadata["text"] = parts.size() > 1 ? merged.metadata["text"].substr(0, merged.metadata["text"].find(" + ")) : merged.metadata["text"];
    }
    return merged;
}

} // namespace attnscope::core
