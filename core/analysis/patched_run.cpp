// PatchedRun: the hooks that record and replace activations (patched_run.h).
#include "analysis/patched_run.h"

#include "model/quiet_observer.h"

#include "attention/attention_math.h"
#include "util/error.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace attnscope::core {

namespace {

// Calls fn(live, offset, count) for unit `unit` (-1: all) of row `row` (-1: all) of an activation: `count` floats at
// `live` that sit at `offset` of the same activation stored for every position without gaps ([T, groups * width]).
template <class Fn>
void forEachSlice(const ActivationRows& rows, int unit, int row, Fn fn)
{
    const int r0 = row < 0 ? 0 : row, r1 = row < 0 ? rows.rows : row + 1;
    const int g0 = unit < 0 ? 0 : unit, g1 = unit < 0 ? rows.groups : unit + 1;
    const std::size_t packedStride = static_cast<std::size_t>(rows.groups) * rows.width;
    const std::size_t count = static_cast<std::size_t>(g1 - g0) * rows.width;
    for (int r = r0; r < r1; ++r)
        fn(rows.at(r, g0), static_cast<std::size_t>(r + rows.firstPosition) * packedStride + static_cast<std::size_t>(g0) * rows.width,
           count);
}

void overwrite(const ActivationRows& rows, const std::vector<float>& packed, int unit, int row)
{
    forEachSlice(rows, unit, row, [&](float* live, std::size_t at, std::size_t n) {
        std::memcpy(live, packed.data() + at, n * sizeof(float));
    });
}

void store(const ActivationRows& rows, std::vector<float>& packed)
{
    forEachSlice(rows, -1, -1, [&](float* live, std::size_t at, std::size_t n) {
        std::memcpy(packed.data() + at, live, n * sizeof(float));
    });
}

} // namespace

const std::vector<float>& RunRecording::get(Activation what, int layer) const
{
    auto it = m_acts.find({what, layer});
    if (it == m_acts.end())
        throw Error(ErrorCode::BadInput, "internal: activation " + std::to_string(static_cast<int>(what)) + " of layer " +
                                             std::to_string(layer + 1) + " was not recorded");
    return it->second;
}

const std::vector<float>& RunRecording::pattern(int layer) const
{
    auto it = m_patterns.find(layer);
    if (it == m_patterns.end())
        throw Error(ErrorCode::BadInput, "internal: the pattern of layer " + std::to_string(layer + 1) + " was not recorded");
    return it->second;
}

void PatchedRun::startAt(int layer, const std::vector<float>* residual)
{
    m_first = layer;
    m_startResidual = layer > 0 ? residual : nullptr;
}

void PatchedRun::resumeFrom(const RunState& segmentEnd, int keep, const RunRecording& earlier)
{
    m_resumeFrom = keep > 0 ? &segmentEnd : nullptr;
    m_keep = keep;
    m_earlier = &earlier;
}

void PatchedRun::recordEveryLayer(Activation what, int layers)
{
    for (int l = 0; l < layers; ++l)
        record(what, l);
    if (what == Activation::Residual)
        record(what, layers);
}

void PatchedRun::run(const AttentionModel& model, std::span<const std::int32_t> ids, const StopToken* stop)
{
    m_layers = model.info().layers;
    m_recording = RunRecording{};
    m_recording.rows = static_cast<int>(ids.size());
    record(Activation::Residual, m_layers);
    RunOptions options;
    options.memLen = 0;
    options.stop = stop;
    options.intervene = this;
    int keep = 0;
    m_state.reset();
    if (m_resumeFrom && m_keep < static_cast<int>(ids.size()))
        m_state = model.resumeWithin(*m_resumeFrom, m_keep);
    if (m_state) {
        keep = m_keep;
        m_state->intervene = this;
        m_state->stop = stop;
    } else {
        m_state = model.newState(options);
    }
    QuietObserver quiet;
    model.forwardSegment(*m_state, ids.subspan(static_cast<std::size_t>(keep)), quiet);
    if (keep > 0) // the rows not run are the earlier run's
        for (const auto& [what, layer] : m_record) {
            if (!m_recording.has(what, layer) || !m_earlier->has(what, layer))
                continue;
            auto& mine = m_recording.put(what, layer);
            const auto& theirs = m_earlier->get(what, layer);
            const std::size_t prefix = mine.size() / static_cast<std::size_t>(m_recording.rows) * static_cast<std::size_t>(keep);
            std::copy(theirs.begin(), theirs.begin() + static_cast<std::ptrdiff_t>(prefix), mine.begin());
        }
}

void PatchedRun::onActivation(Activation what, int layer, const ActivationRows& rows)
{
    // Recordings and sources hold every position of the prompt; these rows may start later (a resumed run).
    const auto packedSize = static_cast<std::size_t>(m_recording.rows) * rows.groups * rows.width;
    auto row = [&](int position) { return position < 0 ? -1 : position - rows.firstPosition; };
    if (what == Activation::Residual && layer == m_first && m_startResidual) {
        if (m_startResidual->size() != packedSize)
            throw Error(ErrorCode::BadInput, "internal: a starting residual of the wrong size");
        overwrite(rows, *m_startResidual, -1, -1);
    }
    for (const auto& s : m_subs) {
        if (s.what != what || s.layer != layer)
            continue;
        if (!s.source || s.source->size() != packedSize)
            throw Error(ErrorCode::BadInput, "the patched activation's shape differs between the two runs (layer " +
                                                 std::to_string(layer + 1) + ")");
        if (s.position < 0 || (s.position >= rows.firstPosition && s.position < rows.firstPosition + rows.rows))
            overwrite(rows, *s.source, s.unit, row(s.position));
    }
    for (const auto& [w, l] : m_record)
        if (w == what && l == layer) {
            auto& packed = m_recording.put(what, layer);
            packed.assign(packedSize, 0.0f);
            store(rows, packed);
            break;
        }
}

void PatchedRun::onAttention(int layer, const ScoreInputs& in, const float* values, std::ptrdiff_t valueStride,
                             const ActivationRows& heads)
{
    const int q = in.qlen, k = in.klen, dv = in.vDim();
    const std::size_t perHead = static_cast<std::size_t>(q) * k;
    if (m_recordPatterns) {
        if (q != m_recording.rows)
            throw Error(ErrorCode::BadInput, "internal: patterns are recorded from whole runs only");
        auto& p = m_recording.putPattern(layer);
        p.assign(static_cast<std::size_t>(in.heads) * perHead, 0.0f);
        for (int h = 0; h < in.heads; ++h)
            headAttention(in, h, TermSelection{}, p.data() + h * perHead, k, 0.0f);
    }
    // The donor's probabilities cover every position [heads, T, T]; these query rows start at heads.firstPosition.
    const int T = m_recording.rows;
    const std::size_t full = static_cast<std::size_t>(T) * T;
    for (const auto& s : m_patternSubs) {
        if (s.layer != layer)
            continue;
        if (!s.probabilities || s.probabilities->size() != static_cast<std::size_t>(in.heads) * full || k != T)
            throw Error(ErrorCode::BadInput, "the patched pattern's shape differs between the two runs (layer " +
                                                 std::to_string(layer + 1) + ")");
        const float* P = s.probabilities->data() + s.head * full;
        const float* V = values + static_cast<std::ptrdiff_t>(in.keyHead(s.head)) * dv;
        for (int r = 0; r < q; ++r) {
            const int position = r + heads.firstPosition;
            if (s.position >= 0 && s.position != position)
                continue;
            float* out = heads.at(r, s.head);
            std::fill(out, out + dv, 0.0f);
            for (int j = 0; j < k; ++j) {
                const float w = P[static_cast<std::size_t>(position) * k + j];
                if (w == 0.0f)
                    continue;
                const float* v = V + j * valueStride;
                for (int e = 0; e < dv; ++e)
                    out[e] += w * v[e];
            }
        }
    }
}

} // namespace attnscope::core
