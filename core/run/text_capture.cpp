// captureText: an observer that copies each layer's score inputs, and the driver that decides what of the previous
// capture an edited text can keep.
#include "run/text_capture.h"

#include "util/error.h"
#include "util/memory_info.h"
#include "util/stop_token.h"

#include <algorithm>
#include <functional>

namespace attnscope::core {

std::size_t SiteRecord::bytes() const
{
    return queries.bytes() + keys.bytes() + relative.bytes() + (u.capacity() + v.capacity()) * sizeof(float) +
           spans.capacity() * sizeof(VisibleSpan) +
           (positionBias ? positionBias->values.capacity() * sizeof(float) : 0);
}

std::size_t SegmentCapture::bytes() const
{
    std::size_t b = spans.capacity() * sizeof(VisibleSpan);
    for (const auto& r : sites)
        b += r.bytes();
    return b;
}

const SegmentCapture& TextCapture::segment(int s) const
{
    if (s < 0 || s >= static_cast<int>(segments.size()))
        throw Error(ErrorCode::BadInput, "segment " + std::to_string(s + 1) + " does not exist");
    return *segments[static_cast<std::size_t>(s)];
}

int TextCapture::segmentOfToken(int position) const
{
    if (position < 0 || position >= static_cast<int>(tokens.size()) || segments.empty())
        throw Error(ErrorCode::BadInput, "no token " + std::to_string(position + 1) + " in the text");
    int s = 0;
    while (s + 1 < static_cast<int>(segments.size()) && segments[static_cast<std::size_t>(s + 1)]->firstPosition <= position)
        ++s;
    return s;
}

const SiteRecord& TextCapture::record(int s, int site) const
{
    const auto& seg = segment(s);
    if (site < 0 || site >= static_cast<int>(seg.sites.size()))
        throw Error(ErrorCode::BadInput, (model.sites.size() == static_cast<std::size_t>(model.layers) ? "layer " : "site ") +
                                             std::to_string(site + 1) + " does not exist");
    if (seg.sites[static_cast<std::size_t>(site)].present)
        return seg.sites[static_cast<std::size_t>(site)];
    for (const auto& other : segments) // a site over a read stream: recorded where the run read it
        if (other->sites.size() > static_cast<std::size_t>(site) && other->sites[static_cast<std::size_t>(site)].present)
            return other->sites[static_cast<std::size_t>(site)];
    throw Error(ErrorCode::BadInput, model.site(site).label() + " was not run for this text");
}

const std::vector<Token>& TextCapture::streamTokens(int stream) const
{
    if (stream == model.segmentStream() || stream < 0 || stream >= static_cast<int>(streams.size()))
        return tokens;
    return streams[static_cast<std::size_t>(stream)].tokens;
}

ScoreInputs TextCapture::inputs(int s, int site) const
{
    const auto& seg = segment(s);
    const auto& r = record(s, site);
    const auto at = static_cast<std::size_t>(site);
    const AttentionSite& where = model.site(site);
    const int heads = where.heads > 0 ? where.heads : model.heads;
    ScoreInputs in = ScoreInputs::ofShape(r.qlen, r.klen, r.mlen, heads, where.kvHeads > 0 ? where.kvHeads : model.kvHeads,
                                          where.headDim > 0 ? where.headDim : model.dHead);
    in.mixer = where.mixer;
    in.queryCols = r.queries.width(); // an implicit map's rows may be wider or narrower than its heads'
    in.keyCols = r.keys.width();
    // The site's score rule as the model computed it: scale, soft-cap, sinks.
    const bool ruled = at < model.layerRules.size();
    in.scale = ruled ? model.layerRules[at].scale : scoreScale;
    in.softCap = ruled ? model.layerRules[at].softCap : 0.0f;
    if (ruled && !model.layerRules[at].sinks.empty())
        in.sinks = model.layerRules[at].sinks.data();
    if (ruled && !model.layerRules[at].stateDecay.empty())
        in.stateDecay = model.layerRules[at].stateDecay.data();
    if (ruled && !model.layerRules[at].convTaps.empty()) {
        in.convTaps = model.layerRules[at].convTaps.data();
        in.convWidth = model.layerRules[at].window;
    }
    in.queries = RowSource::paged(r.queries);
    in.keys = RowSource::paged(r.keys);
    if (r.relative.rows() > 0) {
        in.relative = RowSource::paged(r.relative);
        in.u = r.u.data();
        in.v = r.v.data();
    }
    in.spans = r.spans.empty() ? seg.spans.data() : r.spans.data();
    if (r.positionBias)
        in.positionBias = &r.positionBias->view;
    return in;
}

std::size_t TextCapture::bytes() const
{
    std::size_t b = 0;
    for (const auto& s : segments)
        b += s->bytes();
    for (const auto& st : endStates)
        if (st)
            b += st->bytes();
    return b + lastLogits.capacity() * sizeof(float);
}

namespace {

// Copies what each site's scores came from into a SegmentCapture. Resuming segment s after `keep` tokens, the old
// segment's first `keep` query rows, the keys the resumed run saw as cached and the keys of a read stream (the same
// source) are shared, not copied; the sites over a read stream, which the resumed run does not run again, are kept.
class RecordObserver final : public AttentionObserver {
public:
    struct Resume {
        const SegmentCapture* segment = nullptr;
        int keep = 0;
    };
    // `nextToken`: keep each segment's last row's logits (a causal model with a next-token head).
    RecordObserver(const ModelInfo& info, std::function<void(int site, int qlen, const SegmentCapture& current)> layerDone,
                   bool nextToken)
        : m_info(info)
        , m_segmentStream(info.segmentStream())
        , m_layerDone(std::move(layerDone))
        , m_nextToken(nextToken)
    {
    }
    void resumeNext(Resume r) { m_resume = r; }
    bool wantProbabilities() const override { return false; }
    bool wantLastLogits() const override { return m_nextToken && m_lastSegment; }
    // Only the text's last segment reads its last row out (a long text's earlier segments would each pay a row of
    // the vocabulary's product for nothing).
    void setLastSegment(bool last) { m_lastSegment = last; }
    void onSegment(const SegmentView& s) override
    {
        m_seg = std::make_shared<SegmentCapture>();
        m_seg->sites.resize(m_info.sites.size());
        auto spans = spansOfMask(s.mask, s.qlen, s.klen);
        if (const SegmentCapture* old = m_resume.segment) {
            m_seg->firstPosition = old->firstPosition;
            m_seg->mlen = old->mlen;
            m_seg->qlen = m_resume.keep + s.qlen;
            m_seg->spans.assign(old->spans.begin(), old->spans.begin() + m_resume.keep);
            for (std::size_t k = 0; k < m_info.sites.size() && k < old->sites.size(); ++k)
                if (!overSegments(static_cast<int>(k)))
                    m_seg->sites[k] = old->sites[k];
        } else {
            m_seg->firstPosition = s.firstPosition;
            m_seg->mlen = s.mlen;
            m_seg->qlen = s.qlen;
        }
        m_seg->klen = s.klen;
        m_seg->spans.insert(m_seg->spans.end(), spans.begin(), spans.end());
    }
    void onLayer(const LayerView& l) override
    {
        const auto k = static_cast<std::size_t>(l.site);
        const SiteRecord* old = m_resume.segment ? &m_resume.segment->sites[k] : nullptr;
        SiteRecord r = overSegments(l.site) ? segmentSite(l, old) : readSite(l);
        appendRelative(l.inputs, r);
        if (l.inputs.positionBias)
            r.positionBias = copyBias(*l.inputs.positionBias, l.inputs.heads);
        r.present = true;
        m_seg->sites[k] = std::move(r);
        m_scale = l.inputs.scale;
        if (m_layerDone && overSegments(l.site))
            m_layerDone(l.site, l.qlen, *m_seg);
    }
    void onSegmentEnd(const SegmentEndView& e) override
    {
        m_resume = {};
        m_lastLogits.clear();
        if (e.logits && e.vocab > 0) {
            const float* last = e.logits + static_cast<std::ptrdiff_t>(e.qlen - 1 - e.firstLogitRow) * e.vocab;
            m_lastLogits.assign(last, last + e.vocab);
        }
    }
    std::shared_ptr<SegmentCapture> take() { return std::move(m_seg); }
    // The logits after the last segment's last token (empty when the model has none).
    std::vector<float> takeLastLogits() { return std::move(m_lastLogits); }
    float scale() const { return m_scale; }

private:
    // The site's queries are the segment stream's tokens (every site of a single-stream model).
    bool overSegments(int site) const { return m_info.site(site).queryStream == m_segmentStream; }
    bool keysFromSegments(int site) const { return m_info.site(site).keyStream == m_segmentStream; }

    // A site whose rows are the segment's: the segment's shape, its kept rows shared when it resumes.
    SiteRecord segmentSite(const LayerView& l, const SiteRecord* old) const
    {
        const auto& in = l.inputs;
        SiteRecord r;
        r.qlen = m_seg->qlen;
        r.klen = in.klen;
        r.mlen = keysFromSegments(l.site) ? m_seg->mlen : in.mlen;
        int keysFrom = 0;
        if (old) {
            r.queries = old->queries.prefix(m_resume.keep);
            // Cached keys are the same rows at the same positions; a read stream's keys are all the same.
            keysFrom = keysFromSegments(l.site) ? in.mlen : in.klen;
            r.keys = old->keys.prefix(keysFrom);
        } else {
            r.queries = RowPages(in.queryWidth());
            r.keys = RowPages(in.keyWidth());
        }
        r.queries.append(in.queries.row(0), in.queries.stride, in.qlen);
        if (keysFrom < in.klen)
            r.keys.append(in.keys.row(keysFrom), in.keys.stride, in.klen - keysFrom);
        // A site whose keys differ from the segment's (a sliding layer among global ones, cross-attention) keeps its
        // own spans.
        const std::size_t newFrom = m_seg->spans.size() - static_cast<std::size_t>(in.qlen);
        const bool own = !std::equal(in.spans, in.spans + in.qlen, m_seg->spans.begin() + static_cast<std::ptrdiff_t>(newFrom),
                                     [](const VisibleSpan& a, const VisibleSpan& b) { return a.lo == b.lo && a.len == b.len; });
        if (own || (old && !old->spans.empty())) {
            if (old) {
                const auto& from = old->spans.empty() ? m_resume.segment->spans : old->spans;
                r.spans.assign(from.begin(), from.begin() + m_resume.keep);
            }
            r.spans.insert(r.spans.end(), in.spans, in.spans + in.qlen);
        }
        return r;
    }
    // A site over a read stream (an encoder's self-attention): its own shape and spans.
    static SiteRecord readSite(const LayerView& l)
    {
        const auto& in = l.inputs;
        SiteRecord r;
        r.qlen = in.qlen;
        r.klen = in.klen;
        r.mlen = in.mlen;
        r.queries = RowPages(in.queryWidth());
        r.keys = RowPages(in.keyWidth());
        r.queries.append(in.queries.row(0), in.queries.stride, in.qlen);
        r.keys.append(in.keys.row(0), in.keys.stride, in.klen);
        r.spans.assign(in.spans, in.spans + in.qlen);
        return r;
    }
    static void appendRelative(const ScoreInputs& in, SiteRecord& r)
    {
        if (!in.relativeTerms())
            return;
        const int width = in.heads * in.headDim;
        r.relative = RowPages(width);
        r.relative.append(in.relative.row(0), in.relative.stride, in.klen);
        r.u.assign(in.u, in.u + width);
        r.v.assign(in.v, in.v + width);
    }
    static std::shared_ptr<const PositionBiasTable> copyBias(const PositionBias& b, int heads)
    {
        auto t = std::make_shared<PositionBiasTable>();
        t->values.assign(b.table, b.table + static_cast<std::size_t>(heads) * b.width);
        if (b.buckets)
            t->buckets.assign(b.buckets, b.buckets + b.width);
        t->view = PositionBias{t->values.data(), b.width, b.center, t->buckets.empty() ? nullptr : t->buckets.data()};
        return t;
    }

    const ModelInfo& m_info;
    int m_segmentStream = 0;
    std::function<void(int, int, const SegmentCapture&)> m_layerDone;
    bool m_nextToken = false, m_lastSegment = true;
    std::vector<float> m_lastLogits;
    Resume m_resume;
    std::shared_ptr<SegmentCapture> m_seg;
    float m_scale = 1.0f;
};

// The ids of the run's read source (an encoder-decoder model's), from the capture's streams; null when there is none.
std::shared_ptr<const std::vector<std::int32_t>> sourceOf(const ModelInfo& info, const std::vector<StreamText>& streams)
{
    for (std::size_t k = 0; k < streams.size() && k < info.streams.size(); ++k)
        if (info.streams[k].role == StreamRole::Read && !streams[k].tokens.empty())
            return std::make_shared<const std::vector<std::int32_t>>(idsOf(streams[k].tokens));
    return nullptr;
}

std::string runKeyOf(const CaptureOptions& o, int segmentLen, int memLen)
{
    auto opt = [](const auto& v) { return v ? std::to_string(static_cast<int>(*v)) : std::string("-"); };
    // An encoder's token types and padding live in its run state: a capture made with others cannot be resumed.
    const std::string types(reinterpret_cast<const char*>(o.run.tokenTypes.data()), o.run.tokenTypes.size() * sizeof(std::int32_t));
    const std::string padding(o.run.padding.begin(), o.run.padding.end());
    // A source read beside the segments (an encoder-decoder model's) is part of every state: another one cannot resume.
    std::string source;
    for (const auto& stream : o.streams)
        for (const auto& t : stream.tokens)
            source += std::to_string(t.id) + ",";
    // So is a recording (its frames' tokens are only their times): the same features, the same key.
    if (o.run.audio)
        source += "audio@" + std::to_string(reinterpret_cast<std::uintptr_t>(o.run.audio.get()));
    return "segment=" + std::to_string(segmentLen) + " memory=" + std::to_string(memLen) +
           " same_length=" + opt(o.run.sameLength) + " clamp=" + opt(o.run.clampLen) +
           " types=" + std::to_string(std::hash<std::string>{}(types)) + " padding=" + std::to_string(std::hash<std::string>{}(padding)) +
           " source=" + std::to_string(std::hash<std::string>{}(source));
}

// Refuses, before running, a text whose records would not fit beside the model's weights.
void checkSize(const ModelInfo& info, std::size_t tokens, int segmentLen, int memLen, const CaptureOptions& options,
               const std::string& what = {})
{
    const double estimate = static_cast<double>(estimateCaptureBytes(info, tokens, segmentLen, memLen));
    std::size_t limit = options.maxBytes;
    if (limit == 0) {
        // Half of what is free now, and never more than what the mapped weights leave of the machine's memory (their
        // pages count as available while a forward pass needs every one of them).
        const auto avail = availableMemoryBytes(), total = totalMemoryBytes();
        std::uint64_t room = avail ? avail : std::uint64_t(8) << 30;
        if (total > 0)
            room = std::min<std::uint64_t>(room, total > info.weightBytes ? total - info.weightBytes : 0);
        limit = static_cast<std::size_t>(room / 2);
    }
    if (estimate > static_cast<double>(limit))
        throw Error(ErrorCode::BadInput,
                    (what.empty() ? "the text has " + std::to_string(tokens) + " tokens" : what) +
                        "; keeping what recomputes its attention would need " +
                        formatBytes(static_cast<std::uint64_t>(estimate)) + " beside the " + formatBytes(info.weightBytes) +
                        " of mapped weights (limit " + formatBytes(limit) + "). Use a shorter text or a corpus scan.");
}

} // namespace

std::uint64_t estimateCaptureBytes(const ModelInfo& info, std::size_t tokens, int segmentLen, int memLen)
{
    const double f = sizeof(float);
    // Records: every layer's queries and keys.
    double perToken = static_cast<double>(info.layers) * (info.heads + info.kvHeads) * info.dHead * f;
    if (info.hasRelativeTerms) // memory keys and relative encodings are kept per segment
        perToken += static_cast<double>(info.layers) * (2.0 * info.heads * info.dHead * f) *
                    (1.0 + static_cast<double>(memLen) / std::max(1, segmentLen));
    else // the key/value cache the run carries through the segment
        perToken += static_cast<double>(info.layers) * 2.0 * info.kvHeads * info.dHead * f;
    // One segment's activations while it runs: the residual stream and a feed-forward's worth (about 4x) of rows.
    const double seg = static_cast<double>(std::min<std::size_t>(tokens, static_cast<std::size_t>(std::max(1, segmentLen))));
    return static_cast<std::uint64_t>(perToken * static_cast<double>(tokens) + seg * info.dModel * f * 12.0);
}

namespace {

// What a view of a finished layer needs while the run goes on: the capture so far with a copy of the running
// segment (its finished layers' pages are shared, not copied), without the states kept for edits.
std::shared_ptr<const TextCapture> partialCapture(const TextCapture& sofar, const SegmentCapture& running, float scale)
{
    auto p = std::make_shared<TextCapture>();
    p->model = sofar.model;
    p->text = sofar.text;
    p->tokens = sofar.tokens;
    p->segments = sofar.segments;
    p->segments.push_back(std::make_shared<const SegmentCapture>(running));
    p->segmentLen = sofar.segmentLen;
    p->memLen = sofar.memLen;
    p->scoreScale = scale;
    p->reusedTokens = sofar.reusedTokens;
    p->secondText = sofar.secondText;
    p->tokenTypes = sofar.tokenTypes;
    p->image = sofar.image;
    p->padding = sofar.padding;
    p->streams = sofar.streams;
    return p;
}

// `text` and `secondText`: what the capture's token spans refer to (set before the run, so partial captures have
// them too).
std::shared_ptr<TextCapture> captureImpl(const AttentionModel& model, std::vector<Token> tokens,
                                         const CaptureOptions& options, std::string text = {}, int secondText = -1)
{
    if (tokens.empty())
        throw Error(ErrorCode::BadInput, "the text tokenizes to nothing (it is empty or only white space)");
    const auto& info = model.info();
    auto out = std::make_shared<TextCapture>();
    out->model = info;
    out->producer = &model;
    out->text = std::move(text);
    out->secondText = secondText;
    out->segmentLen = options.segmentLen > 0 ? options.segmentLen : info.defaultSegmentLen;
    out->segmentLen = std::min(out->segmentLen, info.maxSegmentLen);
    out->memLen = options.run.memLen.value_or(info.defaultMemLen);
    out->runKey = runKeyOf(options, out->segmentLen, out->memLen);
    out->tokenTypes = options.run.tokenTypes; // what reruns of its segments must read again
    out->image = options.run.image;
    out->audio = options.run.audio;
    out->padding = options.run.padding;
    out->streams = options.streams;
    out->streams.resize(info.streams.size());
    RunOptions run = options.run;
    if (!run.source)
        run.source = sourceOf(info, out->streams);
    checkSize(info, tokens.size(), out->segmentLen, out->memLen, options);

    std::vector<std::int32_t> ids = idsOf(tokens);
    out->tokens = std::move(tokens);
    const int T = static_cast<int>(ids.size()), S = out->segmentLen;
    const int segments = (T + S - 1) / S;

    // What the previous capture gives: whole segments before the first change, and a state to go on from.
    std::unique_ptr<RunState> state;
    int firstToRun = 0; // first segment that runs
    int resumeKeep = 0; // > 0: segment firstToRun resumes after this many of its tokens
    const auto& prev = options.previous;
    if (prev && prev->producer == &model && prev->runKey == out->runKey && prev->model.source == info.source) {
        int p = 0;
        const int common = std::min(T, static_cast<int>(prev->tokens.size()));
        while (p < common && prev->tokens[static_cast<std::size_t>(p)].id == ids[static_cast<std::size_t>(p)])
            ++p;
        p = std::min(p, T - 1); // at least one token runs, so the changed segment's end state is fresh
        const int s = p / S, keep = p - s * S;
        if (keep > 0 && s < static_cast<int>(prev->endStates.size()) && prev->endStates[static_cast<std::size_t>(s)])
            state = model.resumeWithin(*prev->endStates[static_cast<std::size_t>(s)], keep);
        if (state) {
            firstToRun = s;
            resumeKeep = keep;
        } else {
            // Go on from the newest kept state at or before the start of segment s.
            int e = std::min(s, static_cast<int>(prev->endStates.size())) - 1;
            while (e >= 0 && !prev->endStates[static_cast<std::size_t>(e)])
                --e;
            firstToRun = e + 1;
            if (e >= 0)
                state = prev->endStates[static_cast<std::size_t>(e)]->clone();
        }
        for (int i = 0; i < firstToRun; ++i) {
            out->segments.push_back(prev->segments[static_cast<std::size_t>(i)]);
            out->endStates.push_back(prev->endStates[static_cast<std::size_t>(i)]);
        }
        out->scoreScale = prev->scoreScale;
        out->reusedTokens = firstToRun * S + resumeKeep;
    }
    if (!state)
        state = model.newState(run);
    state->stop = run.stop;

    // Progress in token-sites of the part that runs (the sites over the segment stream).
    int segmentSites = 0;
    for (const auto& site : info.sites)
        segmentSites += site.queryStream == info.segmentStream() ? 1 : 0;
    const double work = static_cast<double>(T - out->reusedTokens) * segmentSites;
    double done = 0;
    int running = firstToRun; // the segment the observer records
    RecordObserver observer(info, [&](int site, int qlen, const SegmentCapture& current) {
        done += qlen;
        if (options.progress && work > 0)
            options.progress(std::min(1.0, done / work));
        if (options.layerDone)
            options.layerDone(running, site, [&] { return partialCapture(*out, current, observer.scale()); });
    }, info.can.causal && info.can.nextTokenLoss);
    if (resumeKeep > 0)
        observer.resumeNext({prev->segments[static_cast<std::size_t>(firstToRun)].get(), resumeKeep});
    for (int s = firstToRun; s < segments; ++s) {
        if (run.stop && run.stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "run cancelled");
        running = s;
        observer.setLastSegment(s + 1 == segments);
        const int begin = s * S + (s == firstToRun ? resumeKeep : 0);
        const int end = std::min(T, (s + 1) * S);
        model.forwardSegment(*state, std::span<const std::int32_t>(ids).subspan(static_cast<std::size_t>(begin),
                                                                                  static_cast<std::size_t>(end - begin)),
                             observer);
        out->segments.push_back(observer.take());
        // The last state is moved, earlier ones copied (the run goes on from them). Kept states hold no stop token:
        // this run's token dies with its job.
        std::shared_ptr<RunState> kept = s + 1 == segments ? std::shared_ptr<RunState>(std::move(state))
                                                           : std::shared_ptr<RunState>(state->clone());
        kept->stop = nullptr;
        out->endStates.push_back(std::move(kept));
        out->scoreScale = observer.scale();
    }
    out->lastLogits = observer.takeLastLogits(); // the last segment always runs (at least its last token)
    // Keep the newest states within the budget: typing happens mostly near the end.
    std::size_t kept = 0;
    for (auto it = out->endStates.rbegin(); it != out->endStates.rend(); ++it)
        if (*it) {
            kept += (*it)->bytes();
            if (kept > options.stateBudget)
                it->reset();
        }
    return out;
}
} // namespace

std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, std::vector<Token> tokens,
                                                const CaptureOptions& options, std::string text)
{
    return captureImpl(model, std::move(tokens), options, std::move(text));
}

std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, const Tokenizer& tokenizer,
                                                std::string text, const CaptureOptions& options)
{
    // The tokens the model sees by default (Llama-family tokenizers add BOS; its span is empty).
    auto tokens = streamTokens(model.info(), model.info().segmentStream(), tokenizer, text);
    return captureImpl(model, std::move(tokens), options, std::move(text));
}

void rerunSegment(const AttentionModel& model, const TextCapture& capture, int segment, AttentionObserver& observer,
                  const StopToken* stop)
{
    capture.segment(segment); // range check
    int e = std::min(segment, static_cast<int>(capture.endStates.size())) - 1;
    while (e >= 0 && !capture.endStates[static_cast<std::size_t>(e)])
        --e;
    RunOptions options = capture.runOptions();
    options.stop = stop;
    auto state = e >= 0 ? capture.endStates[static_cast<std::size_t>(e)]->clone() : model.newState(options);
    state->stop = stop;
    for (int i = e + 1; i <= segment; ++i)
        model.forwardSegment(*state, capture.segmentIds(i), observer);
}

std::vector<std::int32_t> TextCapture::segmentIds(int s) const
{
    const auto& seg = segment(s);
    std::vector<std::int32_t> ids;
    for (int t = 0; t < seg.qlen; ++t)
        ids.push_back(tokens[static_cast<std::size_t>(seg.firstPosition + t)].id);
    return ids;
}

RunOptions TextCapture::runOptions() const
{
    RunOptions options;
    options.memLen = memLen;
    options.tokenTypes = tokenTypes;
    options.padding = padding;
    options.image = image;
    options.audio = audio;
    options.source = sourceOf(model, streams);
    return options;
}

std::shared_ptr<const TextCapture> captureTextPair(const AttentionModel& model, const Tokenizer& tokenizer,
                                                    const std::string& a, const std::string& b, CaptureOptions options)
{
    auto enc = tokenizer.encodePairWithSpecial(a, b, a.size() + 1);
    options.run.tokenTypes = enc.typeIds;
    return captureImpl(model, std::move(enc.tokens), options, a + "\n" + b, static_cast<int>(enc.secondText));
}

std::vector<Token> streamTokens(const ModelInfo& info, int stream, const Tokenizer& tokenizer, std::string_view text)
{
    const TokenStream& row = info.streams.at(static_cast<std::size_t>(stream));
    if (row.role == StreamRole::Read && tokenizer.encode(text).empty())
        throw Error(ErrorCode::BadInput, "the " + row.name + " tokenizes to nothing: type a sentence to translate");
    if (row.startToken < 0)
        return tokenizer.encodeWithSpecial(text);
    std::vector<Token> tokens{Token{row.startToken, tokenizer.pieceOf(row.startToken), 0, 0}};
    auto rest = tokenizer.encode(text);
    tokens.insert(tokens.end(), rest.begin(), rest.end());
    return tokens;
}

std::vector<StreamText> typedSource(const ModelInfo& info, const Tokenizer& tokenizer, const std::string& text)
{
    const int stream = info.typedReadStream();
    if (stream < 0)
        return {};
    std::vector<StreamText> streams(info.streams.size());
    streams[static_cast<std::size_t>(stream)] = StreamText{text, streamTokens(info, stream, tokenizer, text)};
    return streams;
}

std::shared_ptr<const TextCapture> writeGreedily(const AttentionModel& model, std::vector<Token> tokens, int count,
                                                 const Tokenizer& tokenizer, CaptureOptions options,
                                                 const std::function<void(const std::shared_ptr<const TextCapture>&, int)>& step,
                                                 std::string text)
{
    const auto& info = model.info();
    const std::int32_t end = info.streams[static_cast<std::size_t>(info.segmentStream())].endToken;
    std::shared_ptr<const TextCapture> capture = captureImpl(model, tokens, options, text);
    // Refused before the first step, not at the step that would pass the limit: the capture at its longest.
    const std::size_t longest = std::min<std::size_t>(tokens.size() + static_cast<std::size_t>(std::max(0, count)),
                                                      static_cast<std::size_t>(std::max(info.maxSegmentLen, 1)));
    checkSize(info, longest, capture->segmentLen, capture->memLen, options,
              "writing " + std::to_string(count) + " tokens makes the text " + std::to_string(longest) + " tokens long");
    for (int written = 0; written < count && static_cast<int>(tokens.size()) < info.maxSegmentLen; ++written) {
        const auto& logits = capture->lastLogits;
        if (logits.empty())
            break;
        const auto id = static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
        if (id == end) // the last row writes the end: the stream is complete (finishedWriting)
            break;
        if (step)
            step(capture, written);
        // The written text grows with the token's own: its span is there, so it reads as a word, not a special token.
        const std::string piece = tokenizer.textOf(id);
        tokens.push_back(Token{id, tokenizer.pieceOf(id), text.size(), text.size() + piece.size()});
        text += piece;
        options.previous = capture;
        capture = captureImpl(model, tokens, options, text);
    }
    return capture;
}

bool finishedWriting(const TextCapture& capture)
{
    const auto& info = capture.model;
    const std::int32_t end = info.streams[static_cast<std::size_t>(info.segmentStream())].endToken;
    const auto& logits = capture.lastLogits;
    return end >= 0 && !logits.empty() &&
           std::max_element(logits.begin(), logits.end()) - logits.begin() == static_cast<std::ptrdiff_t>(end);
}

} // namespace attnscope::core
