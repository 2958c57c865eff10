// attnscope-cli sentences (cli_sentences.h): the sentences, every head's receiver score and the sentence x sentence
// attention of each head, and for decoders the attention-suppression matrix. Layers, heads and sentences from 1.
#include "cli_sentences.h"

#include "analysis/attention_grid.h"
#include "analysis/grid_regroup.h"
#include "analysis/sentence_analysis.h"
#include "model/model_loader.h"
#include "run/text_capture.h"
#include "util/atomic_file.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

namespace attnscope::cli {

using namespace attnscope::core;

const std::vector<std::string> kSentenceOptions = {"model", "text", "text-file", "proximity", "out"};

int cmdSentences(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto tok = loadModelTokenizer(loaded);
    const auto& model = *loaded.model;
    const std::string& out = require(a, "out");
    CaptureOptions options;
    options.segmentLen = model.info().maxSegmentLen; // one segment: sentences are compared across the whole text
    const auto capture = captureText(model, *tok, textArgument(a), options);
    if (capture->segments.size() != 1)
        throw Error(ErrorCode::BadInput, "the text is longer than the model's " + std::to_string(model.info().maxSegmentLen) +
                                             " positions: sentences are read in one segment");
    const auto receivers = receiverHeads(*capture, 0, parseInt(a, "proximity", kReceiverProximity));
    auto number = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr); };
    nlohmann::ordered_json j;
    const auto sentenceOf = sentenceOfTokens(capture->tokens);
    // Built apart and moved in: a reference into an ordered_json dangles once another key is added.
    nlohmann::ordered_json sentences = nlohmann::ordered_json::array();
    for (std::size_t t = 0; t < capture->tokens.size(); ++t) {
        if (sentences.size() <= static_cast<std::size_t>(sentenceOf[t]))
            sentences.push_back(nlohmann::ordered_json::array());
        sentences.back().push_back(capture->tokens[t].text);
    }
    const std::size_t sentenceCount = sentences.size();
    j["sentences"] = std::move(sentences);
    nlohmann::ordered_json heads = nlohmann::ordered_json::array();
    const auto& info = model.info();
    for (int l = 0; l < info.layers; ++l)
        for (int h = 0; h < info.heads; ++h) {
            const auto g = sentenceLevelGrid(attentionGrid(*capture, 0, l, {h}), capture->tokens, capture->text, 1.0);
            nlohmann::ordered_json e;
            e["layer"] = l + 1;
            e["head"] = h + 1;
            e["receiver_kurtosis"] = number(receivers.kurtosis[static_cast<std::size_t>(l * info.heads + h)]);
            auto& m = e["attention"] = nlohmann::ordered_json::array();
            for (int r = 0; r < g.rows; ++r) {
                nlohmann::ordered_json row = nlohmann::ordered_json::array();
                for (int c = 0; c < g.cols; ++c)
                    row.push_back(number(g.at(r, c)));
                m.push_back(row);
            }
            heads.push_back(e);
        }
    j["heads"] = std::move(heads);
    if (info.can.interventions) {
        const auto s = sentenceSuppression(model, capture->tokens);
        nlohmann::ordered_json m = nlohmann::ordered_json::array(); // [suppressed][later], nats
        for (int i = 0; i < s.sentences; ++i) {
            nlohmann::ordered_json row = nlohmann::ordered_json::array();
            for (int k = 0; k < s.sentences; ++k)
                row.push_back(number(s.effect[static_cast<std::size_t>(i * s.sentences + k)]));
            m.push_back(row);
        }
        j["suppression_kl"] = std::move(m);
    }
    writeFileAtomically(out, j.dump(1) + "\n");
    std::cerr << "wrote " << out << " (" << sentenceCount << " sentences)\n";
    return 0;
}

} // namespace attnscope::cli
