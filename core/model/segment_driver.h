// The frame every family's forwardSegment runs its block arithmetic in, so a family's file holds only its embedding and
// its blocks: the segment's ids checked (length, vocabulary), the observer told where the segment starts, cancellation
// checked between layers, each layer's view completed with the segment's shape and handed on (never after the weights'
// file was found damaged), the read-out at the end when the observer asks for logits, and the run's counters advanced.
#pragma once

#include "io/checkpoint.h"
#include "attention/attention_scores.h"
#include "model/attention_model.h"
#include "util/layer_buffer.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace attnscope::core {

// The keys each query of a causal segment sees: query i (position m + i) sees key j when j <= m + i and, with a sliding
// window, m + i - j < window. Spans per query, and the mask [q, m + q] the observer reads (1 = masked).
struct Visibility {
    std::vector<std::uint8_t> mask;
    std::vector<VisibleSpan> spans;
};
Visibility causalVisibility(int q, int m, int window = 0);

class SegmentDriver {
public:
    // The segment's shape as the observer sees it: qlen new tokens after mlen remembered or cached ones.
    struct Shape {
        int qlen = 0;
        int mlen = 0;
        int dModel = 0;
        int klen() const { return mlen + qlen; }
    };

    SegmentDriver(RunState& state, AttentionObserver& observer, const Checkpoint& weights);

    // Throws Error(BadInput) for an empty segment and naming the first id outside [0, vocab) and its position.
    static void checkIds(std::span<const std::int32_t> ids, int vocab);
    // Throws Error(BadInput) for a segment of more than `maxTokens` tokens; `tokens` is what counts against the limit
    // (a resumed segment's cached tokens too) and `limit` says what the limit is ("the model's 1024 positions
    // (n_positions)").
    static void checkLength(int tokens, int maxTokens, const std::string& limit);

    bool wantTerms() const { return m_observer.wantTerms(); }

    // Fills the view's segment index, first position and shape, and tells the observer the segment starts.
    void begin(const Shape& shape, SegmentView& view);
    // What the observer wants kept of every layer's attention (probabilities with each row's entropy, scores), in
    // buffers of the segment's shape that the driver owns: for attendAllHeads (a family adds its score terms), and
    // put into every layer view by layerDone. After begin().
    AttentionCapture kept(int heads);
    // The same for a site whose shape is not the segment's (an encoder's self-attention over a read stream,
    // cross-attention over it): buffers [heads, qlen, klen], valid until the next kept or keptFor.
    AttentionCapture keptFor(int heads, int qlen, int klen);
    // Between layers: throws Error(Cancelled) when the run was asked to stop.
    void checkStop() const;
    // Fills the layer view's segment index, layer and shape, and hands it on.
    void layerDone(int layer, LayerView& view);
    // Hands on a site's view whose site, layer and shape (qlen, mlen, klen) the family filled: the segment index, the
    // kept buffers and dModel are the driver's, and the layer's output (when the view has one) is checked.
    void siteDone(LayerView& view);
    // Ends the segment: `readOut` (given the view to fill with lnF, logits and vocab) runs only when the observer
    // wants logits; then the observer's onSegmentEnd, and the state's counters advance.
    void end(const std::function<void(SegmentEndView&)>& readOut);

private:
    // Error(CorruptFile) naming the weights' file when a layer's output [rows, dModel] holds NaN or infinity.
    void throwIfNotFinite(const float* hidden, int rows, int layer) const;

    RunState& m_state;
    AttentionObserver& m_observer;
    const Checkpoint& m_weights;
    Shape m_shape;
    bool m_wantProbabilities = false;
    bool m_wantScores = false;
    std::unique_ptr<LayerBuffer> m_probabilities, m_scores;
    std::vector<float> m_entropy;
};

} // namespace attnscope::core
