// An observer that keeps nothing: a forward run for its outputs alone (the logits, a picture's rows, a patched run),
// its heads attending block by block without a [heads, q, k] buffer.
#pragma once

#include "model/attention_model.h"

namespace attnscope::core {

class QuietObserver final : public AttentionObserver {
public:
    bool wantProbabilities() const override { return false; }
    void onLayer(const LayerView&) override {}
};

} // namespace attnscope::core
