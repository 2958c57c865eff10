// Activation patching and path patching (the circuit workflow of Wang et al. 2022, "Interpretability in the Wild", and
// TransformerLens's patching module): a clean and a corrupted prompt of the same length, a metric of the model's
// output, and one component at a time copied from one prompt's run into the other's. Forward-only: every patched run
// starts at its first patched layer from the recorded residual stream. Decoders only (Capabilities::interventions).
//
// Numbering here is from 0 (layers, heads, groups, positions); people read them from 1 (the CLI and the views add 1).
#pragma once

#include "model/attention_model.h"

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace attnscope::core {

// What a run is measured by, at the prompt's last position unless said otherwise.
struct PatchMetric {
    enum class Kind {
        LogitDifference, // logit[answer] - logit[wrong]
        Probability,     // softmax[answer]
        LogProbability,  // log softmax[answer]
        Loss,            // mean next-token cross-entropy of the clean prompt's tokens (nats), every position
    };
    Kind kind = Kind::LogitDifference;
    std::int32_t answer = -1;
    std::int32_t wrong = -1;
    static Kind kindNamed(const std::string& name); // "logit-diff", "prob", "logprob", "loss"; BadInput otherwise
    std::string describe() const;
};

// The component patched, one unit at a time.
enum class PatchComponent {
    HeadOutput, // a head's output before the output projection (unit: head)
    Queries,    // a head's query (unit: head)
    Keys,       // a key/value head's keys (unit: head, or group of a grouped model)
    Values,     // likewise its values
    Pattern,    // a head's attention probabilities; the values stay the patched run's (unit: head)
    Residual,   // a layer's input at one position (unit: position; layer == layers: after the last layer)
};
PatchComponent patchComponentNamed(const std::string& name); // head-out, q, k, v, pattern, resid
const char* patchComponentName(PatchComponent component);     // the name patchComponentNamed reads

struct PatchRequest {
    std::vector<std::int32_t> clean, corrupt;
    PatchComponent component = PatchComponent::HeadOutput;
    bool perPosition = false; // one score per position too (Residual always is)
    // Denoising (default): the corrupted run with one clean activation; noising: the clean run with a corrupted one.
    bool noising = false;
    PatchMetric metric;
    // Coarse to fine when > 0 (a big model's every head is many runs): first each layer with every unit of the
    // component patched at once, then the units of the layers whose |score| reaches this threshold only, then (with
    // perPosition) the positions of those units that reach it. A unit whose effect another unit of its layer cancels
    // can be skipped; exhaustive (0) is the reference. Per-unit components only (not Residual).
    double coarseToFine = 0;
};

struct PatchResult {
    double clean = 0, corrupt = 0; // the metric of the two prompts' plain runs
    // Axes of `scores`, outermost first, e.g. {"layer", "head"}, {"layer", "group", "position"}, {"layer", "position"}.
    std::vector<std::string> axes;
    std::vector<int> shape;
    // (m_patched - m_corrupt) / (m_clean - m_corrupt), row-major over `shape`; NaN where not run (cancelled).
    std::vector<double> scores;
    std::vector<double> metrics; // m_patched, same layout
    bool partial = false;
    int runs = 0; // patched forward passes made
    // Coarse to fine only: each layer's score with every unit patched at once ([layers]), with perPosition each
    // unit's over all positions ([layers, units]; NaN where its layer was skipped), and the cells left out (NaN).
    std::vector<double> layerScores, unitScores;
    int skipped = 0;
};

// Called after every patched run with the result so far (cells not run yet are NaN).
using PatchProgress = std::function<void(const PatchResult& partial, int done, int total)>;

// Throws Error(BadInput) naming the problem: prompts of different lengths (and the first position where their tokens
// differ), an answer outside the vocabulary, a model without hooks, a metric equal on both prompts.
PatchResult patchActivations(const AttentionModel& model, const PatchRequest& request,
                             const PatchProgress& progress = {}, const StopToken* stop = nullptr);

// Path patching of a sender head's output into receivers' queries, keys or values only. The sender's output comes from
// the other prompt while every other head keeps its output of the patched prompt's run; the receivers' inputs from
// that run are then patched into the plain run, which is measured. Two definitions of the path, by `freezeMlps`:
//  - false (Wang et al. 2022): the MLPs between sender and receivers are recomputed, so the sender reaches the
//    receivers directly and through every MLP on the way;
//  - true (the strict direct path, TransformerLens's direct path patching): the MLPs are frozen too, so a receiver's
//    input differs from the plain run's by exactly the sender's own write to the stream.
struct PathPatchRequest {
    std::vector<std::int32_t> clean, corrupt;
    bool noising = false;
    PatchMetric metric;
    int senderLayer = 0, senderHead = 0;
    PatchComponent input = PatchComponent::Queries; // Queries, Keys or Values
    // (layer, unit): unit a query head for queries; for keys and values a key/value group whose every query head
    // sees the recomputed input, or a query head alone with receiverHeadOnly.
    std::vector<std::pair<int, int>> receivers;
    bool receiverHeadOnly = false;
    bool freezeMlps = false;
};

struct PathPatchResult {
    double clean = 0, corrupt = 0, patched = 0;
    double score = 0; // (patched - corrupt) / (clean - corrupt)
};

PathPatchResult pathPatch(const AttentionModel& model, const PathPatchRequest& request, const StopToken* stop = nullptr);

// Path patching from many senders into the same receivers (request.senderLayer/Head unused): a [layer, head] map of
// scores, NaN where a head is no sender. `senders` empty: every head of every layer before the first receiver's.
// Each cell is the score pathPatch gives that sender; the two plain runs are made once.
PatchResult pathPatchSenders(const AttentionModel& model, const PathPatchRequest& request,
                             std::vector<std::pair<int, int>> senders, const PatchProgress& progress = {},
                             const StopToken* stop = nullptr);

// The metric of one run's stream after its last layer ([rows, dModel]); `clean` gives the Loss its tokens.
double measurePatchMetric(const AttentionModel& model, const PatchMetric& metric, const std::vector<float>& finalResidual,
                          int rows, std::span<const std::int32_t> clean);

} // namespace attnscope::core
