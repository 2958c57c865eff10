// logitLens: the segment's layer outputs kept by an observer, each read out through the model.
#include "analysis/logit_lens.h"

#include "util/csv_field.h"
#include "model/run_limits.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <cstdio>

namespace attnscope::core {

namespace {
// Every layer output of the segment stream (a decoder's; an encoder-decoder model's encoder layers read the source).
class HiddenObserver final : public AttentionObserver {
public:
    explicit HiddenObserver(const ModelInfo& info)
        : m_info(info)
    {
    }
    bool wantProbabilities() const override { return false; }
    void onSegment(const SegmentView&) override { hidden.clear(); }
    void onLayer(const LayerView& l) override
    {
        if (!l.hidden || m_info.site(l.site).queryStream != m_info.segmentStream())
            return;
        hidden.emplace_back(l.hidden, l.hidden + static_cast<std::size_t>(l.qlen) * l.dModel);
        rows = l.qlen;
    }
    void onSegmentEnd(const SegmentEndView&) override {}
    std::vector<std::vector<float>> hidden; // per layer [rows, dModel]: the last segment's (earlier ones are cleared)
    int rows = 0;

private:
    const ModelInfo& m_info;
};
} // namespace

LogitLens logitLens(const AttentionModel& model, const TextCapture& capture, int segment, int k, const StopToken* stop)
{
    const auto& info = model.info();
    if (!info.can.nextTokenLoss && !info.can.maskedTokens)
        throw Error(ErrorCode::BadInput, std::string(familyName(info.family)) +
                                             " is read here without its output layer: no logit lens");
    const auto& seg = capture.segment(segment);
    // Every layer's output for the segment, and one layer's logits read out (with the read-out's own array).
    checkFits(static_cast<std::uint64_t>(static_cast<double>(info.layers) * seg.qlen * info.dModel * sizeof(float)) +
                  logitsBytes(info, static_cast<std::size_t>(seg.qlen)),
              "the logit lens over " + std::to_string(seg.qlen) + " tokens, " + std::to_string(info.layers) +
                  " layers and a vocabulary of " + std::to_string(info.vocabSize),
              "use shorter segments", info.source);
    HiddenObserver obs(info); // keeps the last segment's layer outputs
    rerunSegment(model, capture, segment, obs, stop);
    LogitLens lens;
    lens.layers = static_cast<int>(obs.hidden.size());
    lens.positions = seg.qlen;
    lens.firstPosition = static_cast<int>(seg.firstPosition);
    lens.nextToken = info.can.causal;
    const std::size_t cells = static_cast<std::size_t>(lens.layers) * seg.qlen;
    lens.top.resize(cells);
    lens.actualProbability.resize(cells);
    lens.actualRank.resize(cells);
    std::vector<float> logits;
    for (int l = 0; l < lens.layers; ++l) {
        if (stop && stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "logit lens cancelled");
        if (!model.readOut(obs.hidden[static_cast<std::size_t>(l)].data(), seg.qlen, logits))
            throw Error(ErrorCode::BadInput, "this model has no read-out for the logit lens");
        const int V = static_cast<int>(logits.size() / static_cast<std::size_t>(seg.qlen));
#pragma omp parallel for schedule(static)
        for (int p = 0; p < seg.qlen; ++p) {
            const int token = lens.firstPosition + p;
            // The compared token: the next one (causal), the one at the position (encoders).
            const int compared = lens.nextToken ? token + 1 : token;
            const std::int32_t actual = compared < static_cast<int>(capture.tokens.size())
                                            ? capture.tokens[static_cast<std::size_t>(compared)].id
                                            : -1;
            auto d = distributionOf(std::span<const float>(logits.data() + static_cast<std::size_t>(p) * V,
                                                           static_cast<std::size_t>(V)),
                                    1.0, k, actual);
            const std::size_t at = static_cast<std::size_t>(l) * seg.qlen + p;
            lens.top[at] = std::move(d.top);
            lens.actualProbability[at] = actual >= 0 ? d.actualProbability : -1.0;
            lens.actualRank[at] = d.actualRank;
        }
    }
    return lens;
}


std::string logitLensCsv(const LogitLens& lens, const TextCapture& capture, const Tokenizer& tokenizer)
{
    const std::string compared = lens.nextToken ? "next" : "own";
    std::string out = "layer,position,id,token,p," + compared + "_id," + compared + "_token," + compared + "_p," +
                      compared + "_rank\n";
    char buf[64];
    for (int l = 0; l < lens.layers; ++l)
        for (int p = 0; p < lens.positions; ++p) {
            const auto i = static_cast<std::size_t>(l) * lens.positions + p;
            const int token = lens.firstPosition + p;
            out += std::to_string(l + 1) + "," + std::to_string(token + 1) + ",";
            const auto& top = lens.top[i];
            if (!top.empty()) {
                std::snprintf(buf, sizeof buf, "%.6g", top.front().probability);
                out += std::to_string(top.front().id) + "," + csvField(tokenizer.pieceOf(top.front().id)) + "," + buf;
            } else {
                out += ",,";
            }
            if (lens.actualRank[i] >= 0) {
                const auto id = capture.tokens[static_cast<std::size_t>(lens.nextToken ? token + 1 : token)].id;
                std::snprintf(buf, sizeof buf, "%.6g", lens.actualProbability[i]);
                out += "," + std::to_string(id) + "," + csvField(tokenizer.pieceOf(id)) + "," + buf + "," +
                       std::to_string(lens.actualRank[i] + 1) + "\n";
            } else {
                out += ",,,,\n";
            }
        }
    return out;
}

} // namespace attnscope::core
