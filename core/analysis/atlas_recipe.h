// The head atlas of a text as every front end builds it (the window, headless export, `attnscope-cli heads`, Python):
// one recipe, so its columns cannot drift apart between them.
#pragma once

#include "analysis/head_atlas.h"

#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

struct AtlasRecipe {
    // The distance-profile columns: a corpus scan when given; otherwise, for a causal model, the text's own capture
    // (an encoder's atlas then has its text columns only).
    std::shared_ptr<const ScanResult> profile;
    std::string profileName = "full"; // which of the scan's profiles (ScanResult: "full", "term_a", "band_1", ...)
    // The text columns (duplicate-token, Clark et al.'s token attention, a picture's high-norm tokens); none without it.
    const TextCapture* capture = nullptr;
    // The induction column (never for pictures: their tokens are patches): the model's scores when already known
    // (they do not depend on the text), else computed from the tokenizer's special prefix and a random sequence.
    const std::vector<double>* knownInduction = nullptr;
    const Tokenizer* tokenizer = nullptr;
};

struct AtlasOfText {
    HeadAtlas atlas;
    std::shared_ptr<const ScanResult> profile; // what the profile columns came from (null: none)
    std::vector<double> induction;             // the induction scores used (empty for pictures), for a cache
};

// The repeated sequence's half length for a model: 50 tokens, fewer when its context is shorter.
int inductionRepeatLength(const ModelInfo& info);

AtlasOfText atlasOfText(const AttentionModel& model, const AtlasRecipe& recipe, const StopToken* stop = nullptr,
                        const AtlasProgress& progress = {});

} // namespace attnscope::core
