// textRouting, expertLoad and its JSON.
#include "analysis/expert_routing.h"

#include "tokenize/tokenizer.h"
#include "util/error.h"
#include "util/stop_token.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace attnscope::core {

bool TextRouting::chose(int layer, int token, int expert) const
{
    const auto& l = ids[static_cast<std::size_t>(layer)];
    if (l.empty()) // a dense layer routes nothing
        return false;
    for (int k = 0; k < used; ++k)
        if (l[static_cast<std::size_t>(token) * used + k] == expert)
            return true;
    return false;
}

namespace {
// Copies each layer's routing of the segments it sees; the last segment's stays.
class RoutingObserver final : public AttentionObserver {
public:
    bool wantProbabilities() const override { return false; }
    void onLayer(const LayerView& l) override
    {
        if (!l.routerProbs)
            return;
        if (static_cast<int>(r.probs.size()) <= l.layer) {
            r.probs.resize(static_cast<std::size_t>(l.layer) + 1);
            r.ids.resize(r.probs.size());
            r.weights.resize(r.probs.size());
        }
        const auto L = static_cast<std::size_t>(l.layer);
        r.experts = l.experts;
        r.used = l.expertsUsed;
        r.tokens = l.qlen;
        r.probs[L].assign(l.routerProbs, l.routerProbs + static_cast<std::size_t>(l.qlen) * l.experts);
        r.ids[L].assign(l.expertIds, l.expertIds + static_cast<std::size_t>(l.qlen) * l.expertsUsed);
        r.weights[L].assign(l.expertWeights, l.expertWeights + static_cast<std::size_t>(l.qlen) * l.expertsUsed);
        layerDone(l.layer);
    }
    std::function<void(int)> layerDone = [](int) {};
    TextRouting r;
};

void requireExperts(const AttentionModel& model)
{
    if (!model.info().can.experts)
        throw Error(ErrorCode::BadInput, std::string(familyName(model.info().family)) +
                                             " has no mixture-of-experts layers: no router to show");
}
} // namespace

TextRouting textRouting(const AttentionModel& model, const TextCapture& capture, int segment, const StopToken* stop)
{
    requireExperts(model);
    RoutingObserver obs;
    rerunSegment(model, capture, segment, obs, stop);
    obs.r.layers = static_cast<int>(obs.r.probs.size());
    obs.r.firstPosition = static_cast<int>(capture.segment(segment).firstPosition);
    return obs.r;
}

ExpertLoad expertLoad(const AttentionModel& model, std::span<const std::int32_t> ids, int chunk, int topTokens,
                      const StopToken* stop)
{
    requireExperts(model);
    if (chunk < 1)
        throw Error(ErrorCode::BadInput, "the chunk length must be at least 1");
    ExpertLoad load;
    std::vector<std::vector<std::map<std::int32_t, std::int64_t>>> counts; // [layer][expert] token -> count
    RoutingObserver obs;
    std::span<const std::int32_t> current;
    obs.layerDone = [&](int layer) {
        const auto& r = obs.r;
        if (load.experts == 0) {
            load.experts = r.experts;
            load.used = r.used;
        }
        if (static_cast<int>(counts.size()) <= layer) {
            counts.resize(static_cast<std::size_t>(layer) + 1,
                          std::vector<std::map<std::int32_t, std::int64_t>>(static_cast<std::size_t>(r.experts)));
            load.share.resize(counts.size() * static_cast<std::size_t>(r.experts), 0.0);
            load.weight.resize(load.share.size(), 0.0);
        }
        const auto L = static_cast<std::size_t>(layer);
        for (int t = 0; t < r.tokens; ++t)
            for (int k = 0; k < r.used; ++k) {
                const int e = r.ids[L][static_cast<std::size_t>(t) * r.used + k];
                load.share[L * r.experts + static_cast<std::size_t>(e)] += 1;
                load.weight[L * r.experts + static_cast<std::size_t>(e)] += r.weights[L][static_cast<std::size_t>(t) * r.used + k];
                ++counts[L][static_cast<std::size_t>(e)][current[static_cast<std::size_t>(t)]];
            }
    };
    RunOptions options;
    options.stop = stop;
    for (std::size_t at = 0; at < ids.size(); at += static_cast<std::size_t>(chunk)) {
        if (stop && stop->stopRequested())
            throw Error(ErrorCode::Cancelled, "cancelled");
        current = ids.subspan(at, std::min<std::size_t>(static_cast<std::size_t>(chunk), ids.size() - at));
        auto state = model.newState(options);
        model.forwardSegment(*state, current, obs);
        load.tokens += static_cast<std::int64_t>(current.size());
    }
    load.layers = static_cast<int>(counts.size());
    for (std::size_t i = 0; i < load.share.size(); ++i) {
        if (load.share[i] > 0)
            load.weight[i] /= load.share[i];
        load.share[i] /= static_cast<double>(std::max<std::int64_t>(1, load.tokens));
    }
    for (const auto& layer : counts)
        for (const auto& expert : layer) {
            std::vector<std::pair<std::int32_t, std::int64_t>> v(expert.begin(), expert.end());
            std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
            if (static_cast<int>(v.size()) > topTokens)
                v.resize(static_cast<std::size_t>(topTokens));
            load.top.push_back(std::move(v));
        }
    return load;
}

std::string expertLoadJson(const ExpertLoad& load, const Tokenizer& tokenizer)
{
    nlohmann::ordered_json j;
    j["layers"] = load.layers;
    j["experts"] = load.experts;
    j["used"] = load.used;
    j["tokens"] = load.tokens;
    auto perLayer = [&](const std::vector<double>& v) {
        nlohmann::json out = nlohmann::json::array();
        for (int l = 0; l < load.layers; ++l)
            out.push_back(std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(l) * load.experts,
                                              v.begin() + static_cast<std::ptrdiff_t>(l + 1) * load.experts));
        return out;
    };
    j["load"] = perLayer(load.share);
    j["weight"] = perLayer(load.weight);
    nlohmann::json top = nlohmann::json::array();
    for (int l = 0; l < load.layers; ++l) {
        nlohmann::json layer = nlohmann::json::array();
        for (int e = 0; e < load.experts; ++e) {
            nlohmann::json tokens = nlohmann::json::array();
            for (const auto& [id, count] : load.top[static_cast<std::size_t>(l) * load.experts + e])
                tokens.push_back({{"token", tokenizer.pieceOf(id)}, {"id", id}, {"count", count}});
            layer.push_back(tokens);
        }
        top.push_back(layer);
    }
    j["top_tokens"] = top;
    return j.dump(1);
}

} // namespace attnscope::core
