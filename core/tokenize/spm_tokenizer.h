// A SentencePiece model read by libsentencepiece (Debian's libsentencepiece-dev), for the tokenizers Hugging Face's
// slow classes build on it: T5's spiece.model (ids are the model's own, </s> appended) and Marian / OPUS-MT's
// source.spm and target.spm, whose pieces are mapped to the model's ids through vocab.json (a piece missing there is
// <unk>), </s> appended, a leading language code >>xx<< split off as a token of its own. Unigram and BPE models alike:
// the library encodes, this class names ids and keeps each piece's byte span in the text.
#pragma once

#include "tokenize/added_token_trie.h"
#include "tokenize/tokenizer.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace attnscope::core {

class SpmTokenizer final : public Tokenizer {
public:
    // `vocabJson` empty: the model's own ids (T5). Throws Error naming the file that does not load.
    SpmTokenizer(const std::string& modelFile, const std::string& vocabJson = {});
    ~SpmTokenizer() override;

    // A Unigram model given as its pieces, not a file: llama.cpp's GGUF "t5" vocabulary, a tokenizer.json's Unigram.
    // `types` are SentencePiece's (1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte);
    // `charsmap` the precompiled normaliser (empty: none). `source` names the file in messages.
    struct Pieces {
        std::vector<std::string> pieces;
        std::vector<float> scores;
        std::vector<int> types;
        std::string charsmap;
        std::string charsmapField = "precompiled_charsmap"; // its key in the file, for messages
        bool addDummyPrefix = true;
        bool removeExtraWhitespaces = true;
    };
    static std::unique_ptr<SpmTokenizer> fromPieces(const Pieces& p, const std::string& source);
    // What the tokenizer adds around a text by default (a tokenizer.json's post-processor), instead of </s> after it.
    void setSpecialIds(std::vector<std::int32_t> prefix, std::vector<std::int32_t> suffix);
    // Tokens matched literally in the raw text before SentencePiece sees it (a tokenizer.json's special added tokens:
    // "<unk>" typed in a text is that token, as the Rust library reads it).
    void setAddedTokens(std::vector<std::pair<std::string, std::int32_t>> tokens);
    std::vector<Token> specialPrefix() const override;

    std::vector<Token> specialSuffix() const override;
    std::string kind() const override;
    int vocabSize() const override;
    std::string pieceOf(std::int32_t id) const override;
    std::string textOf(std::int32_t id) const override;
    std::optional<std::int32_t> idOfPiece(const std::string& piece) const;

protected:
    std::vector<Token> encodeText(std::string_view text) const override;

private:
    SpmTokenizer() = default;
    std::int32_t idOf(const std::string& piece, int spmId) const;

    std::unique_ptr<sentencepiece::SentencePieceProcessor> m_spm;
    std::unordered_map<std::string, std::int32_t> m_vocab; // Marian: piece -> model id
    std::unordered_map<std::int32_t, std::string> m_pieces; // model id -> piece (Marian)
    std::int32_t m_idCount = 0;                              // the largest id + 1
    std::int32_t m_unk = 0, m_eos = -1;
    bool m_mapped = false;
    std::optional<std::vector<std::int32_t>> m_prefix, m_suffix;
    std::vector<std::pair<std::string, std::int32_t>> m_added; // content and id, as given
    AddedTokenTrie m_addedTrie;                                 // their contents (indices into m_added)
    void encodePiece(std::string_view text, std::size_t offset, std::vector<Token>& out) const;
};

// Marian / OPUS-MT folders: the tokenizer of the source side (source.spm) or the target side (target.spm), both
// through vocab.json. Null when the folder is not such a folder.
std::unique_ptr<Tokenizer> marianTokenizer(const std::string& folder, bool target);

class GgufFile;
// A tokenizer.json whose model is Unigram (T5's, written by Hugging Face's converters): its vocabulary of pieces and
// scores, unk_id, added special tokens, the Precompiled normaliser's charsmap, Metaspace's prefix and the
// post-processor's special tokens, read by libsentencepiece as the model they describe.
std::unique_ptr<Tokenizer> unigramFromTokenizerJson(const std::string& path);

// llama.cpp's "t5" vocabulary of a GGUF file (a SentencePiece Unigram model's pieces, scores, types and normaliser).
std::unique_ptr<Tokenizer> t5TokenizerFromGguf(const GgufFile& file);

} // namespace attnscope::core
