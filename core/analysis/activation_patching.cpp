// Activation and path patching (activation_patching.h), made of PatchedRun passes.
#include "analysis/activation_patching.h"

#include "analysis/patched_run.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <thread>
#include <cmath>
#include <limits>
#include <set>

namespace attnscope::core {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

Activation activationOf(PatchComponent c)
{
    switch (c) {
    case PatchComponent::Queries: return Activation::Queries;
    case PatchComponent::Keys: return Activation::Keys;
    case PatchComponent::Values: return Activation::Values;
    case PatchComponent::Residual: return Activation::Residual;
    case PatchComponent::HeadOutput:
    case PatchComponent::Pattern: break;
    }
    return Activation::HeadOutputs;
}

bool perKeyValueGroup(PatchComponent c) { return c == PatchComponent::Keys || c == PatchComponent::Values; }

std::string tokenCount(std::size_t n) { return std::to_string(n) + (n == 1 ? " token" : " tokens"); }

// Both prompts usable by this model: the same length, ids in range, answers in the vocabulary.
void checkPrompts(const AttentionModel& model, std::span<const std::int32_t> clean, std::span<const std::int32_t> corrupt,
                  const PatchMetric& metric)
{
    const ModelInfo& info = model.info();
    if (!info.can.interventions)
        throw Error(ErrorCode::BadInput, "activation patching needs a decoder (GPT-2 or a Llama-family model); " +
                                             info.source + " is not one");
    if (clean.empty() || corrupt.empty())
        throw Error(ErrorCode::BadInput, std::string("the ") + (clean.empty() ? "clean" : "corrupted") + " prompt is empty");
    if (clean.size() != corrupt.size()) {
        std::size_t at = 0;
        while (at < clean.size() && at < corrupt.size() && clean[at] == corrupt[at])
            ++at;
        throw Error(ErrorCode::BadInput, "the clean prompt has " + tokenCount(clean.size()) + " and the corrupted " +
                                             tokenCount(corrupt.size()) + "; patching needs the same length (they first differ at token " +
                                             std::to_string(at + 1) + ")");
    }
    std::vector<std::int32_t> answers;
    if (metric.kind == PatchMetric::Kind::LogitDifference)
        answers = {metric.answer, metric.wrong};
    else if (metric.kind != PatchMetric::Kind::Loss)
        answers = {metric.answer};
    for (const std::int32_t id : answers)
        if (id < 0 || id >= info.vocabSize)
            throw Error(ErrorCode::BadInput, "answer token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                                 std::to_string(info.vocabSize - 1) + ")");
}

// The two plain runs, recording what the patched runs reuse (the receiving prompt's residual stream at every layer)
// and what they substitute (the donor's activation at every layer).
struct PromptRuns {
    RunRecording base, donor;
    std::unique_ptr<RunState> baseEnd; // what a patched run resumes from
    std::span<const std::int32_t> baseIds;
    double clean = 0, corrupt = 0;
};

// The first position (query row) where unit `unit` (-1: all) of two recordings differs, at `position` only when it is
// >= 0; T when nowhere. Recordings are [T, units * width], or patterns [units, T, T] (rowWidth T).
int firstChange(const std::vector<float>& a, const std::vector<float>& b, int unit, int units, int T, int rowWidth,
                int position)
{
    const bool patterns = rowWidth > 0;
    const std::size_t width = patterns ? static_cast<std::size_t>(rowWidth) : a.size() / static_cast<std::size_t>(T) / units;
    for (int r = 0; r < T; ++r) {
        if (position >= 0 && r != position)
            continue;
        for (int g = unit < 0 ? 0 : unit; g < (unit < 0 ? units : unit + 1); ++g) {
            const std::size_t at = patterns ? (static_cast<std::size_t>(g) * T + r) * width
                                            : (static_cast<std::size_t>(r) * units + g) * width;
            if (!std::equal(a.begin() + static_cast<std::ptrdiff_t>(at), a.begin() + static_cast<std::ptrdiff_t>(at + width),
                            b.begin() + static_cast<std::ptrdiff_t>(at)))
                return r;
        }
    }
    return T;
}

// A place patched in one run: layer, unit (-1: every unit of the layer) and position (-1: every position).
struct Place {
    int layer = 0, unit = -1, position = -1;
};

// Runs task(0 .. count-1) side by side, one thread each (a patched run multiplies a few rows, which one thread keeps
// busy better than two share). False when stopped (a task threw Cancelled): the other workers stop after their task.
bool runSideBySide(int count, const std::function<void(int)>& task)
{
    const int workers = std::max(1, std::min(omp_get_max_threads(), count));
    std::atomic<int> next{0};
    std::mutex failed;
    std::exception_ptr failure;
    auto work = [&] {
        omp_set_num_threads(1);
        try {
            for (int i; (i = next++) < count;)
                task(i);
        } catch (...) {
            const std::lock_guard lock(failed);
            if (!failure)
                failure = std::current_exception();
            next = count;
        }
    };
    std::vector<std::thread> pool;
    for (int w = 1; w < workers; ++w)
        pool.emplace_back(work);
    {
        const int threads = omp_get_max_threads();
        work();
        omp_set_num_threads(threads); // this thread's setting, as it was
    }
    for (auto& t : pool)
        t.join();
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const Error& e) {
            if (e.code() != ErrorCode::Cancelled)
                throw;
            return false;
        }
    }
    return true;
}

double normalised(double m, double clean, double corrupt) { return (m - corrupt) / (clean - corrupt); }

void checkSeparated(double clean, double corrupt, const PatchMetric& metric)
{
    if (!(std::isfinite(clean) && std::isfinite(corrupt)) || clean == corrupt)
        throw Error(ErrorCode::BadInput, "the " + metric.describe() + " is " + std::to_string(clean) +
                                             " on both prompts (or not finite): there is no difference to attribute");
}

} // namespace

PatchMetric::Kind PatchMetric::kindNamed(const std::string& name)
{
    if (name == "logit-diff")
        return Kind::LogitDifference;
    if (name == "prob")
        return Kind::Probability;
    if (name == "logprob")
        return Kind::LogProbability;
    if (name == "loss")
        return Kind::Loss;
    throw Error(ErrorCode::BadInput, "unknown metric '" + name + "' (logit-diff, prob, logprob or loss)");
}

std::string PatchMetric::describe() const
{
    switch (kind) {
    case Kind::LogitDifference: return "logit difference";
    case Kind::Probability: return "answer's probability";
    case Kind::LogProbability: return "answer's log-probability";
    case Kind::Loss: return "loss";
    }
    return "metric";
}

PatchComponent patchComponentNamed(const std::string& name)
{
    if (name == "head-out")
        return PatchComponent::HeadOutput;
    if (name == "q")
        return PatchComponent::Queries;
    if (name == "k")
        return PatchComponent::Keys;
    if (name == "v")
        return PatchComponent::Values;
    if (name == "pattern")
        return PatchComponent::Pattern;
    if (name == "resid")
        return PatchComponent::Residual;
    throw Error(ErrorCode::BadInput, "unknown component '" + name + "' (head-out, q, k, v, pattern or resid)");
}

const char* patchComponentName(PatchComponent c)
{
    switch (c) {
    case PatchComponent::HeadOutput: return "head-out";
    case PatchComponent::Queries: return "q";
    case PatchComponent::Keys: return "k";
    case PatchComponent::Values: return "v";
    case PatchComponent::Pattern: return "pattern";
    case PatchComponent::Residual: return "resid";
    }
    return "";
}

double measurePatchMetric(const AttentionModel& model, const PatchMetric& metric, const std::vector<float>& finalResidual,
                          int rows, std::span<const std::int32_t> clean)
{
    const int C = model.info().dModel;
    if (metric.kind == PatchMetric::Kind::LogitDifference) {
        // Two logits, not the vocabulary's: each is its unembedding direction (the final norm's scale at this stream)
        // times the stream, plus a constant; a read-out soft cap applies after.
        const float* last = finalResidual.data() + static_cast<std::size_t>(rows - 1) * C;
        auto logit = [&](std::int32_t token, double& out) {
            std::vector<float> direction;
            double constant = 0;
            if (!model.logitDirection(last, token, direction, constant))
                return false;
            double z = constant;
            for (int i = 0; i < C; ++i)
                z += static_cast<double>(direction[static_cast<std::size_t>(i)]) * last[i];
            const double cap = model.info().logitSoftCap;
            out = cap > 0 ? cap * std::tanh(z / cap) : z;
            return true;
        };
        double a = 0, b = 0;
        if (logit(metric.answer, a) && logit(metric.wrong, b))
            return a - b;
    }
    std::vector<float> logits;
    const bool everyRow = metric.kind == PatchMetric::Kind::Loss;
    const float* from = finalResidual.data() + (everyRow ? 0 : static_cast<std::size_t>(rows - 1) * C);
    if (!model.readOut(from, everyRow ? rows : 1, logits))
        throw Error(ErrorCode::BadInput, model.info().source + " has no output layer to measure patching by");
    const int V = static_cast<int>(logits.size() / static_cast<std::size_t>(everyRow ? rows : 1));
    auto logSoftmax = [&](const float* row, std::int32_t id) {
        const float top = *std::max_element(row, row + V);
        double sum = 0;
        for (int i = 0; i < V; ++i)
            sum += std::exp(static_cast<double>(row[i]) - top);
        return static_cast<double>(row[id]) - top - std::log(sum);
    };
    switch (metric.kind) {
    case PatchMetric::Kind::LogitDifference:
        return static_cast<double>(logits[static_cast<std::size_t>(metric.answer)]) - logits[static_cast<std::size_t>(metric.wrong)];
    case PatchMetric::Kind::Probability: return std::exp(logSoftmax(logits.data(), metric.answer));
    case PatchMetric::Kind::LogProbability: return logSoftmax(logits.data(), metric.answer);
    case PatchMetric::Kind::Loss: {
        if (rows < 2)
            throw Error(ErrorCode::BadInput, "the loss needs a prompt of at least two tokens");
        double loss = 0;
        for (int r = 0; r + 1 < rows; ++r)
            loss -= logSoftmax(logits.data() + static_cast<std::size_t>(r) * V, clean[static_cast<std::size_t>(r + 1)]);
        return loss / (rows - 1);
    }
    }
    return kNaN;
}

namespace {

double measure(const AttentionModel& model, const PatchMetric& metric, const RunRecording& run,
               std::span<const std::int32_t> clean)
{
    return measurePatchMetric(model, metric, run.get(Activation::Residual, model.info().layers), run.rows, clean);
}

// Runs both prompts once. The receiving prompt (corrupted when denoising) records its residual stream at every layer;
// the donor records `donorWants` at every layer (both record patterns with `patterns`).
PromptRuns runPrompts(const AttentionModel& model, std::span<const std::int32_t> clean, std::span<const std::int32_t> corrupt,
                      bool noising, const PatchMetric& metric, const std::vector<Activation>& baseWants,
                      const std::vector<Activation>& donorWants, bool patterns, const StopToken* stop)
{
    const int layers = model.info().layers;
    PromptRuns runs;
    runs.baseIds = noising ? clean : corrupt;
    PatchedRun base, donor;
    base.recordEveryLayer(Activation::Residual, layers);
    for (Activation a : baseWants)
        base.recordEveryLayer(a, layers);
    for (Activation a : donorWants)
        donor.recordEveryLayer(a, layers);
    if (patterns) {
        base.recordPatterns();
        donor.recordPatterns();
    }
    base.run(model, runs.baseIds, stop);
    donor.run(model, noising ? corrupt : clean, stop);
    runs.baseEnd = base.takeState();
    runs.base = base.takeRecording();
    runs.donor = donor.takeRecording();
    const double baseMetric = measure(model, metric, runs.base, clean);
    const double donorMetric = measure(model, metric, runs.donor, clean);
    runs.clean = noising ? baseMetric : donorMetric;
    runs.corrupt = noising ? donorMetric : baseMetric;
    checkSeparated(runs.clean, runs.corrupt, metric);
    return runs;
}

} // namespace

PatchResult patchActivations(const AttentionModel& model, const PatchRequest& request, const PatchProgress& progress,
                             const StopToken* stop)
{
    checkPrompts(model, request.clean, request.corrupt, request.metric);
    const ModelInfo& info = model.info();
    const int T = static_cast<int>(request.clean.size());
    const PatchComponent component = request.component;
    const Activation act = activationOf(component);
    const bool residual = component == PatchComponent::Residual;
    const bool pattern = component == PatchComponent::Pattern;

    const std::vector<Activation> wants = pattern ? std::vector<Activation>{} : std::vector<Activation>{act};
    PromptRuns runs = runPrompts(model, request.clean, request.corrupt, request.noising, request.metric, wants, wants,
                                 pattern, stop);

    PatchResult result;
    result.clean = runs.clean;
    result.corrupt = runs.corrupt;
    const bool grouped = perKeyValueGroup(component) && info.kvHeads != info.heads;
    if (residual) {
        result.axes = {"layer", "position"};
        result.shape = {info.layers + 1, T};
    } else {
        result.axes = {"layer", grouped ? "group" : "head"};
        result.shape = {info.layers, perKeyValueGroup(component) ? info.kvHeads : info.heads};
        if (request.perPosition) {
            result.axes.push_back("position");
            result.shape.push_back(T);
        }
    }
    std::size_t cells = 1;
    for (int n : result.shape)
        cells *= static_cast<std::size_t>(n);
    result.scores.assign(cells, kNaN);
    result.metrics.assign(cells, kNaN);

    // Each run starts at its layer from the receiving prompt's recorded stream, and at the first position its patch
    // changes (a unit equal in both runs there is the receiving run's metric, with no run at all).
    const double baseMetric = request.noising ? runs.clean : runs.corrupt;
    const int units = residual ? 1 : result.shape[1];
    const int positions = residual || request.perPosition ? T : 1;
    // One patched run of a place: unit -1 is every unit of the layer (the coarse pass), position -1 every position.
    auto runPlace = [&](const Place& at) -> std::pair<double, bool> {
        const int from = pattern ? firstChange(runs.donor.pattern(at.layer), runs.base.pattern(at.layer), at.unit, info.heads,
                                               T, T, at.position)
                                 : firstChange(runs.donor.get(act, at.layer), runs.base.get(act, at.layer),
                                               residual ? -1 : at.unit, units, T, 0, at.position);
        if (from >= T)
            return {baseMetric, false};
        PatchedRun run;
        run.startAt(at.layer, &runs.base.get(Activation::Residual, at.layer));
        run.resumeFrom(*runs.baseEnd, from, runs.base);
        if (pattern)
            for (int h = 0; h < info.heads; ++h) {
                if (at.unit < 0 || h == at.unit)
                    run.substitutePattern({at.layer, h, at.position, &runs.donor.pattern(at.layer)});
            }
        else
            run.substitute({act, at.layer, residual ? -1 : at.unit, at.position, &runs.donor.get(act, at.layer)});
        run.run(model, runs.baseIds, stop);
        return {measure(model, request.metric, run.recording(), request.clean), true};
    };
    // Places run side by side; `store` files each result (under the lock, with the progress report).
    std::mutex report;
    int done = 0, planned = 0;
    auto runPlaces = [&](const std::vector<Place>& places, const std::function<void(std::size_t, double)>& store) {
        planned += static_cast<int>(places.size());
        return runSideBySide(static_cast<int>(places.size()), [&](int i) {
            const auto [m, ran] = runPlace(places[static_cast<std::size_t>(i)]);
            const std::lock_guard lock(report);
            store(static_cast<std::size_t>(i), m);
            result.runs += ran ? 1 : 0;
            ++done;
            if (progress)
                progress(result, done, planned);
        });
    };
    auto storeCell = [&](const std::vector<Place>& places) {
        return [&result, &places, &runs, units, positions](std::size_t i, double m) {
            const Place& at = places[i];
            const std::size_t cell = (static_cast<std::size_t>(at.layer) * units + std::max(0, at.unit)) * positions +
                                     std::max(0, at.position);
            result.metrics[cell] = m;
            result.scores[cell] = normalised(m, runs.clean, runs.corrupt);
        };
    };
    const auto reaches = [&](double score) { return std::abs(score) >= request.coarseToFine; };

    bool complete = true;
    if (request.coarseToFine <= 0) {
        std::vector<Place> every; // every cell, in layer order (row-major over the result's shape)
        for (int index = 0; index < static_cast<int>(result.scores.size()); ++index) {
            const int p = index % positions, unit = (index / positions) % units, layer = index / positions / units;
            every.push_back({layer, residual ? -1 : unit, residual || request.perPosition ? p : -1});
        }
        complete = runPlaces(every, storeCell(every));
    } else {
        if (residual)
            throw Error(ErrorCode::BadInput, "coarse to fine patches the units of a layer (heads, their queries, keys, values "
                                             "or patterns): the residual stream is one unit per position");
        std::vector<Place> layerPlaces;
        for (int l = 0; l < info.layers; ++l)
            layerPlaces.push_back({l, -1, -1});
        result.layerScores.assign(static_cast<std::size_t>(info.layers), kNaN);
        complete = runPlaces(layerPlaces, [&](std::size_t i, double m) {
            result.layerScores[i] = normalised(m, runs.clean, runs.corrupt);
        });
        std::vector<Place> unitPlaces; // the units of the layers that matter, over all positions
        for (int l = 0; complete && l < info.layers; ++l)
            if (reaches(result.layerScores[static_cast<std::size_t>(l)]))
                for (int u = 0; u < units; ++u)
                    unitPlaces.push_back({l, u, -1});
        if (!request.perPosition) {
            complete = complete && runPlaces(unitPlaces, storeCell(unitPlaces));
        } else {
            result.unitScores.assign(static_cast<std::size_t>(info.layers) * units, kNaN);
            complete = complete && runPlaces(unitPlaces, [&](std::size_t i, double m) {
                const Place& at = unitPlaces[i];
                result.unitScores[static_cast<std::size_t>(at.layer) * units + at.unit] = normalised(m, runs.clean, runs.corrupt);
            });
            std::vector<Place> positionPlaces; // the positions of the units that matter
            for (const Place& at : unitPlaces)
                if (complete && reaches(result.unitScores[static_cast<std::size_t>(at.layer) * units + at.unit]))
                    for (int p = 0; p < T; ++p)
                        positionPlaces.push_back({at.layer, at.unit, p});
            complete = complete && runPlaces(positionPlaces, storeCell(positionPlaces));
        }
        if (complete)
            result.skipped = static_cast<int>(std::count_if(result.scores.begin(), result.scores.end(),
                                                            [](double v) { return std::isnan(v); }));
    }
    result.partial = !complete;
    return result;
}

namespace {

// What every sender's runs into one set of receivers share: the input patched, the receivers' layers, what stays frozen.
struct PathPlan {
    Activation act = Activation::Queries;
    bool headOnly = false;
    int groupSize = 1;
    std::set<int> receiverLayers;
    std::vector<Activation> frozen{Activation::HeadOutputs};
};

PathPlan planPath(const ModelInfo& info, const PathPatchRequest& request)
{
    const PatchComponent input = request.input;
    if (input != PatchComponent::Queries && input != PatchComponent::Keys && input != PatchComponent::Values)
        throw Error(ErrorCode::BadInput, "path patching patches the receivers' queries, keys or values (q, k or v)");
    if (request.receivers.empty())
        throw Error(ErrorCode::BadInput, "path patching needs at least one receiver");
    PathPlan plan;
    plan.act = activationOf(input);
    plan.headOnly = request.receiverHeadOnly && perKeyValueGroup(input) && info.kvHeads != info.heads;
    plan.groupSize = info.heads / std::max(1, info.kvHeads);
    if (request.freezeMlps)
        plan.frozen.push_back(Activation::MlpOutputs);
    const int receiverUnits = perKeyValueGroup(input) && !plan.headOnly ? info.kvHeads : info.heads;
    for (const auto& [layer, unit] : request.receivers) {
        if (layer < 0 || layer >= info.layers)
            throw Error(ErrorCode::BadInput, "no receiver layer " + std::to_string(layer + 1) + " (the model has " +
                                                 std::to_string(info.layers) + " layers)");
        if (unit < 0 || unit >= receiverUnits)
            throw Error(ErrorCode::BadInput, "no receiver " + std::string(receiverUnits == info.heads ? "head " : "key/value group ") +
                                                 std::to_string(unit + 1) + " in layer " + std::to_string(layer + 1) +
                                                 " (there are " + std::to_string(receiverUnits) + ")");
        plan.receiverLayers.insert(layer);
    }
    return plan;
}

void checkSender(const ModelInfo& info, const PathPlan& plan, int layer, int head)
{
    if (layer < 0 || layer >= info.layers || head < 0 || head >= info.heads)
        throw Error(ErrorCode::BadInput, "no sender head " + std::to_string(head + 1) + " in layer " + std::to_string(layer + 1) +
                                             " (the model has " + std::to_string(info.layers) + " layers of " +
                                             std::to_string(info.heads) + " heads)");
    const int firstReceiver = *plan.receiverLayers.begin();
    if (firstReceiver <= layer)
        throw Error(ErrorCode::BadInput, "receiver layer " + std::to_string(firstReceiver + 1) + " must come after the sender's layer " +
                                             std::to_string(layer + 1));
}

// The metric of the receiving run with the receivers' inputs as one sender's path changes them.
double pathMetric(const AttentionModel& model, const PathPatchRequest& request, const PathPlan& plan,
                  const PromptRuns& runs, int senderLayer, int senderHead, const StopToken* stop)
{
    const Activation act = plan.act;
    // 1. The sender's output from the donor, every other head (and with freezeMlps every MLP) frozen at its
    //    receiving-run output; the receivers' inputs as that run computes them.
    const int lastReceiver = *plan.receiverLayers.rbegin();
    PatchedRun senderRun;
    senderRun.startAt(senderLayer, &runs.base.get(Activation::Residual, senderLayer));
    for (int l = senderLayer; l < lastReceiver; ++l)
        for (Activation a : plan.frozen)
            senderRun.substitute({a, l, -1, -1, &runs.base.get(a, l)});
    senderRun.substitute({Activation::HeadOutputs, senderLayer, senderHead, -1, &runs.donor.get(Activation::HeadOutputs, senderLayer)});
    for (int l : plan.receiverLayers)
        senderRun.record(act, l);
    senderRun.run(model, runs.baseIds, stop);
    const RunRecording& inputs = senderRun.recording();

    // 2. The receiving run with only the receivers' inputs replaced.
    const int firstReceiver = *plan.receiverLayers.begin();
    if (!plan.headOnly) {
        PatchedRun patched;
        patched.startAt(firstReceiver, &runs.base.get(Activation::Residual, firstReceiver));
        for (const auto& [layer, unit] : request.receivers)
            patched.substitute({act, layer, unit, -1, &inputs.get(act, layer)});
        patched.run(model, runs.baseIds, stop);
        return measure(model, request.metric, patched.recording(), request.clean);
    }
    // One query head of a group sees the recomputed keys or values, its group's other heads the originals: per
    // receiver layer, one run with the whole group replaced gives the receiver heads' outputs, and a second run takes
    // only those outputs. The stream carries on from that run to the next receiver layer.
    const std::vector<float>* stream = &runs.base.get(Activation::Residual, firstReceiver);
    RunRecording carried;
    for (int layer : plan.receiverLayers) {
        PatchedRun grouped;
        grouped.startAt(layer, stream);
        for (const auto& [l, head] : request.receivers)
            if (l == layer)
                grouped.substitute({act, layer, head / plan.groupSize, -1, &inputs.get(act, layer)});
        grouped.record(Activation::HeadOutputs, layer);
        grouped.run(model, runs.baseIds, stop);
        const RunRecording outputs = grouped.takeRecording();
        PatchedRun single;
        single.startAt(layer, stream);
        for (const auto& [l, head] : request.receivers)
            if (l == layer)
                single.substitute({Activation::HeadOutputs, layer, head, -1, &outputs.get(Activation::HeadOutputs, layer)});
        single.recordEveryLayer(Activation::Residual, model.info().layers);
        single.run(model, runs.baseIds, stop);
        carried = single.takeRecording();
        const auto next = plan.receiverLayers.upper_bound(layer);
        if (next == plan.receiverLayers.end())
            break;
        stream = &carried.get(Activation::Residual, *next);
    }
    return measure(model, request.metric, carried, request.clean);
}

PromptRuns runPathPrompts(const AttentionModel& model, const PathPatchRequest& request, const PathPlan& plan,
                          const StopToken* stop)
{
    return runPrompts(model, request.clean, request.corrupt, request.noising, request.metric, plan.frozen,
                      {Activation::HeadOutputs}, false, stop);
}

} // namespace

PathPatchResult pathPatch(const AttentionModel& model, const PathPatchRequest& request, const StopToken* stop)
{
    checkPrompts(model, request.clean, request.corrupt, request.metric);
    const PathPlan plan = planPath(model.info(), request);
    checkSender(model.info(), plan, request.senderLayer, request.senderHead);
    const PromptRuns runs = runPathPrompts(model, request, plan, stop);
    PathPatchResult result;
    result.clean = runs.clean;
    result.corrupt = runs.corrupt;
    result.patched = pathMetric(model, request, plan, runs, request.senderLayer, request.senderHead, stop);
    result.score = normalised(result.patched, runs.clean, runs.corrupt);
    return result;
}

PatchResult pathPatchSenders(const AttentionModel& model, const PathPatchRequest& request,
                             std::vector<std::pair<int, int>> senders, const PatchProgress& progress, const StopToken* stop)
{
    checkPrompts(model, request.clean, request.corrupt, request.metric);
    const ModelInfo& info = model.info();
    const PathPlan plan = planPath(info, request);
    const int firstReceiver = *plan.receiverLayers.begin();
    if (senders.empty()) {
        if (firstReceiver == 0)
            throw Error(ErrorCode::BadInput, "a receiver in layer 1 has no heads before it to send to it");
        for (int l = 0; l < firstReceiver; ++l)
            for (int h = 0; h < info.heads; ++h)
                senders.emplace_back(l, h);
    }
    for (const auto& [layer, head] : senders)
        checkSender(info, plan, layer, head);
    const PromptRuns runs = runPathPrompts(model, request, plan, stop);
    PatchResult result;
    result.clean = runs.clean;
    result.corrupt = runs.corrupt;
    result.axes = {"layer", "head"};
    result.shape = {info.layers, info.heads};
    result.scores.assign(static_cast<std::size_t>(info.layers) * info.heads, kNaN);
    result.metrics = result.scores;
    std::mutex report;
    int done = 0;
    const int total = static_cast<int>(senders.size());
    result.partial = !runSideBySide(total, [&](int i) {
        const auto [layer, head] = senders[static_cast<std::size_t>(i)];
        const double m = pathMetric(model, request, plan, runs, layer, head, stop);
        const std::lock_guard lock(report);
        const std::size_t cell = static_cast<std::size_t>(layer) * info.heads + head;
        result.metrics[cell] = m;
        result.scores[cell] = normalised(m, runs.clean, runs.corrupt);
        ++result.runs;
        if (progress)
            progress(result, ++done, total);
    });
    return result;
}

} // namespace attnscope::core
