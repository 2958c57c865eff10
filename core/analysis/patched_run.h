// One forward pass of a decoder with some activations recorded and some replaced: the single operation activation and
// path patching are made of (analysis/activation_patching.h). It starts at any layer from a recorded residual stream,
// so a patched run reuses everything before its first patched layer, and records what a later run substitutes.
#pragma once

#include "model/attention_model.h"
#include "model/intervention.h"

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace attnscope::core {

// Activations recorded from one run, each [rows, groups * width] without gaps (rows = the prompt's tokens).
class RunRecording {
public:
    int rows = 0;
    bool has(Activation what, int layer) const { return m_acts.count({what, layer}) > 0; }
    const std::vector<float>& get(Activation what, int layer) const;
    std::vector<float>& put(Activation what, int layer) { return m_acts[{what, layer}]; }
    // Each head's attention probabilities of a layer, [heads, rows, rows] (masked keys 0).
    bool hasPattern(int layer) const { return m_patterns.count(layer) > 0; }
    const std::vector<float>& pattern(int layer) const;
    std::vector<float>& putPattern(int layer) { return m_patterns[layer]; }

private:
    std::map<std::pair<Activation, int>, std::vector<float>> m_acts;
    std::map<int, std::vector<float>> m_patterns;
};

class PatchedRun final : public Intervention {
public:
    // Replaces unit `unit` (a head or key/value group; -1: every one) at `position` (-1: every one) of an activation
    // by the same place of `source` ([rows, groups * width], e.g. RunRecording::get of another prompt's run).
    struct Substitution {
        Activation what = Activation::HeadOutputs;
        int layer = 0;
        int unit = -1;
        int position = -1;
        const std::vector<float>* source = nullptr;
    };
    // A head's output recomputed from other probabilities ([heads, rows, rows], the donor's) and this run's values,
    // at one query position or all (-1).
    struct PatternSubstitution {
        int layer = 0;
        int head = 0;
        int position = -1;
        const std::vector<float>* probabilities = nullptr;
    };

    // Layers before `layer` are skipped; `residual` ([rows, dModel]) is their output.
    void startAt(int layer, const std::vector<float>* residual);
    // Only the tokens from `keep` on are run, continuing `segmentEnd` (the end state of another run of the same ids,
    // whose recording `earlier` fills the first `keep` rows of what this run records): what a patch that changes
    // nothing before position `keep` may skip. Families that cannot resume run every token.
    void resumeFrom(const RunState& segmentEnd, int keep, const RunRecording& earlier);
    // Applied in the order given, so a later one overrides an earlier one where they overlap.
    void substitute(const Substitution& s) { m_subs.push_back(s); }
    void substitutePattern(const PatternSubstitution& s) { m_patternSubs.push_back(s); }
    void record(Activation what, int layer) { m_record.push_back({what, layer}); }
    void recordEveryLayer(Activation what, int layers);
    void recordPatterns() { m_recordPatterns = true; } // of a run that is not resumed
    // The stream after the last layer is always recorded: what the metric reads.
    const RunRecording& recording() const { return m_recording; }
    RunRecording takeRecording() { return std::move(m_recording); }

    // Runs `ids` from an empty state (or the resumed one) through this intervention.
    void run(const AttentionModel& model, std::span<const std::int32_t> ids, const StopToken* stop);
    // The state the run ended in (what a later run resumes from); null before run().
    const RunState* endState() const { return m_state.get(); }
    std::unique_ptr<RunState> takeState() { return std::move(m_state); }

    int firstLayer() const override { return m_first; }
    void onActivation(Activation what, int layer, const ActivationRows& rows) override;
    void onAttention(int layer, const ScoreInputs& in, const float* values, std::ptrdiff_t valueStride,
                     const ActivationRows& headOutputs) override;

private:
    int m_first = 0;
    int m_layers = 0;
    const RunState* m_resumeFrom = nullptr;
    int m_keep = 0;
    const RunRecording* m_earlier = nullptr;
    std::unique_ptr<RunState> m_state;
    const std::vector<float>* m_startResidual = nullptr;
    std::vector<Substitution> m_subs;
    std::vector<PatternSubstitution> m_patternSubs;
    std::vector<std::pair<Activation, int>> m_record;
    bool m_recordPatterns = false;
    RunRecording m_recording;
};

} // namespace attnscope::core
