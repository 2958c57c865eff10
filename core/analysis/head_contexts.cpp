// Heads over a corpus (head_contexts.h).
#include "analysis/head_contexts.h"

#include "analysis/head_ablation.h"

#include "model/attention_model.h"
#include "model/run_limits.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>

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

// Running means of the metrics of one head.
struct Means {
    double sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    double count[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    void add(int slot, double v)
    {
        if (std::isfinite(v)) {
            sum[slot] += v;
            count[slot] += 1;
        }
    }
    double mean(int slot) const { return count[slot] > 0 ? sum[slot] / count[slot] : kNaN; }
};

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
        void onLayer(const LayerView& v) override { fn(v); }
    } each(fn);
    RunOptions options;
    options.memLen = 0;
    options.stop = stop;
    auto state = model.newState(options);
    model.forwardSegment(*state, ids, each);
}

} // namespace

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

HeadContexts headContexts(const AttentionModel& model, const std::vector<Token>& tokens, const HeadContextOptions& o,
                          const StopToken* stop, const std::function<void(int, int)>& progress)
{
    const ModelInfo& info = model.info();
    if (o.ablationTokens < 0)
        throw Error(ErrorCode::BadInput, "the ablation effect's token count must be 0 (not measured) or more");
    if (o.ablationTokens > 0 && !info.can.nextTokenLoss)
        throw Error(ErrorCode::BadInput, "the ablation effect measures the next-token loss, and " + info.source +
                                             " is read here without a language-model head: set the ablation tokens to 0");
    if (info.can.encoderDecoder || info.can.image)
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

    // Every head's statistic at every token, as floats (a 32 x 32-head model over 20,000 tokens: 82 MB; without a
    // token limit a corpus asks for as much as it is long).
    checkFits(static_cast<std::uint64_t>(static_cast<double>(L) * H * N * sizeof(float)),
              "head contexts of " + std::to_string(L) + " x " + std::to_string(H) + " heads over " + std::to_string(N) +
                  " tokens",
              "read fewer tokens (--max-tokens)");
    HeadContexts r;
    r.layers = L;
    r.heads = H;
    r.tokens = N;
    r.statistic = o.statistic;
    std::vector<std::vector<float>> values(static_cast<std::size_t>(L) * H, std::vector<float>(static_cast<std::size_t>(N), std::nanf("")));
    std::vector<Means> means(static_cast<std::size_t>(L) * H);
    // Pass 1: every position's statistics.
    for (int w = 0; w < windows; ++w) {
        const auto wids = windowIds(w);
        const std::int64_t base = static_cast<std::int64_t>(w) * W;
        runWindow(model, wids, stop, [&](const LayerView& v) {
            const int q = v.qlen, k = v.klen, dv = v.inputs.vDim();
            for (int h = 0; h < v.heads; ++h) {
                const std::size_t slot = static_cast<std::size_t>(v.layer) * H + h;
                for (int i = 0; i < q; ++i) {
                    const float* p = v.attnProb + (static_cast<std::size_t>(h) * q + i) * k;
                    const float* out = v.headMix ? v.headMix + static_cast<std::size_t>(i) * v.heads * dv + static_cast<std::size_t>(h) * dv : nullptr;
                    const RowStats s = rowStats(p, i, k, wids.data(), out, dv);
                    values[slot][static_cast<std::size_t>(base + i)] = static_cast<float>(pick(s, o.statistic));
                    auto& m = means[slot];
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
            progress(w + 1, total);
    }
    r.metrics.resize(means.size());
    for (std::size_t s = 0; s < means.size(); ++s)
        r.metrics[s] = {means[s].mean(0), means[s].mean(1), means[s].mean(2), means[s].mean(3),
                        means[s].mean(4), means[s].mean(5), means[s].mean(6), means[s].mean(7)};

    // The contexts' grids, at most (top + 10 perDecile) per head of (before + 1 + after)^2 floats each: asked of the
    // memory before they are made (--top and the widths are the user's).
    const double shown = std::min<double>(W, static_cast<double>(o.contextBefore) + 1 + o.contextAfter);
    checkFits(static_cast<std::uint64_t>(static_cast<double>(L) * H * (o.top + 10.0 * o.perDecile) * shown * shown * sizeof(float)),
              "the grids of " + std::to_string(static_cast<long long>(o.top) + 10LL * o.perDecile) + " contexts per head",
              "ask for fewer contexts (--top, --per-decile)");

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

std::vector<std::string> writeHeadContexts(const HeadContexts& r, const std::string& modelName, const std::string& dir)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(fs::path(dir) / "heads", ec);
    if (ec)
        throw Error(ErrorCode::Io, "cannot create the folder: " + ec.message(), dir);
    auto number = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
    std::vector<std::string> written;
    auto write = [&](const fs::path& path, const nlohmann::ordered_json& j) {
        writeFileAtomically(path.string(), j.dump() + "\n");
        written.push_back(path.string());
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
    write(fs::path(dir) / "index.json", index);
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
    write(fs::path(dir) / "scatter.json", scatter);
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
            write(fs::path(dir) / "heads" / ("L" + std::to_string(l + 1) + "-H" + std::to_string(h + 1) + ".json"), head);
        }
    return written;
}

} // namespace attnscope::core
