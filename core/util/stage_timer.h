// Where a forward pass or a scan spends its time, per stage, for the benchmark's breakdown (docs/performance.md,
// "Where the time goes"). Off unless a program turns it on; then a StageScope adds the wall time of its scope, on
// the thread that runs it, to its stage. Stages timed around a parallel region (Attention, Profiles) measure the
// region's wall time; the stages inside it (Scores ... Values) add up the time of every thread, so a report
// divides the region's wall time among them and calls the rest of the threads' capacity synchronisation.
#pragma once

#include <array>
#include <cstddef>

namespace attnscope::core {

enum class Stage : int {
    Embedding,     // token and position embeddings, masks
    Norms,         // LayerNorm / RMSNorm
    Projections,   // q, k, v and output projections (matrix products)
    Rotary,        // rotary position embedding of queries and keys
    Attention,     // everything from the scores to the heads' outputs (a parallel region; inner stages below)
    Scores,        //   inside Attention: score products (q.k, and q.R for Transformer-XL)
    RelativeShift, //   inside Attention: gathering a row's score terms (Transformer-XL's relative shift)
    Softmax,       //   inside Attention: softmax of each row
    CaptureCopies, //   inside Attention: copying probabilities, scores or terms out for the observer
    RowSink,       //   inside Attention: an observer summing rows as they are computed (the scan's profiles)
    Values,        //   inside Attention: probabilities times values
    FeedForward,   // the feed-forward block's products and activation
    Copies,        // caches and memories: keys, values and hidden states kept for the next segment
    Profiles,      // the scan's accumulation of relative-position profiles and per-head statistics
    Count
};

// Stages inside the Attention region (their times are thread-seconds).
constexpr bool insideAttention(Stage s) { return s >= Stage::Scores && s <= Stage::Values; }
const char* stageName(Stage s);

// Turns timing on or off for the whole process (off by default) and clears the totals when turned on.
void enableStageTimes(bool on);
bool stageTimesEnabled();
// Seconds per stage since timing was turned on (wall or thread-seconds, see above).
std::array<double, static_cast<std::size_t>(Stage::Count)> stageSeconds();

class StageScope {
public:
    explicit StageScope(Stage s);
    ~StageScope();
    StageScope(const StageScope&) = delete;
    StageScope& operator=(const StageScope&) = delete;

private:
    Stage m_stage;
    long long m_start = -1; // ns; -1 when timing is off
};

} // namespace attnscope::core
