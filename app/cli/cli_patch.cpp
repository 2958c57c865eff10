// attnscope-cli patch / path-patch (cli_patch.h). Layers, heads, groups and positions are counted from 1 here and in
// the JSON written; the core counts from 0.
#include "cli_patch.h"

#include "analysis/activation_patching.h"
#include "model/model_loader.h"
#include "run/patch_prompts.h"
#include "tokenize/tokenizer.h"
#include "util/atomic_file.h"
#include "util/error.h"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

namespace attnscope::cli {

using namespace attnscope::core;

const std::vector<std::string> kPatchOptions = {"model", "clean", "corrupt", "clean-ids", "corrupt-ids", "answer", "wrong",
                                                "metric", "component", "coarse-to-fine", "out"};
const std::vector<std::string> kPatchFlags = {"per-position", "noising"};
const std::vector<std::string> kPathPatchOptions = {"model", "clean", "corrupt", "clean-ids", "corrupt-ids", "answer",
                                                    "wrong", "metric", "sender", "receivers", "input", "out"};
const std::vector<std::string> kPathPatchFlags = {"noising", "receiver-head-only", "freeze-mlps"};

namespace {

// The model, and its tokenizer only once something needs one (prompts or answers as text).
class PatchInputs {
public:
    PatchInputs(const Args& a, const std::vector<std::string>& builtins)
        : m_args(a)
        , m_loaded(loadModel(require(a, "model"), builtins))
    {
    }
    const AttentionModel& model() const { return *m_loaded.model; }

    // --clean-ids "1 2 3" (spaces, commas or a JSON array) or --clean TEXT (tokenized as the app does).
    std::vector<std::int32_t> prompt(const std::string& which)
    {
        const bool ids = m_args.has(which + "-ids"), text = m_args.has(which);
        if (ids == text)
            throw Error(ErrorCode::BadInput, "give the " + which + " prompt as --" + which + " TEXT or --" + which +
                                                 "-ids \"ID ID ...\" (one of them)");
        if (ids)
            return parseIds(m_args.options.at(which + "-ids"), which + "-ids");
        return promptIds(tokenizer(), m_args.options.at(which));
    }

    // An answer as a token id (digits) or a one-token word (core/run/patch_prompts.h).
    std::int32_t answer(const std::string& key)
    {
        const std::string& v = require(m_args, key);
        if (!v.empty() && v.find_first_not_of("0123456789") == std::string::npos)
            return parseIds(v, key).front();
        return answerToken(tokenizer(), v);
    }

    PatchMetric metric()
    {
        PatchMetric m;
        m.kind = PatchMetric::kindNamed(m_args.has("metric") ? m_args.options.at("metric") : "logit-diff");
        if (m.kind != PatchMetric::Kind::Loss)
            m.answer = answer("answer");
        if (m.kind == PatchMetric::Kind::LogitDifference)
            m.wrong = answer("wrong");
        return m;
    }

    // Prompts of different lengths: said with the tokens where they part (the core says it with ids only).
    void checkLengths(const std::vector<std::int32_t>& clean, const std::vector<std::int32_t>& corrupt)
    {
        if (clean.size() != corrupt.size() && maybeTokenizer())
            throw Error(ErrorCode::BadInput, promptLengthProblem(*maybeTokenizer(), clean, corrupt));
    }

    // The tokens as the model's tokenizer spells them (ids in angle brackets when there is none).
    nlohmann::json pieces(const std::vector<std::int32_t>& ids)
    {
        nlohmann::json out = nlohmann::json::array();
        for (auto id : ids)
            out.push_back(maybeTokenizer() ? maybeTokenizer()->pieceOf(id) : "<" + std::to_string(id) + ">");
        return out;
    }

private:
    static std::vector<std::int32_t> parseIds(std::string text, const std::string& key)
    {
        for (char& c : text)
            if (c == ',' || c == '[' || c == ']')
                c = ' ';
        std::istringstream in(text);
        std::vector<std::int32_t> ids;
        std::string word;
        while (in >> word) {
            std::size_t used = 0;
            long long v = -1;
            try {
                v = std::stoll(word, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != word.size() || v < 0 || v > INT32_MAX)
                throw Error(ErrorCode::BadInput, "--" + key + ": \"" + word + "\" is not a token id");
            ids.push_back(static_cast<std::int32_t>(v));
        }
        if (ids.empty())
            throw Error(ErrorCode::BadInput, "--" + key + " holds no token ids");
        return ids;
    }
    const Tokenizer& tokenizer()
    {
        if (!m_tokenizer)
            m_tokenizer = loadModelTokenizer(m_loaded);
        return *m_tokenizer;
    }
    const Tokenizer* maybeTokenizer()
    {
        if (!m_tokenizer && !m_triedTokenizer) {
            m_triedTokenizer = true;
            try {
                m_tokenizer = loadModelTokenizer(m_loaded);
            } catch (const Error&) { // a folder of weights only: ids stay numbers
            }
        }
        return m_tokenizer.get();
    }

    const Args& m_args;
    LoadedModel m_loaded;
    std::unique_ptr<Tokenizer> m_tokenizer;
    bool m_triedTokenizer = false;
};

double finiteOr(double v, double fallback) { return std::isfinite(v) ? v : fallback; }

// scores nested by the result's axes, outermost first (NaN cells, cancelled, as null).
nlohmann::json nested(const PatchResult& r, std::size_t axis, std::size_t& at)
{
    nlohmann::json out = nlohmann::json::array();
    for (int i = 0; i < r.shape[axis]; ++i) {
        if (axis + 1 < r.shape.size()) {
            out.push_back(nested(r, axis + 1, at));
        } else {
            const double v = r.scores[at++];
            out.push_back(std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr));
        }
    }
    return out;
}

void writeJson(const std::string& path, const nlohmann::ordered_json& j)
{
    writeFileAtomically(path, j.dump(1) + "\n");
    std::cerr << "wrote " << path << "\n";
}

// What patch and path-patch read alike: both prompts (of one length), the metric and the direction.
template <class Request>
void readPromptsAndMetric(const Args& a, PatchInputs& in, Request& request)
{
    request.clean = in.prompt("clean");
    request.corrupt = in.prompt("corrupt");
    in.checkLengths(request.clean, request.corrupt);
    request.metric = in.metric();
    request.noising = a.has("noising");
}

} // namespace

int cmdPatch(const Args& a, const std::vector<std::string>& builtins)
{
    PatchInputs in(a, builtins);
    PatchRequest request;
    readPromptsAndMetric(a, in, request);
    request.component = patchComponentNamed(require(a, "component"));
    request.perPosition = a.has("per-position");
    request.coarseToFine = parseNonNegative(a, "coarse-to-fine", 0);
    const std::string& out = require(a, "out");
    const bool tty = ::isatty(2);
    const auto r = patchActivations(in.model(), request, [&](const PatchResult&, int done, int total) {
        if (tty || done == total)
            std::fprintf(stderr, "%spatched %d of %d%s", tty ? "\r" : "", done, total, done == total ? "\n" : "");
    });
    nlohmann::ordered_json j;
    j["m_clean"] = r.clean;
    j["m_corrupt"] = r.corrupt;
    std::size_t at = 0;
    j["scores"] = nested(r, 0, at);
    j["axes"] = r.axes; // every index counted from 1
    j["component"] = require(a, "component");
    j["metric"] = request.metric.describe();
    j["direction"] = request.noising ? "noising" : "denoising";
    j["clean_tokens"] = in.pieces(request.clean);
    j["corrupt_tokens"] = in.pieces(request.corrupt);
    j["runs"] = r.runs;
    if (request.coarseToFine > 0) { // what the coarse passes measured, and how many cells they left out (null)
        auto finite = [](const std::vector<double>& v, std::size_t from, std::size_t count) {
            nlohmann::ordered_json cells = nlohmann::ordered_json::array();
            for (std::size_t i = from; i < from + count; ++i)
                cells.push_back(std::isfinite(v[i]) ? nlohmann::ordered_json(v[i]) : nlohmann::ordered_json(nullptr));
            return cells;
        };
        j["coarse_to_fine"] = request.coarseToFine;
        j["layer_scores"] = finite(r.layerScores, 0, r.layerScores.size());
        if (request.perPosition) { // [layer][head or group], over all positions
            const auto units = static_cast<std::size_t>(r.shape[1]);
            j["unit_scores"] = nlohmann::ordered_json::array();
            for (std::size_t l = 0; l < r.layerScores.size(); ++l)
                j["unit_scores"].push_back(finite(r.unitScores, l * units, units));
        }
        j["skipped"] = r.skipped;
    }
    writeJson(out, j);
    return 0;
}

int cmdPathPatch(const Args& a, const std::vector<std::string>& builtins)
{
    PatchInputs in(a, builtins);
    PathPatchRequest request;
    readPromptsAndMetric(a, in, request);
    request.receiverHeadOnly = a.has("receiver-head-only");
    request.freezeMlps = a.has("freeze-mlps");
    const auto sender = layerDotUnits(require(a, "sender"), "--sender");
    if (sender.size() != 1)
        throw Error(ErrorCode::BadInput, "--sender expects one LAYER.HEAD (from 1), got \"" + a.options.at("sender") + "\"");
    std::tie(request.senderLayer, request.senderHead) = sender.front();
    request.receivers = layerDotUnits(require(a, "receivers"), "--receivers");
    const std::string input = require(a, "input");
    if (input != "q" && input != "k" && input != "v")
        throw Error(ErrorCode::BadInput, "--input must be q, k or v, got \"" + input + "\"");
    request.input = patchComponentNamed(input);
    const std::string& out = require(a, "out");
    const auto r = pathPatch(in.model(), request);
    nlohmann::ordered_json j;
    j["m_clean"] = r.clean;
    j["m_corrupt"] = r.corrupt;
    j["score"] = r.score;
    j["m_patched"] = finiteOr(r.patched, 0);
    j["metric"] = request.metric.describe();
    j["direction"] = request.noising ? "noising" : "denoising";
    j["path"] = request.freezeMlps ? "direct (MLPs frozen)" : "through the MLPs (recomputed)";
    writeJson(out, j);
    return 0;
}

} // namespace attnscope::cli
