// Byte-pair encoding of one pre-token. Symbols start as single characters (or, byte-level, single mapped bytes) and
// the best adjacent pair is merged until none can be: by merge rank for Hugging Face merges lists (lowest first), or by
// the merged piece's score for SentencePiece vocabularies (highest first); ties go to the leftmost pair. A priority
// queue over adjacent pairs makes this O(n log n) in the pre-token's length (a 1 MB word is no problem).
#pragma once

#include "tokenize/subword_model.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace attnscope::core {

class BpeModel final : public SubwordModel {
public:
    struct Options {
        bool byteFallback = false; // a character not in the vocabulary becomes its UTF-8 bytes <0xNN>
        bool fuseUnk = false;      // consecutive unknown characters become one unknown token
        std::optional<int> unkId;  // without it (and without byte fallback), an unknown character is an error
        bool ignoreMerges = false; // a pre-token that is itself a piece is emitted whole (Llama 3)
    };

    BpeModel() = default;
    // Hugging Face: pieces by id (empty strings for unused ids) and merges in rank order ("a", "b" -> "ab").
    static BpeModel fromMerges(std::vector<std::string> pieces, const std::vector<std::pair<std::string, std::string>>& merges,
                               Options options, std::string source);
    // SentencePiece: a pair merges when its concatenation is a mergeable piece; the higher that piece's score, the
    // earlier. `mergeable[id]` says which pieces may result from merging (normal pieces).
    static BpeModel fromScores(std::vector<std::string> pieces, const std::vector<float>& scores,
                               const std::vector<bool>& mergeable, Options options, std::string source);

    // Appends the tokens of one pre-token (ids and source spans; texts are filled in by the caller).
    void encode(const std::vector<Unit>& units, std::vector<Token>& out) const override;

    std::optional<int> id(const std::string& piece) const;
    const std::string& piece(int id) const override { return m_pieces.at(static_cast<std::size_t>(id)); }
    int vocabSize() const override { return static_cast<int>(m_pieces.size()); }
    const Options& options() const { return m_options; }

private:
    struct Merge {
        float priority; // lower merges first
        int result;
    };
    static std::uint64_t key(int a, int b) { return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b); }
    void index();

    std::vector<std::string> m_pieces;
    // Looked up by string_view too (no copy per candidate cut of a piece).
    struct Hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
    };
    std::unordered_map<std::string, int, Hash, std::equal_to<>> m_ids;
    std::unordered_map<std::uint64_t, Merge> m_merges;
    int m_byteIds[256];
    Options m_options;
    std::string m_source;
};

} // namespace attnscope::core
