// WordPiece (BERT's subword model): a word is cut greedily from the left into the longest pieces of the vocabulary,
// every piece after the first looked up with the continuation prefix ("##"). A word with a position no piece matches,
// or longer than maxCharsPerWord characters, becomes one unknown token spanning the whole word.
#pragma once

#include "tokenize/subword_model.h"

#include <optional>
#include <unordered_map>

namespace attnscope::core {

class WordPieceModel final : public SubwordModel {
public:
    // `pieces` by id; `unk` must be one of them. Throws Error(BadJson) naming `source` otherwise.
    WordPieceModel(std::vector<std::string> pieces, const std::string& unk, std::string continuationPrefix,
                   int maxCharsPerWord, std::string source);

    void encode(const std::vector<Unit>& units, std::vector<Token>& out) const override;
    const std::string& piece(int id) const override { return m_pieces.at(static_cast<std::size_t>(id)); }
    int vocabSize() const override { return static_cast<int>(m_pieces.size()); }
    std::optional<int> id(const std::string& piece) const;

private:
    std::vector<std::string> m_pieces;
    std::unordered_map<std::string, int> m_ids;
    std::string m_prefix;
    int m_maxChars = 100;
    int m_unk = 0;
    std::size_t m_longest = 0; // bytes of the longest piece
};

} // namespace attnscope::core
