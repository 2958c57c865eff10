// explainHead (head_explanation.h).
#include "analysis/head_explanation.h"

#include "attention/attention_scores.h"
#include "model/intervention.h"
#include "util/error.h"

#include <cmath>

namespace attnscope::core {

HeadExplanation explainHead(const AttentionModel& model, const std::vector<std::vector<std::int32_t>>& segments,
                            const RunOptions& options, int layer, int head, std::int64_t position)
{
    const ModelInfo& info = model.info();
    if (info.streams.size() != 1)
        throw Error(ErrorCode::BadInput, "explain reads one stream; " + info.source + " reads " +
                                             std::to_string(info.streams.size()) + " (an encoder-decoder model: source and target)");
    if (layer < 0 || layer >= info.layers)
        throw Error(ErrorCode::BadInput, "no layer " + std::to_string(layer + 1) + " (the model has " + std::to_string(info.layers) + ")");
    if (head < 0 || head >= info.heads)
        throw Error(ErrorCode::BadInput, "no head " + std::to_string(head + 1) + " (layers have " + std::to_string(info.heads) + ")");
    std::int64_t tokens = 0;
    for (const auto& s : segments)
        tokens += static_cast<std::int64_t>(s.size());
    if (position < 0 || position >= tokens)
        throw Error(ErrorCode::BadInput, "no position " + std::to_string(position + 1) + " (the input has " + std::to_string(tokens) + " tokens)");

    // The layer's value rows as the forward hands them to the heads (hooked families): kept from the hook until the
    // observer sees the layer, for the query's segment only.
    struct Values final : Intervention {
        int layer = 0, head = 0;
        std::int64_t position = 0;
        std::vector<std::vector<float>> rows;
        std::vector<float> query; // the query before rotation, when the position is among the rows
        void onActivation(Activation what, int l, const ActivationRows& a) override
        {
            if (what != Activation::Queries || l != layer || position < a.firstPosition ||
                position >= a.firstPosition + a.rows)
                return;
            const float* q = a.at(static_cast<int>(position - a.firstPosition), head);
            query.assign(q, q + a.width);
        }
        void onAttention(int l, const ScoreInputs& in, const float* values, std::ptrdiff_t stride,
                         const ActivationRows&) override
        {
            if (l != layer)
                return;
            const int dv = in.vDim();
            rows.clear(); // the latest segment's: the observer takes them at its layer
            for (int j = 0; j < in.klen; ++j) {
                const float* v = values + j * stride + static_cast<std::ptrdiff_t>(in.keyHead(head)) * dv;
                rows.emplace_back(v, v + dv);
            }
        }
    } values;
    values.layer = layer;
    values.head = head;
    values.position = position;

    struct Explain final : AttentionObserver {
        const AttentionModel* model = nullptr;
        Values* values = nullptr;
        HeadExplanation e;
        std::int64_t first = 0;
        bool done = false;
        std::vector<float> previous, last; // the position's residual stream before this layer; after the last one
        bool mine(const LayerView& v) const { return e.position >= first && e.position < first + v.qlen; }
        void onSegment(const SegmentView& v) override
        {
            first = v.firstPosition;
            if (e.position >= first && e.position < first + v.qlen)
                previous.assign(v.embedding + (e.position - first) * v.dModel, v.embedding + (e.position - first + 1) * v.dModel);
        }
        void onLayer(const LayerView& v) override
        {
            if (mine(v)) { // the stream through every layer, for the input of the explained one and the prediction
                const float* h = v.hidden + (e.position - first) * v.dModel;
                if (v.layer == e.layer && !done)
                    e.residualIn = previous;
                previous.assign(h, h + v.dModel);
                last = previous;
            }
            if (done || v.layer != e.layer || !mine(v))
                return;
            done = true;
            if (v.inputs.mixer != Mixer::Softmax)
                throw Error(ErrorCode::BadInput, "layer " + std::to_string(v.layer + 1) + " mixes tokens by a " +
                                                     mixerRow(v.inputs.mixer).name +
                                                     ", not attention: a head's explanation reads attention heads");
            const int i = static_cast<int>(e.position - first), k = v.klen, h = e.head;
            const ScoreInputs& in = v.inputs;
            e.segment = v.segment;
            e.kvHead = in.kvHeads > 0 ? in.keyHead(h) : h;
            e.scale = in.scale;
            e.softCap = in.softCap;
            if (in.sinks)
                e.sink = in.sinks[h];
            for (int j = 0; j < k; ++j)
                e.keyPositions.push_back(first - v.mlen + j);
            TermSelection raw;
            raw.raw = true;
            const int rows[] = {i};
            e.scores.assign(static_cast<std::size_t>(k), 0.0f);
            headAttentionRows(in, h, raw, rows, e.scores.data(), k, std::numeric_limits<float>::quiet_NaN());
            const float* p = v.attnProb + (static_cast<std::size_t>(h) * v.qlen + i) * k;
            e.probs.assign(p, p + k);
            const int d = in.headDim;
            if (in.queries) {
                const float* q = in.queries.row(i) + static_cast<std::ptrdiff_t>(h) * d;
                e.query.assign(q, q + d);
            }
            if (in.keys)
                for (int j = 0; j < k; ++j) {
                    const float* key = in.keys.row(j) + static_cast<std::ptrdiff_t>(e.kvHead) * d;
                    e.keys.emplace_back(key, key + d);
                }
            if (v.headMix) {
                const int dv = in.vDim();
                const float* o = v.headMix + static_cast<std::size_t>(i) * v.heads * dv + static_cast<std::size_t>(h) * dv;
                e.output.assign(o, o + dv);
            }
            if (values && static_cast<int>(values->rows.size()) == k)
                e.values = std::move(values->rows);
            if (values && values->query.size() == e.query.size() && values->query != e.query)
                e.queryUnrotated = values->query; // rotary: the same query before its positions turned it
            const float* row = v.attnOutput ? v.attnOutput + static_cast<std::size_t>(i) * v.dModel : nullptr;
            if (row)
                e.attentionOut.assign(row, row + v.dModel);
            e.layerOut.assign(v.hidden + static_cast<std::size_t>(i) * v.dModel, v.hidden + static_cast<std::size_t>(i + 1) * v.dModel);
            std::vector<float> parts;
            if (v.headMix && model->headParts(e.layer, v.headMix + static_cast<std::size_t>(i) * v.heads * in.vDim(), parts))
                e.headPart.assign(parts.begin() + static_cast<std::ptrdiff_t>(h) * v.dModel,
                                  parts.begin() + static_cast<std::ptrdiff_t>(h + 1) * v.dModel);
        }
    } observer;
    observer.e.layer = layer;
    observer.e.head = head;
    observer.e.position = position;
    RunOptions run = options;
    if (info.can.interventions && !run.intervene) {
        run.intervene = &values;
        observer.values = &values;
    }
    observer.model = &model;
    model.run(segments, run, observer);
    // The prediction at this position: the last layer's stream through the model's read-out.
    std::vector<float> logits;
    if (observer.done && !observer.last.empty() && model.readOut(observer.last.data(), 1, logits))
        observer.e.next = distributionOf(logits, 1.0, 10).top;
    if (!observer.done)
        throw Error(ErrorCode::BadInput, "the run did not reach layer " + std::to_string(layer + 1) + " at position " +
                                             std::to_string(position + 1));
    return observer.e;
}

HeadExplanation explainHead(const AttentionModel& model, const TextCapture& capture, int layer, int head,
                            std::int64_t position)
{
    std::vector<std::vector<std::int32_t>> segments;
    for (int s = 0; s < static_cast<int>(capture.segments.size()); ++s)
        segments.push_back(capture.segmentIds(s));
    return explainHead(model, segments, capture.runOptions(), layer, head, position);
}

} // namespace attnscope::core
