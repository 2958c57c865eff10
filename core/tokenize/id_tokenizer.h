// Fallback for model folders without tokenizer files: the text is a list of token ids ("12 7 33").
#pragma once

#include "tokenize/tokenizer.h"

namespace attnscope::core {

class IdTokenizer final : public Tokenizer {
public:
    explicit IdTokenizer(int vocabSize)
        : m_vocabSize(vocabSize)
    {
    }
    // Whitespace- or comma-separated integers; anything else is an Error(BadInput) naming the offending text.
    std::vector<Token> encodeText(std::string_view text) const override;
    std::string kind() const override { return "token ids (no tokenizer files)"; }
    int vocabSize() const override { return m_vocabSize; }
    // Appended to a text of ids (generation), an id reads back as itself: " 17".
    std::string textOf(std::int32_t id) const override { return " " + std::to_string(id); }

private:
    int m_vocabSize;
};

// True when the folder holds files loadTokenizer() understands.
bool hasTokenizerFiles(const std::string& folder);

} // namespace attnscope::core
