// What the model harnesses share: a loaded model run forward on a few tokens, as the app's first grid would, so the
// family's own tensor layout (experts and their router, latent attention, MXFP4 blocks, NoPE layers) is exercised,
// not only the file's parser.
#pragma once

#include "model/attention_model.h"

#include <vector>

namespace attnscope::fuzz {

inline void runFewTokens(const core::AttentionModel& model)
{
    const auto& info = model.info();
    if (!info.readsOneText() || info.vocabSize < 1)
        return; // their inputs are a source and target, or pixels: loading checked their tensors
    struct Quiet final : core::AttentionObserver {
        void onLayer(const core::LayerView&) override {}
    } quiet;
    std::vector<std::int32_t> ids;
    for (int i = 0; i < 3; ++i)
        ids.push_back(static_cast<std::int32_t>((7 * i + 1) % info.vocabSize));
    model.run({ids}, {}, quiet);
}

} // namespace attnscope::fuzz
