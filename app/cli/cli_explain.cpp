// attnscope-cli explain (cli_explain.h). Layer, head and position from 1 on the command line and in the JSON.
#include "cli_explain.h"

#include "analysis/head_explanation.h"
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <iostream>

namespace attnscope::cli {

using namespace attnscope::core;

const std::vector<std::string> kExplainOptions = {"model", "input", "layer", "head", "position", "out"};

int cmdExplain(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& inputPath = require(a, "input");
    const auto& out = require(a, "out");
    const auto& model = *loaded.model;
    if (!model.info().readsOneText())
        throw Error(ErrorCode::BadInput, "explain reads a text model's input.json (one token stream); this model reads " +
                                             std::string(model.info().streams.size() == 1 ? "pictures" : "a source and a target"));
    const auto run = parseReferenceInput(model, readJsonFile(inputPath), inputPath);
    const int layer = parseInt(a, "layer", -1) - 1, head = parseInt(a, "head", -1) - 1;
    const int position = parseInt(a, "position", -1) - 1;
    if (layer < 0 || head < 0 || position < 0)
        throw Error(ErrorCode::BadInput, "explain needs --layer, --head and --position (each from 1)");
    const auto e = explainHead(model, run.segments, run.options, layer, head, position);
    auto numbers = [](const std::vector<float>& v) {
        nlohmann::json list = nlohmann::json::array();
        for (float x : v)
            list.push_back(std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr));
        return list;
    };
    nlohmann::ordered_json j;
    j["layer"] = e.layer + 1;
    j["head"] = e.head + 1;
    j["kv_head"] = e.kvHead + 1;
    j["position"] = e.position + 1;
    j["segment"] = e.segment + 1;
    nlohmann::json keys = nlohmann::json::array();
    for (auto p : e.keyPositions)
        keys.push_back(p + 1);
    j["key_positions"] = keys;
    j["scale"] = e.scale;
    if (e.softCap > 0)
        j["soft_cap"] = e.softCap;
    j["scores"] = numbers(e.scores);
    if (e.sink)
        j["sink"] = *e.sink;
    j["probs"] = numbers(e.probs);
    j["query"] = numbers(e.query);
    nlohmann::json keyRows = nlohmann::json::array();
    for (const auto& k : e.keys)
        keyRows.push_back(numbers(k));
    j["keys"] = keyRows;
    if (!e.output.empty())
        j["head_output"] = numbers(e.output);
    writeFileAtomically(out, j.dump(1) + "\n");
    std::cerr << "wrote " << out << "\n";
    return 0;
}

} // namespace attnscope::cli
