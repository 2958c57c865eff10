// attnscope-cli page (cli_page.h).
#include "cli_page.h"

#include "cli_attention.h"
#include "model/model_loader.h"
#include "export/attention_page.h"
#include "run/image_capture.h"
#include "run/generation.h"
#include "run/text_capture.h"
#include "util/atomic_file.h"
#include "util/error.h"

#include <iostream>
#include <sstream>

namespace attnscope::cli {

using namespace attnscope::core;

const std::vector<std::string> kPageOptions = {"model", "text", "text-file", "ids", "layers", "heads", "out",
                                               "source", "image", "max-new-tokens"};

std::vector<int> numberList(const Args& a, const std::string& key)
{
    std::vector<int> out;
    if (!a.has(key))
        return out;
    std::stringstream in(a.options.at(key));
    for (std::string one; std::getline(in, one, ',');) {
        try {
            std::size_t used = 0;
            const int v = std::stoi(one, &used);
            if (used == one.size() && v >= 1) {
                out.push_back(v - 1);
                continue;
            }
        } catch (const std::exception&) {
        }
        throw Error(ErrorCode::BadInput, "--" + key + " expects numbers from 1 separated by commas, got \"" + one + "\"");
    }
    return out;
}

// An encoder-decoder model's run for its page: --source (or its --ids) translated greedily (--max-new-tokens), or read
// with the target --text.
std::shared_ptr<const TextCapture> translationCapture(const Args& a, const LoadedModel& loaded)
{
    const auto& info = loaded.model->info();
    const auto tokenizer = loadModelTokenizer(loaded);
    const auto target = loadModelTargetTokenizer(loaded);
    CaptureOptions options;
    options.streams.resize(info.streams.size());
    const int read = info.typedReadStream();
    auto& source = options.streams[static_cast<std::size_t>(read)];
    if (a.has("ids")) {
        source.tokens = idArgument(a, loaded);
    } else {
        if (!a.has("source"))
            throw Error(ErrorCode::BadInput, "page of an encoder-decoder model needs --source (the text to translate)");
        source = StreamText{a.options.at("source"), streamTokens(info, read, *tokenizer, a.options.at("source"))};
    }
    auto tokens = streamTokens(info, info.segmentStream(), *target, a.has("text") ? a.options.at("text") : std::string());
    if (!a.has("text")) {
        GenerationRun run;
        run.options.source = std::make_shared<const std::vector<std::int32_t>>(idsOf(source.tokens));
        run.stopAt = info.streams[static_cast<std::size_t>(info.segmentStream())].endToken;
        const auto g = generateTokens(*loaded.model, idsOf(tokens), parseInt(a, "max-new-tokens", 32), Sampling{}, 0,
                                      nullptr, run);
        for (const auto id : g.ids)
            tokens.push_back(Token{id, target->pieceOf(id), 0, 0});
    }
    return captureText(*loaded.model, std::move(tokens), options);
}

int cmdPage(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& out = require(a, "out");
    const auto& info = loaded.model->info();
    PageOptions o;
    o.layers = numberList(a, "layers");
    o.heads = numberList(a, "heads");
    std::string html;
    if (info.typedReadStream() >= 0) {
        html = attentionPageHtml(*translationCapture(a, loaded), info.source, o);
    } else if (info.can.image) {
        const auto picture = capturePngFile(*loaded.model, loaded.folder, require(a, "image"));
        o.picture = picture.seen;
        html = attentionPageHtml(*picture.capture, info.source, o);
    } else {
        html = attentionPageHtml(*captureOfArguments(a, loaded), info.source, o);
    }
    writeFileAtomically(out, html);
    std::cerr << "wrote " << out << " (" << html.size() / 1024 << " KiB)\n";
    return 0;
}

} // namespace attnscope::cli
