// Prompts and answers for patching (patch_prompts.h).
#include "run/patch_prompts.h"

#include "util/error.h"

#include <sstream>

namespace attnscope::core {

std::vector<std::int32_t> promptIds(const Tokenizer& tokenizer, const std::string& text)
{
    return idsOf(tokenizer.encodeWithSpecial(text));
}

std::int32_t answerToken(const Tokenizer& tokenizer, const std::string& answer)
{
    if (answer.empty())
        throw Error(ErrorCode::BadInput, "an answer is empty: give a word (one token) or a token id");
    if (answer.find_first_not_of("0123456789") == std::string::npos && answer.size() <= 9)
        return static_cast<std::int32_t>(std::stol(answer));
    for (const std::string& form : {" " + answer, answer}) {
        const auto tokens = tokenizer.encode(form);
        if (tokens.size() == 1)
            return tokens.front().id;
    }
    throw Error(ErrorCode::BadInput, "the answer \"" + answer + "\" is " + std::to_string(tokenizer.encode(answer).size()) +
                                         " tokens for this model's tokenizer; give one token (or its id)");
}

std::string promptLengthProblem(const Tokenizer& tokenizer, const std::vector<std::int32_t>& clean,
                                const std::vector<std::int32_t>& corrupt)
{
    if (clean.size() == corrupt.size())
        return {};
    std::size_t at = 0;
    while (at < clean.size() && at < corrupt.size() && clean[at] == corrupt[at])
        ++at;
    auto piece = [&](const std::vector<std::int32_t>& ids) {
        return at < ids.size() ? "\"" + tokenizer.pieceOf(ids[at]) + "\"" : std::string("the end");
    };
    return "the clean prompt has " + std::to_string(clean.size()) + " tokens and the corrupted " +
           std::to_string(corrupt.size()) + "; they part at token " + std::to_string(at + 1) + " (" + piece(clean) +
           " / " + piece(corrupt) + "): patching needs prompts of the same length";
}

namespace {

std::string trimmed(const std::string& s)
{
    const auto first = s.find_first_not_of(" \t");
    return first == std::string::npos ? std::string() : s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

} // namespace

std::vector<std::pair<int, int>> layerDotUnits(const std::string& text, const std::string& what)
{
    std::vector<std::pair<int, int>> out;
    std::stringstream items(text);
    for (std::string raw; std::getline(items, raw, ',');) {
        const std::string item = trimmed(raw);
        if (item.empty() && trimmed(text).empty())
            continue;
        const auto dot = item.find('.');
        bool ok = false;
        if (dot != std::string::npos && dot > 0 && dot + 1 < item.size() &&
            item.find_first_not_of("0123456789.") == std::string::npos && item.find('.', dot + 1) == std::string::npos &&
            dot <= 6 && item.size() - dot - 1 <= 6) {
            const int layer = std::stoi(item.substr(0, dot)), unit = std::stoi(item.substr(dot + 1));
            if (layer >= 1 && unit >= 1) {
                out.emplace_back(layer - 1, unit - 1);
                ok = true;
            }
        }
        if (!ok)
            throw Error(ErrorCode::BadInput, what + " expects LAYER.HEAD (both from 1), got \"" + item + "\"");
    }
    return out;
}

} // namespace attnscope::core
