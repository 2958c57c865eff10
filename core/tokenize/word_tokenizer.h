// Word-level tokenizer of Transformer-XL models: words from a vocab.txt (split at white space, as the text is assumed
// to be tokenized already) or from the vocab.pkl Hugging Face's Transformer-XL folders carry (the original Vocab's
// state: idx2sym, special tokens, lower_case, delimiter), whose typed text is split as WikiText was
// (tokenize/wikitext_words.h); <unk> for unknown words, <eos> at line ends.
#pragma once

#include "tokenize/tokenizer.h"

#include <unordered_map>

namespace attnscope::core {

class WordTokenizer final : public Tokenizer {
public:
    enum class Split { WhiteSpace, WikiText };
    // vocab.txt: one token per line, line number (from 0) = id; split at white space.
    static std::unique_ptr<WordTokenizer> fromFile(const std::string& vocabTxt);
    // vocab.pkl (a pickle or torch.save file, read by the restricted unpickler: io/pickle.h); split WikiText-style
    // unless its delimiter says otherwise, lower-cased when its lower_case says so.
    static std::unique_ptr<WordTokenizer> fromVocabPkl(const std::string& vocabPkl);
    WordTokenizer(std::vector<std::string> words, std::string source, Split split = Split::WhiteSpace,
                  bool lowerCase = false);

    // Every '\n' becomes an <eos> token spanning the newline; words not in the vocabulary become <unk>.
    std::vector<Token> encodeText(std::string_view text) const override;
    std::string kind() const override { return m_split == Split::WikiText ? "word-level (WikiText)" : "word-level"; }
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
    Split m_split = Split::WhiteSpace;
    bool m_lowerCase = false;
};

} // namespace attnscope::core
