// Head ablation (figures.md; Michel et al. 2019 ask the same question with gradients): for every head, the mean
// next-token loss of a text when that head's output is zeroed before its layer's output projection, against the
// loss of the intact model. One forward per head. For models with a language-model head (GPT-2, Llama family).
#pragma once

#include "model/attention_model.h"

#include <functional>
#include <span>
#include <vector>

namespace attnscope::core {

struct AblationResult {
    int layers = 0, heads = 0;
    double baseLoss = 0;        // mean next-token loss (nats) of the intact model
    std::vector<double> loss;   // [layers * heads]: the loss with that head zeroed
    int predictions = 0;        // next-token predictions averaged (tokens - 1)
    bool partial = false;       // cancelled: heads not run are NaN
    double change(int layer, int head) const { return loss[static_cast<std::size_t>(layer) * heads + head] - baseLoss; }
};

// Mean next-token loss of `ids` run in segments of `segmentLen` (each a text of its own), optionally with a head
// zeroed. The last token of a segment predicts the first of the next.
double nextTokenLoss(const AttentionModel& model, std::span<const std::int32_t> ids, int segmentLen,
                     std::optional<RunOptions::HeadRef> ablate = {}, const StopToken* stop = nullptr);

// Every head; `progress(done, total)` after each forward. Cancelling (stop) keeps what was measured (partial).
AblationResult headAblation(const AttentionModel& model, std::span<const std::int32_t> ids, int segmentLen,
                            const StopToken* stop = nullptr, const std::function<void(int, int)>& progress = {});

} // namespace attnscope::core
