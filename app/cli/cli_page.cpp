// attnscope-cli page (cli_page.h).
#include "cli_page.h"

#include "cli_attention.h"
#include "model/model_loader.h"
#include "run/attention_page.h"
#include "run/text_capture.h"
#include "util/atomic_file.h"
#include "util/error.h"

#include <iostream>
#include <sstream>

namespace attnscope::cli {

using namespace attnscope::core;

const std::vector<std::string> kPageOptions = {"model", "text", "text-file", "ids", "layers", "heads", "out"};

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

int cmdPage(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto& out = require(a, "out");
    const auto capture = captureOfArguments(a, loaded);
    PageOptions o;
    o.layers = numberList(a, "layers");
    o.heads = numberList(a, "heads");
    const std::string html = attentionPageHtml(*capture, loaded.model->info().source, o);
    writeFileAtomically(out, html);
    std::cerr << "wrote " << out << " (" << html.size() / 1024 << " KiB)\n";
    return 0;
}

} // namespace attnscope::cli
