// neuronView: the vectors from the capture's pages, the probabilities from the one attention routine.
#include "analysis/neuron_view.h"

#include "attention/attention_scores.h"
#include "util/error.h"

#include <cmath>

namespace attnscope::core {

NeuronView neuronView(const TextCapture& capture, int segment, int layer, int head, int queryRow)
{
    const auto& seg = capture.segment(segment);
    const ScoreInputs in = capture.inputs(segment, layer);
    if (head < 0 || head >= in.heads)
        throw Error(ErrorCode::BadInput, "no head " + std::to_string(head + 1) + " in layer " + std::to_string(layer + 1));
    if (queryRow < 0 || queryRow >= seg.qlen)
        throw Error(ErrorCode::BadInput, "no query " + std::to_string(queryRow + 1) + " in segment " +
                                             std::to_string(segment + 1));
    const int d = in.headDim, g = in.keyHead(head);
    NeuronView v;
    v.headDim = d;
    v.scale = in.scale;
    v.contentTermOnly = in.relativeTerms();
    v.sink = in.sinkOf(head);
    v.queryToken = static_cast<int>(seg.firstPosition) + queryRow;
    const float* q = in.queries.row(queryRow) + static_cast<std::ptrdiff_t>(head) * d;
    v.query.assign(q, q + d);
    std::vector<float> probs(static_cast<std::size_t>(in.klen));
    const int rows[1] = {queryRow};
    headAttentionRows(in, head, {}, rows, probs.data(), in.klen, 0.0f);
    const VisibleSpan span = in.spans[queryRow];
    for (int j = span.lo; j < span.lo + span.len; ++j) {
        const float* k = in.keys.row(j) + static_cast<std::ptrdiff_t>(g) * d;
        double dot = 0;
        for (int i = 0; i < d; ++i) {
            v.keys.push_back(k[i]);
            v.products.push_back(q[i] * k[i]);
            dot += static_cast<double>(q[i]) * k[i];
        }
        float score = static_cast<float>(dot) * in.scale;
        if (in.softCap > 0)
            score = in.softCap * std::tanh(score / in.softCap);
        v.scores.push_back(score);
        v.probabilities.push_back(probs[static_cast<std::size_t>(j)]);
        v.keyTokens.push_back(static_cast<int>(seg.firstPosition) - seg.mlen + j);
    }
    return v;
}

} // namespace attnscope::core
