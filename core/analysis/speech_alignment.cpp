// Gathering a speech model's cross-attention for word timings.
#include "analysis/speech_alignment.h"

#include "tokenize/tokenizer.h"

#include <algorithm>

namespace attnscope::core {

namespace {

// Copies the chosen heads' rows of each cross-attention site, and the logits.
class CrossRecorder final : public AttentionObserver {
public:
    CrossRecorder(const ModelInfo& info, const std::vector<DecoderHead>& heads, CrossAttentionRun& out)
        : m_info(info)
        , m_heads(heads)
        , m_out(out)
    {
        for (const auto& h : heads)
            m_out.heads.push_back(HeadRows{h, {}});
    }
    bool wantLogits() const override { return true; }
    void onLayer(const LayerView& l) override
    {
        if (m_info.site(l.site).kind != SiteKind::Cross)
            return;
        m_out.keys = l.klen;
        const auto per = static_cast<std::size_t>(l.qlen) * l.klen;
        for (std::size_t k = 0; k < m_heads.size(); ++k)
            if (m_heads[k].layer == l.layer) {
                const float* p = l.attnProb + per * static_cast<std::size_t>(m_heads[k].head);
                m_out.heads[k].probs.assign(p, p + per);
            }
    }
    void onSegmentEnd(const SegmentEndView& e) override
    {
        m_out.logits.assign(e.logits, e.logits + static_cast<std::size_t>(e.qlen - e.firstLogitRow) * e.vocab);
    }

private:
    const ModelInfo& m_info;
    const std::vector<DecoderHead>& m_heads;
    CrossAttentionRun& m_out;
};

} // namespace

CrossAttentionRun crossAttentionOf(const AttentionModel& model, const RunOptions& options,
                                   const std::vector<std::int32_t>& ids, const std::vector<DecoderHead>& heads)
{
    CrossAttentionRun out;
    CrossRecorder recorder(model.info(), heads, out);
    model.run({ids}, options, recorder);
    return out;
}

TranscriptRun transcriptRun(const AttentionModel& model, std::shared_ptr<const AudioFeatures> audio,
                            const Transcript& transcript, const SpeechSettings& settings,
                            const std::vector<DecoderHead>& heads, const Tokenizer* tokenizer)
{
    RunOptions options;
    options.audio = audio;
    CrossAttentionRun cross = crossAttentionOf(model, options, decoderInput(transcript, settings), heads);
    TranscriptRun run;
    run.sot = transcript.sot;
    run.text = transcript.text;
    run.end = settings.end;
    run.frames = std::max(1, audio->contentFrames / 2);
    run.heads = std::move(cross.heads);
    run.logits = std::move(cross.logits);
    run.vocab = model.info().vocabSize;
    run.bytesOf = [tokenizer](std::int32_t id) {
        return tokenizer ? tokenizer->textOf(id) : "<" + std::to_string(id) + ">";
    };
    return run;
}

TranscriptTiming timeTranscript(const AttentionModel& model, std::shared_ptr<const AudioFeatures> audio,
                                const Transcript& transcript, const SpeechSettings& settings,
                                const std::vector<DecoderHead>& heads, const Tokenizer* tokenizer)
{
    TranscriptTiming t;
    t.run = transcriptRun(model, std::move(audio), transcript, settings, everyDecoderHead(model.info()), tokenizer);
    t.everyHead = std::move(t.run.heads);
    t.run.heads.clear();
    for (const auto& h : heads) // the chosen heads picked out of the one run
        for (const auto& r : t.everyHead)
            if (r.head == h)
                t.run.heads.push_back(r);
    t.words = alignWords(t.run);
    t.ranking = rankAlignmentHeads(t.run, t.everyHead, jumpFrames(t.words.path));
    return t;
}

} // namespace attnscope::core
