// layerAttention (layer_attention.h).
#include "run/layer_attention.h"

#include "util/error.h"
#include "util/stop_token.h"

#include <cmath>

namespace attnscope::core {

LayerAttention layerAttention(const AttentionModel& model, const TextCapture& capture, int segment, int layer, bool raw)
{
    if (layer < 0 || layer >= capture.model.layers)
        throw Error(ErrorCode::BadInput, "layer " + std::to_string(layer + 1) + " does not exist: layers are 1 .. " +
                                             std::to_string(capture.model.layers));
    struct Keep final : AttentionObserver {
        int layer = 0;
        bool raw = false;
        StopToken stop;
        LayerAttention out;
        bool wantScores() const override { return raw; }
        void onLayer(const LayerView& v) override
        {
            if (v.layer != layer)
                return;
            const float* src = raw ? v.scores : v.attnProb;
            if (!src)
                throw Error(ErrorCode::BadInput, "this model gives no raw scores (its score is not one dot product)");
            out.heads = v.heads;
            out.queries = v.qlen;
            out.keys = v.klen;
            const auto per = static_cast<std::size_t>(v.qlen) * v.klen;
            out.values.assign(src, src + per * static_cast<std::size_t>(v.heads));
            if (raw) // masked keys: NaN, not the forward's 0
                for (std::size_t h = 0; h < static_cast<std::size_t>(v.heads); ++h)
                    for (std::size_t i = 0; i < per; ++i)
                        if (v.mask[i])
                            out.values[h * per + i] = std::nanf("");
            stop.requestStop(); // the layers after this one are not needed
        }
    } keep;
    keep.layer = layer;
    keep.raw = raw;
    try {
        rerunSegment(model, capture, segment, keep, &keep.stop);
    } catch (const Error& e) {
        if (e.code() != ErrorCode::Cancelled || keep.out.values.empty())
            throw;
    }
    return std::move(keep.out);
}

} // namespace attnscope::core
