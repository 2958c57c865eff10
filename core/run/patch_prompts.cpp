// Prompts and answers for patching (patch_prompts.h).
#include "run/patch_prompts.h"

#include "util/error.h"

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

} // namespace attnscope::core
