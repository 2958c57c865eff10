// attnscope-cli page (cli_page.h).
#include "cli_page.h"

#include "cli_attention.h"
#include "model/model_loader.h"
#include "run/attention_page.h"
#include "run/image_capture.h"
#include "run/translation.h"
#include "model/seq2seq.h"
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

// An encoder-decoder model's page: --source (or --ids) translated greedily, or read with the target --text.
std::string translationPage(const Args& a, const LoadedModel& loaded, const PageOptions& o)
{
    const auto& model = asEncoderDecoder(*loaded.model);
    const auto tokenizer = loadModelTokenizer(loaded);
    const auto target = loadModelTargetTokenizer(loaded);
    std::vector<Token> source;
    if (a.has("ids")) {
        source = idArgument(a, loaded);
    } else {
        if (!a.has("source"))
            throw Error(ErrorCode::BadInput, "page of an encoder-decoder model needs --source (the text to translate)");
        source = sourceTokens(*tokenizer, a.options.at("source"));
    }
    const auto prefix = targetIds(model, *target, a.has("text") ? a.options.at("text") : std::string());
    const auto ids = idsOf(source);
    GenerateOptions g;
    g.maxNewTokens = parseInt(a, "max-new-tokens", 32);
    const Translation t = a.has("text") ? teacherForce(model, ids, prefix) : generate(model, ids, prefix, g);
    std::vector<std::string> sourceText, targetText;
    for (const auto& s : source)
        sourceText.push_back(s.text);
    for (auto id : t.target)
        targetText.push_back(target->pieceOf(id));
    return translationPageHtml(t, model.info(), sourceText, targetText, model.info().source, o);
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
    if (info.can.encoderDecoder) {
        html = translationPage(a, loaded, o);
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
