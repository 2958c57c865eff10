// mechanismSteps (mechanism_builder.h).
#include "views/mechanism_builder.h"

#include "views/grid_builder.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace attnscope::app {

namespace {

QString tr(const char* s) { return QObject::tr(s); }

constexpr std::size_t kMostKeys = 24; // rows a step shows at most, readable from the back of a room

} // namespace

widgets::MechanismDataPtr mechanismSteps(const core::HeadExplanation& e, const core::TextCapture& capture,
                                         const QString& modelName, const std::function<QString(std::int32_t)>& pieceOf)
{
    const auto& info = capture.model;
    auto label = [&](std::int64_t position) {
        return QStringLiteral("“%1” (%2)").arg(tokenLabel(capture.tokens[static_cast<std::size_t>(position)])).arg(position + 1);
    };
    const QString token = label(e.position);
    const int L = e.layer + 1, H = e.head + 1;
    auto data = std::make_shared<widgets::MechanismData>();
    data->title = tr("%1 · layer %2 · head %3 · query %4").arg(modelName).arg(L).arg(H).arg(token);
    auto& steps = data->steps;
    std::vector<std::size_t> visible; // the keys the query may see, in order
    for (std::size_t j = 0; j < e.scores.size(); ++j)
        if (!std::isnan(e.scores[j]))
            visible.push_back(j);
    // A long text has more keys than a projector has rows: the steps show the ones the head attends to most (and the
    // query's own token), in the text's order, and say how many that is.
    const std::size_t allVisible = visible.size();
    if (visible.size() > kMostKeys) {
        std::vector<std::size_t> order = visible;
        std::sort(order.begin(), order.end(), [&](auto a, auto b) { return e.probs[a] > e.probs[b]; });
        order.resize(kMostKeys);
        for (auto j : visible)
            if (e.keyPositions[j] == e.position && std::find(order.begin(), order.end(), j) == order.end())
                order.back() = j; // the query's own token in place of the least attended
        std::sort(order.begin(), order.end());
        visible = order;
    }
    const QString chosen = visible.size() < allVisible
                               ? tr(" Shown: the %1 keys it attends to most, of %2.").arg(visible.size()).arg(allVisible)
                               : QString();

    if (!e.residualIn.empty()) {
        widgets::MechanismStep s;
        s.title = tr("1 · The token enters layer %1").arg(L);
        s.explanation = tr("%1 arrives as %2 numbers: the residual stream, everything the embedding and the layers "
                           "before wrote for this token. The layer normalises it, then each head projects it.")
                            .arg(token).arg(e.residualIn.size());
        s.strips.push_back({tr("input of %1").arg(token), e.residualIn, true});
        steps.push_back(std::move(s));
    }
    {
        widgets::MechanismStep s;
        s.title = tr("%1 · Its query").arg(steps.size() + 1);
        s.explanation = tr("Head %1 multiplies the normalised input by its own W_Q: %2 numbers, the question this "
                           "token asks.").arg(H).arg(e.query.size());
        if (!e.queryUnrotated.empty()) {
            s.explanation += tr(" Rotary positions then turn each pair of numbers by an angle that grows with the "
                                "token's position, so a score can tell near from far.");
            s.strips.push_back({tr("q before rotation"), e.queryUnrotated});
            s.strips.push_back({tr("q after rotation"), e.query, true});
        } else {
            s.strips.push_back({tr("q of %1").arg(token), e.query, true});
        }
        steps.push_back(std::move(s));
    }
    if (!e.keys.empty()) {
        widgets::MechanismStep s;
        s.title = tr("%1 · The keys it can see").arg(steps.size() + 1);
        s.explanation = tr("Every token this one may look at offers a key: its input times W_K (rotated like the "
                           "query). Later tokens are masked.") + chosen;
        if (info.kvHeads > 0 && info.kvHeads < info.heads) {
            const int group = info.heads / info.kvHeads;
            s.explanation += tr(" Grouped-query attention: heads %1-%2 share key/value head %3.")
                                 .arg(e.kvHead * group + 1).arg((e.kvHead + 1) * group).arg(e.kvHead + 1);
        }
        for (auto j : visible)
            s.strips.push_back({tr("k of %1").arg(label(e.keyPositions[j])), e.keys[j], e.keyPositions[j] == e.position});
        steps.push_back(std::move(s));

        widgets::MechanismStep m;
        m.title = tr("%1 · Query times key, number by number").arg(steps.size() + 1);
        m.explanation = tr("Multiply the query and each key dimension by dimension: a row's sum is their dot product. "
                           "Red cells push the score up, blue ones down.") + chosen;
        for (auto j : visible) {
            std::vector<float> product(e.query.size());
            for (std::size_t d = 0; d < product.size() && d < e.keys[j].size(); ++d)
                product[d] = e.query[d] * e.keys[j][d];
            m.strips.push_back({tr("q ⊙ k of %1").arg(label(e.keyPositions[j])), std::move(product)});
        }
        steps.push_back(std::move(m));
    }
    {
        widgets::MechanismStep s;
        s.title = tr("%1 · Scores").arg(steps.size() + 1);
        s.explanation = tr("Each score is q · k times %1 (1/√%2, so scores do not grow with the head's size).")
                            .arg(static_cast<double>(e.scale), 0, 'g', 3).arg(e.query.size());
        if (e.softCap > 0)
            s.explanation += tr(" Then soft-capped: %1 · tanh(score / %1).").arg(static_cast<double>(e.softCap));
        if (visible.size() < e.scores.size())
            s.explanation += tr(" Masked keys get no score at all.");
        if (e.sink)
            s.explanation += tr(" This model adds a learned sink logit: a place to put attention that holds no value.");
        if (visible.size() < allVisible)
            s.explanation += chosen;
        const bool fewKeys = e.scores.size() <= kMostKeys; // a short text shows its masked keys too
        for (std::size_t j = 0; j < e.scores.size(); ++j)
            if (fewKeys || std::find(visible.begin(), visible.end(), j) != visible.end())
                s.bars.push_back({label(e.keyPositions[j]), std::isnan(e.scores[j]) ? 0.0 : e.scores[j],
                                  std::isnan(e.scores[j]), e.keyPositions[j] == e.position});
        if (e.sink)
            s.bars.push_back({tr("sink"), *e.sink, false, false});
        s.barsCaption = tr("score of each key (before the softmax)");
        steps.push_back(std::move(s));
    }
    {
        widgets::MechanismStep s;
        s.title = tr("%1 · Softmax: the attention").arg(steps.size() + 1);
        s.explanation = tr("The softmax turns the scores into shares that add up to 1: exactly this token's row in "
                           "the grid.") + chosen;
        const double total = std::accumulate(e.probs.begin(), e.probs.end(), 0.0);
        std::size_t best = visible.empty() ? 0 : visible.front();
        for (auto j : visible)
            if (e.probs[j] > e.probs[best])
                best = j;
        for (auto j : visible)
            s.bars.push_back({label(e.keyPositions[j]), e.probs[j], false, j == best});
        if (e.sink) {
            s.bars.push_back({tr("sink (nothing)"), std::max(0.0, 1.0 - total), false, false});
            s.explanation += tr(" The sink takes %1%: the head attends to nothing that much.").arg(100 * (1 - total), 0, 'f', 1);
        }
        s.probabilities = true;
        s.barsCaption = tr("attention of %1 to each key").arg(token);
        steps.push_back(std::move(s));
    }
    if (!e.output.empty()) {
        widgets::MechanismStep s;
        s.title = tr("%1 · Values, weighted and summed").arg(steps.size() + 1);
        s.explanation = tr("Each key's token also offers a value (its input times W_V). The head's output is the "
                           "values weighted by the attention: mostly what the strongest keys hold.");
        if (!e.values.empty()) {
            std::vector<std::size_t> order = visible;
            std::sort(order.begin(), order.end(), [&](auto a, auto b) { return e.probs[a] > e.probs[b]; });
            order.resize(std::min<std::size_t>(order.size(), 6));
            for (auto j : order) {
                std::vector<float> weighted(e.values[j].size());
                for (std::size_t d = 0; d < weighted.size(); ++d)
                    weighted[d] = e.probs[j] * e.values[j][d];
                s.strips.push_back({tr("%1% × v of %2").arg(100 * e.probs[j], 0, 'f', 0).arg(label(e.keyPositions[j])),
                                    std::move(weighted)});
            }
        }
        s.strips.push_back({tr("head %1's output = Σ p·v").arg(H), e.output, true});
        steps.push_back(std::move(s));
    }
    if (!e.headPart.empty() || !e.attentionOut.empty()) {
        widgets::MechanismStep s;
        s.title = tr("%1 · Back into the stream: W_O").arg(steps.size() + 1);
        s.explanation = tr("MultiHead = Concat(head 1 … head %1) · W_O: every head's output is projected back to %2 "
                           "numbers, and the heads' parts add up to what attention writes into the stream.")
                            .arg(info.heads).arg(info.dModel);
        if (!e.headPart.empty())
            s.strips.push_back({tr("head %1 through W_O").arg(H), e.headPart});
        if (!e.attentionOut.empty())
            s.strips.push_back({tr("all %1 heads (attention)").arg(info.heads), e.attentionOut, true});
        steps.push_back(std::move(s));
    }
    if (!e.residualIn.empty() && !e.layerOut.empty() && e.attentionOut.size() == e.layerOut.size()) {
        widgets::MechanismStep s;
        s.title = tr("%1 · The residual and the MLP").arg(steps.size() + 1);
        s.explanation = tr("The layer adds attention's output to its input; then the MLP (a feed-forward block) adds "
                           "its own. The sum goes on to layer %1.").arg(L + 1);
        std::vector<float> mlp(e.layerOut.size());
        for (std::size_t d = 0; d < mlp.size(); ++d)
            mlp[d] = e.layerOut[d] - e.residualIn[d] - e.attentionOut[d];
        s.strips.push_back({tr("input"), e.residualIn});
        s.strips.push_back({tr("+ attention"), e.attentionOut});
        s.strips.push_back({tr("+ MLP and the rest"), std::move(mlp)});
        s.strips.push_back({tr("= output of layer %1").arg(L), e.layerOut, true});
        steps.push_back(std::move(s));
    }
    if (!e.next.empty()) {
        widgets::MechanismStep s;
        s.title = tr("%1 · The prediction").arg(steps.size() + 1);
        s.explanation = info.can.causal
                            ? tr("After all %1 layers the model reads the stream out: the tokens it expects after %2.")
                                  .arg(info.layers).arg(token)
                            : tr("After all %1 layers the model's head reads the stream at %2: what it thinks stands "
                                 "there.").arg(info.layers).arg(token);
        for (std::size_t i = 0; i < e.next.size(); ++i)
            s.bars.push_back({pieceOf(e.next[i].id), e.next[i].probability, false, i == 0});
        s.probabilities = true;
        s.barsCaption = tr("probability of the next token");
        steps.push_back(std::move(s));
    }
    return data;
}

} // namespace attnscope::app
