// layerAttention (layer_attention.h).
#include "run/layer_attention.h"

#include "util/error.h"
#include "util/stop_token.h"

#include <cmath>

namespace attnscope::core {

LayerAttention layerAttention(const AttentionModel& model, const TextCapture& capture, int segment, int site, bool raw)
{
    if (site < 0 || site >= capture.model.siteCount())
        throw Error(ErrorCode::BadInput, "layer " + std::to_string(site + 1) + " does not exist: layers are 1 .. " +
                                             std::to_string(capture.model.siteCount()));
    struct Keep final : AttentionObserver {
        int site = 0;
        bool raw = false;
        StopToken stop;
        LayerAttention out;
        bool wantScores() const override { return raw; }
        void onLayer(const LayerView& v) override
        {
            if (v.site != site)
                return;
            if (v.inputs.mixer != Mixer::Softmax) { // an implicit map: computed from the site's inputs, raw or not
                keepImplicitMap(v);
                stop.requestStop();
                return;
            }
            const float* src = raw ? v.scores : v.attnProb;
            if (!src)
                throw Error(ErrorCode::BadInput, "this model gives no raw scores (its score is not one dot product)");
            out.heads = v.heads;
            out.queries = v.qlen;
            out.keys = v.klen;
            const auto per = static_cast<std::size_t>(v.qlen) * v.klen;
            out.values.assign(src, src + per * static_cast<std::size_t>(v.heads));
            if (raw) // masked keys: NaN, not the forward's 0
                for (int i = 0; i < v.qlen; ++i) {
                    const VisibleSpan span = v.inputs.spans[i];
                    for (int j = 0; j < v.klen; ++j)
                        if (j < span.lo || j >= span.lo + span.len)
                            for (std::size_t h = 0; h < static_cast<std::size_t>(v.heads); ++h)
                                out.values[h * per + static_cast<std::size_t>(i) * v.klen + j] = std::nanf("");
                }
            stop.requestStop(); // the sites after this one are not needed
        }
        void keepImplicitMap(const LayerView& v)
        {
            out.heads = v.heads;
            out.queries = v.qlen;
            out.keys = v.klen;
            const auto per = static_cast<std::size_t>(v.qlen) * v.klen;
            out.values.assign(per * static_cast<std::size_t>(v.heads), 0.0f);
            for (int h = 0; h < v.heads; ++h)
                headAttention(v.inputs, h, {}, out.values.data() + per * static_cast<std::size_t>(h), v.klen,
                              raw ? std::nanf("") : 0.0f);
        }
    } keep;
    keep.site = site;
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
