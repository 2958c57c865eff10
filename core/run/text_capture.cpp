// captureText: an observer that copies each layer's probabilities (and terms) into a TextCapture.
#include "run/text_capture.h"

#include "util/error.h"

namespace attnscope::core {

namespace {
class CaptureObserver final : public AttentionObserver {
public:
    CaptureObserver(TextCapture& out, bool terms)
        : m_out(out)
        , m_terms(terms)
    {
    }
    bool wantTerms() const override { return m_terms; }
    void onSegment(const SegmentView& s) override
    {
        SegmentCapture seg;
        seg.firstPosition = s.firstPosition;
        seg.qlen = s.qlen;
        seg.mlen = s.mlen;
        seg.klen = s.klen;
        seg.mask.assign(s.mask, s.mask + static_cast<std::size_t>(s.qlen) * s.klen);
        m_out.segments.push_back(std::move(seg));
    }
    void onLayer(const LayerView& l) override
    {
        auto& seg = m_out.segments.back();
        const std::size_t n = static_cast<std::size_t>(l.heads) * l.qlen * l.klen;
        seg.probs.emplace_back(l.attnProb, l.attnProb + n);
        for (int t = 0; t < 4; ++t)
            if (l.terms[t])
                seg.terms[t].emplace_back(l.terms[t], l.terms[t] + n);
    }

private:
    TextCapture& m_out;
    bool m_terms;
};
} // namespace

std::size_t TextCapture::bytes() const
{
    std::size_t b = 0;
    for (const auto& s : segments) {
        for (const auto& p : s.probs)
            b += p.size() * sizeof(float);
        for (const auto& t : s.terms)
            for (const auto& p : t)
                b += p.size() * sizeof(float);
    }
    return b;
}

namespace {
std::shared_ptr<TextCapture> captureImpl(const AttentionModel& model, std::vector<Token> tokens,
                                         const CaptureOptions& options)
{
    if (tokens.empty())
        throw Error(ErrorCode::BadInput, "the text tokenizes to nothing (it is empty or only white space)");
    const auto& info = model.info();
    auto out = std::make_shared<TextCapture>();
    out->model = info;
    out->segmentLen = options.segmentLen > 0 ? options.segmentLen : info.defaultSegmentLen;
    out->segmentLen = std::min(out->segmentLen, info.maxSegmentLen);
    out->memLen = info.family == ModelFamily::TransfoXL ? options.run.memLen.value_or(info.defaultMemLen) : 0;
    const bool terms = options.captureTerms && info.hasRelativeTerms;

    // Estimate before running: a huge text must fail clearly, not exhaust memory.
    const double perKey = static_cast<double>(info.layers) * info.heads * sizeof(float) * (terms ? 5 : 1);
    const double estimate = perKey * static_cast<double>(tokens.size()) * (out->segmentLen + out->memLen);
    if (estimate > static_cast<double>(options.maxBytes))
        throw Error(ErrorCode::BadInput,
                    "the text has " + std::to_string(tokens.size()) + " tokens; keeping its attention would need about " +
                        std::to_string(static_cast<long long>(estimate / (1 << 20))) + " MiB (limit " +
                        std::to_string(options.maxBytes >> 20) + " MiB). Use a shorter text or a corpus scan.");

    std::vector<std::int32_t> ids;
    ids.reserve(tokens.size());
    for (const auto& t : tokens)
        ids.push_back(t.id);
    out->tokens = std::move(tokens);
    CaptureObserver obs(*out, terms);
    model.runSplit(ids, out->segmentLen, options.run, obs);
    return out;
}
} // namespace

std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, std::vector<Token> tokens,
                                                const CaptureOptions& options)
{
    return captureImpl(model, std::move(tokens), options);
}

std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, const Tokenizer& tokenizer,
                                                std::string text, const CaptureOptions& options)
{
    // The tokens the model sees by default (Llama-family tokenizers add BOS; its span is empty).
    auto capture = captureImpl(model, tokenizer.encodeWithSpecial(text), options);
    capture->text = std::move(text);
    return capture;
}

} // namespace attnscope::core
