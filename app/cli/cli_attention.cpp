// attnscope-cli attention (cli_attention.h).
#include "cli_attention.h"

#include "io/npy.h"
#include "run/layer_attention.h"
#include "util/atomic_file.h"
#include "util/error.h"

#include <iostream>
#include <sstream>

namespace attnscope::cli {

using namespace attnscope::core;

const std::vector<std::string> kAttentionOptions = {"model", "text", "text-file", "ids", "layer", "head", "segment", "out"};
const std::vector<std::string> kAttentionFlags = {"raw"};

std::vector<Token> idArgument(const Args& a, const LoadedModel& loaded)
{
    std::string list = require(a, "ids");
    for (char& c : list)
        if (c == ',')
            c = ' ';
    std::vector<Token> tokens;
    std::stringstream in(list);
    for (std::string word; in >> word;) {
        std::size_t used = 0;
        long long id = -1;
        try {
            id = std::stoll(word, &used);
        } catch (const std::exception&) {
        }
        if (used != word.size() || id < 0 || id >= loaded.model->info().vocabSize)
            throw Error(ErrorCode::BadInput, "--ids: \"" + word + "\" is not a token id of this model (0 .. " +
                                                 std::to_string(loaded.model->info().vocabSize - 1) + ")");
        tokens.push_back({static_cast<std::int32_t>(id), word, 0, 0});
    }
    return tokens;
}

std::shared_ptr<const TextCapture> captureOfArguments(const Args& a, const LoadedModel& loaded)
{
    if (a.has("ids"))
        return captureText(*loaded.model, idArgument(a, loaded), {});
    const auto tokenizer = loadModelTokenizer(loaded);
    return captureText(*loaded.model, *tokenizer, textArgument(a), {});
}

int cmdAttention(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& out = require(a, "out");
    const int layer = parseInt(a, "layer", 0);
    const auto capture = captureOfArguments(a, loaded);
    const int segments = static_cast<int>(capture->segments.size());
    const int segment = parseInt(a, "segment", segments == 1 ? 1 : 0);
    if (segment < 1 || segment > segments)
        throw Error(ErrorCode::BadInput, "--segment " + std::to_string(segment) + ": the text ran in " +
                                             std::to_string(segments) + " segments (1 .. " + std::to_string(segments) + ")");
    auto att = layerAttention(*loaded.model, *capture, segment - 1, layer - 1, a.has("raw"));
    std::int64_t heads = att.heads;
    const float* values = att.values.data();
    if (a.has("head")) {
        const int head = parseInt(a, "head", 0);
        if (head < 1 || head > att.heads)
            throw Error(ErrorCode::BadInput, "--head " + std::to_string(head) + " does not exist: heads are 1 .. " +
                                                 std::to_string(att.heads));
        values += static_cast<std::ptrdiff_t>(head - 1) * att.queries * att.keys;
        heads = 1;
    }
    writeFileAtomically(out, npyBytes({heads, att.queries, att.keys}, values));
    std::cerr << "wrote " << out << " (" << heads << " x " << att.queries << " x " << att.keys << ")\n";
    return 0;
}

} // namespace attnscope::cli
