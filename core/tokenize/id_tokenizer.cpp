// IdTokenizer implementation.
#include "tokenize/id_tokenizer.h"

#include "util/error.h"

#include <charconv>
#include <filesystem>

namespace attnscope::core {

std::vector<Token> IdTokenizer::encodeText(std::string_view text) const
{
    std::vector<Token> out;
    std::size_t i = 0;
    auto sep = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','; };
    while (i < text.size()) {
        if (sep(text[i])) {
            ++i;
            continue;
        }
        std::size_t e = i;
        while (e < text.size() && !sep(text[e]))
            ++e;
        int id = -1;
        const auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + e, id);
        if (ec != std::errc() || ptr != text.data() + e || id < 0 || id >= m_vocabSize)
            throw Error(ErrorCode::BadInput, "\"" + std::string(text.substr(i, e - i)) +
                                                 "\" is not a token id in [0, " + std::to_string(m_vocabSize) +
                                                 "); this model has no tokenizer files, so type token ids");
        std::string label = "#";
        label += std::to_string(id);
        out.push_back({id, std::move(label), i, e});
        i = e;
    }
    return out;
}

bool hasTokenizerFiles(const std::string& folder)
{
    namespace fs = std::filesystem;
    const fs::path d(folder);
    return (fs::exists(d / "vocab.json") && fs::exists(d / "merges.txt")) || fs::exists(d / "tokenizer.json") || fs::exists(d / "tokenizer.model") ||
           fs::exists(d / "vocab.txt") || fs::exists(d / "vocab.pkl") || fs::exists(d / "spiece.model") ||
           (fs::exists(d / "source.spm") && fs::exists(d / "vocab.json"));
}

} // namespace attnscope::core
