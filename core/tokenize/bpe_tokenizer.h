// GPT-2 byte-level BPE: the GPT-2 pre-tokenizer regex, bytes mapped to printable code points, ranked merges.
#pragma once

#include "tokenize/tokenizer.h"

#include <unordered_map>

namespace attnscope::core {

class BpeTokenizer final : public Tokenizer {
public:
    // `vocab`: token string (byte-mapped) -> id; `merges`: pairs in rank order.
    BpeTokenizer(std::unordered_map<std::string, std::int32_t> vocab,
                 const std::vector<std::pair<std::string, std::string>>& merges, std::string source);

    static std::unique_ptr<BpeTokenizer> fromFiles(const std::string& vocabJson, const std::string& mergesTxt);
    static std::unique_ptr<BpeTokenizer> fromTokenizerJson(const std::string& path);

    std::vector<Token> encode(std::string_view text) const override;
    std::string kind() const override { return "byte-level BPE"; }
    int vocabSize() const override { return static_cast<int>(m_vocab.size()); }

    // Splits text into pre-tokens with the GPT-2 pattern; returns byte spans. Exposed for tests.
    static std::vector<std::pair<std::size_t, std::size_t>> preTokenize(std::string_view text);

private:
    void bpe(std::string_view piece, std::size_t offset, std::vector<Token>& out) const;

    std::unordered_map<std::string, std::int32_t> m_vocab;
    std::unordered_map<std::string, int> m_mergeRank; // "left right" -> rank
    std::string m_byteToSymbol[256];                  // GPT-2 bytes_to_unicode, UTF-8 encoded
    std::string m_source;
};

} // namespace attnscope::core
