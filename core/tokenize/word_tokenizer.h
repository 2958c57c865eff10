// Word-level tokenizer of Transformer-XL models (WikiText style): whitespace split, <unk>, <eos> at line ends.
#pragma once

#include "tokenize/tokenizer.h"

#include <unordered_map>

namespace attnscope::core {

class WordTokenizer final : public Tokenizer {
public:
    // vocab.txt: one token per line, line number (from 0) = id.
    static std::unique_ptr<WordTokenizer> fromFile(const std::string& vocabTxt);
    WordTokenizer(std::vector<std::string> words, std::string source);

    // Every '\n' becomes an <eos> token spanning the newline; words not in the vocabulary become <unk>.
    std::vector<Token> encode(std::string_view text) const override;
    std::string kind() const override { return "word-level"; }
    int vocabSize() const override { return static_cast<int>(m_words.size()); }
    const std::string& word(std::int32_t id) const { return m_words.at(static_cast<std::size_t>(id)); }
    std::string pieceOf(std::int32_t id) const override
    {
        return id >= 0 && id < vocabSize() ? word(id) : Tokenizer::pieceOf(id);
    }
    std::string textOf(std::int32_t id) const override { return id == m_eos ? "\n" : " " + pieceOf(id); }

private:
    std::vector<std::string> m_words;
    std::unordered_map<std::string, std::int32_t> m_ids;
    std::int32_t m_unk = -1;
    std::int32_t m_eos = -1;
    std::string m_source;
};

} // namespace attnscope::core
