// The head atlas recipe.
#include "analysis/atlas_recipe.h"

#include "analysis/relpos_scan.h"
#include "model/attention_model.h"

#include <algorithm>

namespace attnscope::core {

int inductionRepeatLength(const ModelInfo& info)
{
    return std::max(4, std::min(50, (info.maxSegmentLen - 1) / 2));
}

AtlasOfText atlasOfText(const AttentionModel& model, const AtlasRecipe& recipe, const StopToken* stop,
                        const AtlasProgress& progress)
{
    const auto& info = model.info();
    AtlasOfText out;
    out.profile = recipe.profile;
    if (!out.profile && recipe.capture && info.can.causal)
        out.profile = std::make_shared<const ScanResult>(relposFromCapture(*recipe.capture, "", stop));
    out.atlas = out.profile ? atlasFromScan(*out.profile, recipe.profileName) : emptyAtlas(info.layers, info.heads);
    if (recipe.capture) {
        addTextScores(out.atlas, duplicateTokenScores(*recipe.capture, stop, progress));
        auto tokens = tokenAttentionScores(*recipe.capture, stop, progress);
        if (info.can.image) // which heads the high-norm tokens of a picture draw (one more run)
            addHighNormAttention(model, *recipe.capture, tokens, stop);
        addTokenAttention(out.atlas, tokens);
    }
    if (!info.can.image) {
        out.induction = recipe.knownInduction
                            ? *recipe.knownInduction
                            : inductionScores(model, recipe.tokenizer, inductionRepeatLength(info), stop, progress);
        addInductionScores(out.atlas, out.induction);
    }
    return out;
}

} // namespace attnscope::core
