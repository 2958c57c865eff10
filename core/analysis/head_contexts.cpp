// Heads over a corpus (head_contexts.h).
#include "analysis/head_contexts.h"

#include "analysis/head_ablation.h"
#include "io/safetensors.h"

#include "model/attention_model.h"
#include "model/run_limits.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/message_text.h"
#include "util/stop_token.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <tuple>

namespace attnscope::core {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Every statistic of one query row of one head; NaN where it is not defined.
struct RowStats {
    double maxAway = kNaN, previous = kNaN, induction = kNaN, entropy = kNaN, distance = kNaN, first = kNaN, norm = kNaN,
           sink = kNaN;
};

RowStats rowStats(const float* p, int i, int k, const std::int32_t* ids, const float* output, int dv)
{
    RowStats s;
    double entropy = 0, distance = 0, away = -1, induction = 0;
    bool inductive = false;
    for (int j = 0; j < k; ++j) {
        const double w = p[j];
        if (w > 0)
            entropy -= w * std::log(w);
        distance += w * std::abs(i - j);
        if (j > 0)
            away = std::max(away, w);
        // Key j follows an earlier occurrence (j - 1 < i) of the query's token.
        if (j >= 1 && j <= i && ids[j - 1] == ids[i] && j - 1 < i) {
            induction += w;
            inductive = true;
        }
    }
    s.entropy = entropy;
    s.distance = distance;
    s.first = p[0];
    if (i >= 1) // the head atlas's sink rate: more than 0.3 on the first key
        s.sink = p[0] > 0.3f ? 1.0 : 0.0;
    if (k > 1 && away >= 0)
        s.maxAway = away;
    if (i >= 1)
        s.previous = p[i - 1];
    if (inductive)
        s.induction = induction;
    if (output) {
        double n = 0;
        for (int e = 0; e < dv; ++e)
            n += static_cast<double>(output[e]) * output[e];
        s.norm = std::sqrt(n);
    }
    return s;
}

double pick(const RowStats& s, ContextStatistic which)
{
    switch (which) {
    case ContextStatistic::MaxAway: return s.maxAway;
    case ContextStatistic::OutputNorm: return s.norm;
    case ContextStatistic::PreviousToken: return s.previous;
    case ContextStatistic::Induction: return s.induction;
    }
    return kNaN;
}

using Means = HeadMetricSums; // running means of the metrics of one head

// Calls `fn(layerView)` for every layer of one window run alone.
template <class Fn>
void runWindow(const AttentionModel& model, std::span<const std::int32_t> ids, const StopToken* stop, Fn fn)
{
    struct Each final : AttentionObserver {
        Fn& fn;
        explicit Each(Fn& f)
            : fn(f)
        {
        }
        void onLayer(const LayerView& v) override
        {
            if (v.attnProb) // attention sites only: a convolution's or a scan's map is not a distribution
                fn(v);
        }
    } each(fn);
    RunOptions options;
    options.memLen = 0;
    options.stop = stop;
    auto state = model.newState(options);
    model.forwardSegment(*state, ids, each);
}

} // namespace

void HeadMetricSums::add(int slot, double v)
{
    if (std::isfinite(v)) {
        sum[slot] += v;
        count[slot] += 1;
    }
}

double HeadMetricSums::mean(int slot) const { return count[slot] > 0 ? sum[slot] / count[slot] : kNaN; }

ContextStatistic contextStatisticNamed(const std::string& name)
{
    for (auto s : {ContextStatistic::MaxAway, ContextStatistic::OutputNorm, ContextStatistic::PreviousToken,
                   ContextStatistic::Induction})
        if (name == contextStatisticName(s))
            return s;
    throw Error(ErrorCode::BadInput, "unknown statistic '" + name + "' (max-away, output-norm, prev-token or induction)");
}

const char* contextStatisticName(ContextStatistic s)
{
    switch (s) {
    case ContextStatistic::MaxAway: return "max-away";
    case ContextStatistic::OutputNorm: return "output-norm";
    case ContextStatistic::PreviousToken: return "prev-token";
    case ContextStatistic::Induction: return "induction";
    }
    return "";
}

const std::vector<HeadMetricColumn>& headMetricColumns()
{
    using M = HeadCorpusMetrics;
    static const std::vector<HeadMetricColumn> columns = {
        {"statistic", "statistic (mean)", &M::statistic},
        {"entropy", "entropy (nats)", &M::entropy},
        {"mean_distance", "mean distance (tokens)", &M::meanDistance},
        {"previous_token", "previous-token weight", &M::previousToken},
        {"induction", "induction weight", &M::induction},
        {"first_token", "first-token weight (sink)", &M::firstToken},
        {"output_norm", "output norm", &M::outputNorm},
        {"sink_rate", "sink rate (> 0.3 on the first token)", &M::sinkRate},
        {"ablation_effect", "ablation effect (loss change, nats)", &M::ablationEffect},
    };
    return columns;
}

namespace {
// The text's ids as head contexts read them, every option checked; throws naming the problem.
std::vector<std::int32_t> contextIds(const AttentionModel& model, const std::vector<Token>& tokens, const HeadContextOptions& o)
{
    const ModelInfo& info = model.info();
    if (o.ablationTokens < 0)
        throw Error(ErrorCode::BadInput, "the ablation effect's token count must be 0 (not measured) or more");
    if (o.ablationTokens > 0 && !info.can.nextTokenLoss)
        throw Error(ErrorCode::BadInput, "the ablation effect measures the next-token loss, and " + info.source +
                                             " is read here without a language-model head: set the ablation tokens to 0");
    if (!info.readsOneText())
        throw Error(ErrorCode::BadInput, "head contexts read one text stream; " + info.source + " does not run one");
    if (o.window < 2 || o.window > info.maxSegmentLen)
        throw Error(ErrorCode::BadInput, "the window must be from 2 to " + std::to_string(info.maxSegmentLen) + " tokens");
    if (o.top < 0 || o.perDecile < 0 || o.contextBefore < 0 || o.contextAfter < 0)
        throw Error(ErrorCode::BadInput, "context counts and widths must be 0 or more");
    std::vector<std::int32_t> ids = idsOf(tokens);
    if (o.maxTokens > 0 && static_cast<std::int64_t>(ids.size()) > o.maxTokens)
        ids.resize(static_cast<std::size_t>(o.maxTokens));
    const auto N = static_cast<std::int64_t>(ids.size());
    if (N < 2)
        throw Error(ErrorCode::BadInput, "the text is too short for head contexts (two tokens at least)");
    return ids;
}

std::uint64_t fingerprint(std::span<const std::int32_t> ids)
{
    std::uint64_t h = 1469598103934665603ull; // FNV-1a over the ids' bytes
    for (const std::int32_t id : ids)
        for (int b = 0; b < 4; ++b) {
            h ^= static_cast<std::uint8_t>(static_cast<std::uint32_t>(id) >> (8 * b));
            h *= 1099511628211ull;
        }
    return h;
}

// Pass 2 and the ablation, from every position's statistic and the metrics' sums over the whole text.
HeadContexts finish(const AttentionModel& model, const std::vector<Token>& tokens, const std::vector<std::int32_t>& ids,
                    const HeadContextOptions& o, const std::vector<std::vector<float>>& values,
                    const std::vector<Means>& means, const StopToken* stop, const std::function<void(int, int)>& progress)
{
    const ModelInfo& info = model.info();
    const auto N = static_cast<std::int64_t>(ids.size());
    const int L = info.layers, H = info.heads, W = o.window;
    const int windows = static_cast<int>((N + W - 1) / W);
    const std::int64_t ablationTokens = std::min(o.ablationTokens, N);
    // Progress counts windows over both passes, then the ablation's runs (the intact one and one per head).
    const int total = 2 * windows + (ablationTokens > 0 ? L * H + 1 : 0);
    auto windowIds = [&](int w) {
        const std::int64_t a = static_cast<std::int64_t>(w) * W;
        return std::span<const std::int32_t>(ids).subspan(static_cast<std::size_t>(a),
                                                         static_cast<std::size_t>(std::min<std::int64_t>(W, N - a)));
    };
    HeadContexts r;
    r.layers = L;
    r.heads = H;
    r.tokens = N;
    r.statistic = o.statistic;
    r.metrics.resize(means.size());
    for (std::size_t s = 0; s < means.size(); ++s)
        r.metrics[s] = {means[s].mean(0), means[s].mean(1), means[s].mean(2), means[s].mean(3),
                        means[s].mean(4), means[s].mean(5), means[s].mean(6), means[s].mean(7)};

    // The contexts' grids, at most (top + 10 perDecile) per head of (before + 1 + after)^2 floats each: asked of the
    // memory before they are made (--top and the widths are the user's).
    const double shown = std::min<double>(W, static_cast<double>(o.contextBefore) + 1 + o.contextAfter);
    checkFits(static_cast<std::uint64_t>(static_cast<double>(L) * H * (o.top + 10.0 * o.perDecile) * shown * shown * sizeof(float)),
              "the grids of " + std::to_string(static_cast<long long>(o.top) + 10LL * o.perDecile) + " contexts per head",
              "ask for fewer contexts (--top, --per-decile)", model.info().source);

    // The chosen positions of every head: the top ones, then evenly spaced ones inside each tenth of the sorted values.
    r.contexts.resize(values.size());
    std::map<int, std::vector<std::pair<std::size_t, std::size_t>>> wanted; // window -> (head slot, context index)
    for (std::size_t slot = 0; slot < values.size(); ++slot) {
        std::vector<std::int64_t> order;
        for (std::int64_t p = 0; p < N; ++p)
            if (std::isfinite(values[slot][static_cast<std::size_t>(p)]))
                order.push_back(p);
        std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
            return values[slot][static_cast<std::size_t>(a)] < values[slot][static_cast<std::size_t>(b)];
        });
        auto add = [&](std::int64_t position, int decile) {
            HeadContext c;
            c.position = position;
            c.value = values[slot][static_cast<std::size_t>(position)];
            c.decile = decile;
            c.window = static_cast<int>(position / W);
            const int local = static_cast<int>(position % W);
            const int from = std::max(0, local - o.contextBefore);
            c.firstToken = static_cast<int>(static_cast<std::int64_t>(c.window) * W + from);
            const int windowEnd = static_cast<int>(windowIds(c.window).size());
            for (int t = from; t < std::min(windowEnd, local + 1 + o.contextAfter); ++t)
                c.tokens.push_back(tokens[static_cast<std::size_t>(static_cast<std::int64_t>(c.window) * W + t)].text);
            wanted[c.window].push_back({slot, r.contexts[slot].size()});
            r.contexts[slot].push_back(std::move(c));
        };
        const auto n = static_cast<std::int64_t>(order.size());
        for (std::int64_t t = 0; t < std::min<std::int64_t>(o.top, n); ++t)
            add(order[static_cast<std::size_t>(n - 1 - t)], -1);
        for (int d = 0; d < 10 && n > 0; ++d) {
            const std::int64_t lo = n * d / 10, hi = n * (d + 1) / 10;
            for (int s = 0; s < o.perDecile && hi > lo; ++s) {
                const std::int64_t at = lo + (hi - lo) * (2 * s + 1) / (2 * o.perDecile);
                add(order[static_cast<std::size_t>(std::min(at, hi - 1))], d);
            }
        }
    }

    // Pass 2: the chosen queries' attention rows, window by window.
    int done = 0;
    for (int w = 0; w < windows; ++w) {
        const auto it = wanted.find(w);
        if (it != wanted.end())
            runWindow(model, windowIds(w), stop, [&](const LayerView& v) {
                for (const auto& [slot, index] : it->second) {
                    if (static_cast<int>(slot / H) != v.layer)
                        continue;
                    auto& c = r.contexts[slot][index];
                    const int h = static_cast<int>(slot % H);
                    const int local = static_cast<int>(c.position % W), from = static_cast<int>(c.firstToken % W);
                    const float* p = v.attnProb + (static_cast<std::size_t>(h) * v.qlen + local) * v.klen;
                    c.attention.assign(p + from, p + local + 1);
                    const auto n = c.tokens.size();
                    c.grid.assign(n * n, 0.0f);
                    for (std::size_t i = 0; i < n; ++i) {
                        const float* row = v.attnProb + (static_cast<std::size_t>(h) * v.qlen + static_cast<std::size_t>(from) + i) * v.klen;
                        for (std::size_t j = 0; j < n; ++j)
                            c.grid[i * n + j] = row[static_cast<std::size_t>(from) + j];
                    }
                }
            });
        if (progress)
            progress(windows + ++done, total);
    }

    // The ablation effect: the first tokens run in the same windows, intact and with each head zeroed.
    r.ablationTokens = ablationTokens;
    if (ablationTokens > 0) {
        const auto ablation = headAblation(model, std::span<const std::int32_t>(ids).first(static_cast<std::size_t>(ablationTokens)),
                                           W, stop, [&](int d, int) {
                                               if (progress)
                                                   progress(2 * windows + d, total);
                                           });
        if (ablation.partial)
            throw Error(ErrorCode::Cancelled, "head contexts cancelled");
        for (int l = 0; l < L; ++l)
            for (int h = 0; h < H; ++h)
                r.metrics[static_cast<std::size_t>(l) * H + h].ablationEffect = ablation.change(l, h);
    }
    return r;
}
} // namespace


namespace {
constexpr const char* kValuesFormat = "attnscope-head-context-values-1";
} // namespace

void HeadContextValues::save(const std::string& path) const
{
    const std::int64_t positions = values.empty() ? 0 : static_cast<std::int64_t>(values.front().size());
    std::vector<float> all;
    all.reserve(values.size() * static_cast<std::size_t>(positions));
    for (const auto& v : values)
        all.insert(all.end(), v.begin(), v.end());
    std::vector<double> sums, counts;
    for (const auto& m : means) {
        sums.insert(sums.end(), m.sum, m.sum + 8);
        counts.insert(counts.end(), m.count, m.count + 8);
    }
    const Shape slots{layers, heads};
    std::vector<OutputTensor> out;
    out.push_back({"values", {layers, heads, positions}, std::move(all)});
    out.push_back({"metric_sums", {layers, heads, 8}, {}, DType::F64, std::move(sums)});
    out.push_back({"metric_counts", {layers, heads, 8}, {}, DType::F64, std::move(counts)});
    writeSafetensors(path, out,
                     {{"format", kValuesFormat},
                      {"statistic", contextStatisticName(statistic)},
                      {"window", std::to_string(window)},
                      {"tokens", std::to_string(tokens)},
                      {"fingerprint", std::to_string(fingerprint)},
                      {"shard", std::to_string(shard)},
                      {"shards", std::to_string(shards)},
                      {"first_window", std::to_string(firstWindow)},
                      {"end_window", std::to_string(endWindow)}});
}

HeadContextValues HeadContextValues::load(const std::string& path)
{
    SafetensorsFile f(path);
    f.requireFormat(kValuesFormat, "a shard of attnscope head contexts");
    const auto& md = f.metadata();
    auto number = [&](const char* key) -> long long {
        const auto it = md.find(key);
        try {
            std::size_t used = 0;
            if (it != md.end()) {
                const long long v = std::stoll(it->second, &used);
                if (used == it->second.size() && v >= 0)
                    return v;
            }
        } catch (const std::exception&) {
        }
        throw Error(ErrorCode::CorruptFile, "the metadata's " + std::string(key) + " is missing or not a number", path, key);
    };
    HeadContextValues v;
    try {
        v.statistic = contextStatisticNamed(md.count("statistic") ? md.at("statistic") : "");
    } catch (const Error&) {
        throw Error(ErrorCode::CorruptFile, "the metadata names no known statistic", path, "statistic");
    }
    v.window = static_cast<int>(number("window"));
    v.tokens = number("tokens");
    try {
        v.fingerprint = std::stoull(md.at("fingerprint"));
    } catch (const std::exception&) {
        throw Error(ErrorCode::CorruptFile, "the metadata's fingerprint is missing or not a number", path, "fingerprint");
    }
    v.shard = static_cast<int>(number("shard"));
    v.shards = static_cast<int>(number("shards"));
    v.firstWindow = static_cast<int>(number("first_window"));
    v.endWindow = static_cast<int>(number("end_window"));
    const auto* values = f.find("values");
    const auto* sums = f.find("metric_sums");
    const auto* counts = f.find("metric_counts");
    if (!values || values->shape.size() != 3 || !sums || !counts || sums->shape != Shape{values->shape[0], values->shape[1], 8} ||
        counts->shape != sums->shape)
        throw Error(ErrorCode::MissingTensor, "needs values [layers, heads, positions] and metric_sums, metric_counts "
                                              "[layers, heads, 8]", path);
    v.layers = static_cast<int>(values->shape[0]);
    v.heads = static_cast<int>(values->shape[1]);
    const std::int64_t positions = values->shape[2];
    if (positions != std::min<std::int64_t>(v.tokens, static_cast<std::int64_t>(v.endWindow) * v.window) -
                         static_cast<std::int64_t>(v.firstWindow) * v.window)
        throw Error(ErrorCode::CorruptFile, "holds " + std::to_string(positions) + " positions, not those of windows " +
                                                std::to_string(v.firstWindow + 1) + " to " + std::to_string(v.endWindow),
                    path, "values");
    const auto all = readAsFloat(f, *values);
    const auto s = readAsDouble(f, *sums), c = readAsDouble(f, *counts);
    const std::size_t slots = static_cast<std::size_t>(v.layers) * v.heads;
    v.values.resize(slots);
    v.means.resize(slots);
    for (std::size_t slot = 0; slot < slots; ++slot) {
        v.values[slot].assign(all.begin() + static_cast<std::ptrdiff_t>(slot * positions),
                              all.begin() + static_cast<std::ptrdiff_t>((slot + 1) * positions));
        std::copy_n(s.begin() + static_cast<std::ptrdiff_t>(slot * 8), 8, v.means[slot].sum);
        std::copy_n(c.begin() + static_cast<std::ptrdiff_t>(slot * 8), 8, v.means[slot].count);
    }
    return v;
}

namespace {
// Shard `shard` of `shards`' windows [first, end) of `windows`: the shards-th parts in order.
std::pair<int, int> shardWindows(int windows, int shard, int shards)
{
    return {static_cast<int>(static_cast<std::int64_t>(windows) * (shard - 1) / shards),
            static_cast<int>(static_cast<std::int64_t>(windows) * shard / shards)};
}

// The first pass over one shard of `ids` (contextIds' checked ids).
HeadContextValues valuesOf(const AttentionModel& model, const std::vector<std::int32_t>& ids, const HeadContextOptions& o,
                           int shard, int shards, const StopToken* stop, const std::function<void(int, int)>& progress)
{
    if (shards < 1 || shard < 1 || shard > shards)
        throw Error(ErrorCode::BadInput, "shard " + std::to_string(shard) + " of " + std::to_string(shards) +
                                             " does not exist (shards are 1 to N)");
    const ModelInfo& info = model.info();
    const auto N = static_cast<std::int64_t>(ids.size());
    const int L = info.layers, H = info.heads, W = o.window;
    const int windows = static_cast<int>((N + W - 1) / W);
    HeadContextValues v;
    v.layers = L;
    v.heads = H;
    v.tokens = N;
    v.window = W;
    v.statistic = o.statistic;
    v.fingerprint = fingerprint(ids);
    v.shard = shard;
    v.shards = shards;
    std::tie(v.firstWindow, v.endWindow) = shardWindows(windows, shard, shards);
    const std::int64_t first = static_cast<std::int64_t>(v.firstWindow) * W;
    const std::int64_t positions = std::min(N, static_cast<std::int64_t>(v.endWindow) * W) - first;
    // Every head's statistic at every token, as floats (a 32 x 32-head model over 20,000 tokens: 82 MB; without a
    // token limit a corpus asks for as much as it is long).
    checkFits(static_cast<std::uint64_t>(static_cast<double>(L) * H * positions * sizeof(float)),
              "head contexts of " + std::to_string(L) + " x " + std::to_string(H) + " heads over " +
                  std::to_string(positions) + " tokens",
              "read fewer tokens (--max-tokens), or split the text into more shards", model.info().source);
    v.values.assign(static_cast<std::size_t>(L) * H, std::vector<float>(static_cast<std::size_t>(positions), std::nanf("")));
    v.means.resize(static_cast<std::size_t>(L) * H);
    auto windowIds = [&](int w) {
        const std::int64_t a = static_cast<std::int64_t>(w) * W;
        return std::span<const std::int32_t>(ids).subspan(static_cast<std::size_t>(a),
                                                         static_cast<std::size_t>(std::min<std::int64_t>(W, N - a)));
    };
    for (int w = v.firstWindow; w < v.endWindow; ++w) {
        const auto wids = windowIds(w);
        const std::int64_t base = static_cast<std::int64_t>(w) * W - first; // in this shard's positions
        runWindow(model, wids, stop, [&](const LayerView& lv) {
            const int q = lv.qlen, k = lv.klen, dv = lv.inputs.vDim();
            for (int h = 0; h < lv.heads; ++h) {
                const std::size_t slot = static_cast<std::size_t>(lv.layer) * H + h;
                for (int i = 0; i < q; ++i) {
                    const float* p = lv.attnProb + (static_cast<std::size_t>(h) * q + i) * k;
                    const float* out = lv.headMix ? lv.headMix + static_cast<std::size_t>(i) * lv.heads * dv + static_cast<std::size_t>(h) * dv : nullptr;
                    const RowStats s = rowStats(p, i, k, wids.data(), out, dv);
                    v.values[slot][static_cast<std::size_t>(base + i)] = static_cast<float>(pick(s, o.statistic));
                    auto& m = v.means[slot];
                    m.add(0, pick(s, o.statistic));
                    m.add(1, s.entropy);
                    m.add(2, s.distance);
                    m.add(3, s.previous);
                    m.add(4, s.induction);
                    m.add(5, s.first);
                    m.add(6, s.norm);
                    m.add(7, s.sink);
                }
            }
        });
        if (progress)
            progress(w - v.firstWindow + 1, v.endWindow - v.firstWindow);
    }
    return v;
}
} // namespace

HeadContextValues headContextValues(const AttentionModel& model, const std::vector<Token>& tokens,
                                    const HeadContextOptions& o, int shard, int shards, const StopToken* stop,
                                    const std::function<void(int, int)>& progress)
{
    return valuesOf(model, contextIds(model, tokens, o), o, shard, shards, stop, progress);
}

HeadContexts mergeHeadContexts(const AttentionModel& model, const std::vector<Token>& tokens, const HeadContextOptions& o,
                               std::vector<HeadContextValues> shards, const StopToken* stop,
                               const std::function<void(int, int)>& progress)
{
    const std::vector<std::int32_t> ids = contextIds(model, tokens, o);
    const ModelInfo& info = model.info();
    const auto N = static_cast<std::int64_t>(ids.size());
    const int windows = static_cast<int>((N + o.window - 1) / o.window);
    const std::uint64_t print = fingerprint(ids);
    if (shards.empty())
        throw Error(ErrorCode::BadInput, "no shards to merge");
    const int n = shards.front().shards;
    // The count is the file's own word: nothing is sized by it before it matches the files given.
    if (n < 1 || static_cast<std::size_t>(n) != shards.size()) {
        std::vector<long long> first;
        for (int k = 1; k <= n && first.size() < 5; ++k)
            if (std::none_of(shards.begin(), shards.end(), [&](const HeadContextValues& v) { return v.shard == k; }))
                first.push_back(k);
        const std::string given = std::to_string(shards.size()) + " shard file(s) given";
        throw Error(ErrorCode::BadInput,
                    first.empty() ? "shard " + std::to_string(shards.front().shard) + " says there are " + std::to_string(n) +
                                        " shards (" + given + ")"
                                  : "shards " + someOf(first, n - static_cast<long long>(shards.size())) + " of " +
                                        std::to_string(n) + " are missing (" + given + ")");
    }
    std::vector<HeadContextValues*> byNumber(static_cast<std::size_t>(n), nullptr);
    for (auto& v : shards) {
        const std::string which = "shard " + std::to_string(v.shard) + " of " + std::to_string(v.shards);
        if (v.layers != info.layers || v.heads != info.heads)
            throw Error(ErrorCode::BadInput, which + " is of a model with " + std::to_string(v.layers) + " x " +
                                                 std::to_string(v.heads) + " heads, not this one");
        if (v.shards != n || v.shard < 1 || v.shard > n)
            throw Error(ErrorCode::BadInput, which + " is not one of " + std::to_string(n) + " shards");
        if (v.tokens != N || v.fingerprint != print || v.window != o.window || v.statistic != o.statistic)
            throw Error(ErrorCode::BadInput, which + " was made of another text, window or statistic than this merge's");
        // Its windows and positions are those its number gives: together the shards hold the text's N positions.
        const auto [first, end] = shardWindows(windows, v.shard, n);
        const std::int64_t positions = std::min(N, static_cast<std::int64_t>(end) * o.window) -
                                       static_cast<std::int64_t>(first) * o.window;
        if (v.firstWindow != first || v.endWindow != end || v.values.size() != static_cast<std::size_t>(v.layers) * v.heads ||
            v.means.size() != v.values.size() ||
            std::any_of(v.values.begin(), v.values.end(), [&](const auto& x) { return static_cast<std::int64_t>(x.size()) != positions; }))
            throw Error(ErrorCode::BadInput, which + " does not hold windows " + std::to_string(first + 1) + " to " +
                                                 std::to_string(end) + " of " + std::to_string(windows));
        if (byNumber[static_cast<std::size_t>(v.shard - 1)])
            throw Error(ErrorCode::BadInput, which + " is given twice");
        byNumber[static_cast<std::size_t>(v.shard - 1)] = &v;
    }
    // The shards' positions in order are the whole text's: the same values a single run has, the metrics' sums added.
    // Each shard's values are let go once appended, so the merge holds the text's values about once.
    checkFits(static_cast<std::uint64_t>(static_cast<double>(info.layers) * info.heads * N * sizeof(float)),
              "merging head contexts of " + std::to_string(info.layers) + " x " + std::to_string(info.heads) +
                  " heads over " + std::to_string(N) + " tokens",
              "read fewer tokens (--max-tokens)", model.info().source);
    const std::size_t slots = static_cast<std::size_t>(info.layers) * info.heads;
    std::vector<std::vector<float>> values(slots);
    std::vector<Means> means(slots);
    for (std::size_t slot = 0; slot < slots; ++slot)
        values[slot].reserve(static_cast<std::size_t>(N));
    for (HeadContextValues* v : byNumber)
        for (std::size_t slot = 0; slot < slots; ++slot) {
            values[slot].insert(values[slot].end(), v->values[slot].begin(), v->values[slot].end());
            std::vector<float>().swap(v->values[slot]);
            for (int m = 0; m < 8; ++m) {
                means[slot].sum[m] += v->means[slot].sum[m];
                means[slot].count[m] += v->means[slot].count[m];
            }
        }
    return finish(model, tokens, ids, o, values, means, stop, progress);
}

HeadContexts headContexts(const AttentionModel& model, const std::vector<Token>& tokens, const HeadContextOptions& o,
                          const StopToken* stop, const std::function<void(int, int)>& progress)
{
    const std::vector<std::int32_t> ids = contextIds(model, tokens, o);
    const auto N = static_cast<std::int64_t>(ids.size());
    const int windows = static_cast<int>((N + o.window - 1) / o.window);
    const int total = 2 * windows + (std::min(o.ablationTokens, N) > 0 ? model.info().layers * model.info().heads + 1 : 0);
    const auto v = valuesOf(model, ids, o, 1, 1, stop, [&](int done, int) {
        if (progress)
            progress(done, total);
    });
    return finish(model, tokens, ids, o, v.values, v.means, stop, progress);
}

namespace {
// An earlier run's folder (its index.json names the head files) may be replaced by a new one; any other is the user's.
bool isHeadContextsFolder(const std::string& folder)
{
    try {
        const auto j = readJsonFile((std::filesystem::path(folder) / "index.json").string());
        return j.is_object() && j.contains("head_files") && j.contains("scatter");
    } catch (const Error&) {
        return false;
    }
}
} // namespace

std::vector<std::string> writeHeadContexts(const HeadContexts& r, const std::string& modelName, const std::string& dir)
{
    namespace fs = std::filesystem;
    // Written into a new folder that replaces DIR whole: a run killed mid-way or on a full disk leaves the earlier
    // folder as it was, never a mix of its files and new ones.
    AtomicFolder folder(dir, isHeadContextsFolder);
    const fs::path staging(folder.staging());
    std::error_code ec;
    fs::create_directories(staging / "heads", ec);
    if (ec)
        throw Error(ErrorCode::Io, "cannot create the folder: " + ec.message(), dir);
    auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    std::vector<std::string> written;
    auto write = [&](const fs::path& relative, const nlohmann::ordered_json& j) {
        writeFileAtomically((staging / relative).string(), j.dump() + "\n");
        written.push_back((fs::path(dir) / relative).string());
    };
    const auto& columns = headMetricColumns();
    nlohmann::ordered_json index;
    index["model"] = modelName;
    index["statistic"] = contextStatisticName(r.statistic);
    index["tokens"] = r.tokens;
    index["ablation_tokens"] = r.ablationTokens;
    index["layers"] = r.layers;
    index["heads"] = r.heads;
    index["metrics"] = nlohmann::ordered_json::array();
    for (const auto& c : columns)
        index["metrics"].push_back(c.key);
    index["scatter"] = "scatter.json";
    index["head_files"] = "heads/L{layer}-H{head}.json";
    write("index.json", index);
    nlohmann::ordered_json scatter = nlohmann::ordered_json::array();
    for (int l = 0; l < r.layers; ++l)
        for (int h = 0; h < r.heads; ++h) {
            const auto& m = r.metrics[static_cast<std::size_t>(l) * r.heads + h];
            nlohmann::ordered_json e;
            e["layer"] = l + 1;
            e["head"] = h + 1;
            for (const auto& c : columns)
                e[c.key] = number(m.*c.value);
            scatter.push_back(e);
        }
    write("scatter.json", scatter);
    for (int l = 0; l < r.layers; ++l)
        for (int h = 0; h < r.heads; ++h) {
            nlohmann::ordered_json head;
            head["layer"] = l + 1;
            head["head"] = h + 1;
            head["statistic"] = contextStatisticName(r.statistic);
            auto& list = head["contexts"] = nlohmann::ordered_json::array();
            for (const auto& c : r.contexts[static_cast<std::size_t>(l) * r.heads + h]) {
                nlohmann::ordered_json e;
                e["value"] = number(c.value);
                e["decile"] = c.decile < 0 ? nlohmann::json("top") : nlohmann::json(c.decile + 1);
                e["position"] = c.position + 1;
                e["first_token"] = c.firstToken + 1;
                e["query_index"] = c.position - c.firstToken; // in "tokens", from 0
                e["tokens"] = c.tokens;
                e["attention"] = c.attention;
                nlohmann::ordered_json grid = nlohmann::ordered_json::array();
                const auto n = c.tokens.size();
                for (std::size_t i = 0; i < n; ++i)
                    grid.push_back(std::vector<float>(c.grid.begin() + static_cast<std::ptrdiff_t>(i * n),
                                                      c.grid.begin() + static_cast<std::ptrdiff_t>((i + 1) * n)));
                e["grid"] = std::move(grid);
                list.push_back(e);
            }
            write(fs::path("heads") / ("L" + std::to_string(l + 1) + "-H" + std::to_string(h + 1) + ".json"), head);
        }
    folder.commit();
    return written;
}

} // namespace attnscope::core
