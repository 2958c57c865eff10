// A SentencePiece model read by libsentencepiece (Debian's libsentencepiece-dev), for the tokenizers Hugging Face's
// slow classes build on it: T5's spiece.model (ids are the model's own, </s> appended) and Marian / OPUS-MT's
// source.spm and target.spm, whose pieces are mapped to the model's ids through vocab.json (a piece missing there is
// <unk>), </s> appended, a leading language code >>xx<< split off as a token of its own. Unigram and BPE models alike:
// the library encodes, this class names ids and keeps each piece's byte span in the text.
#pragma once

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
        bool addDummyPrefix = true;
        bool removeExtraWhitespaces = true;
    };
    static std::unique_ptr<SpmTokenizer> fromPieces(const Pieces& p, const std::string& source);

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
    std::vector<std::string> m_pieces;                     // model id -> piece (Marian)
    std::int32_t m_unk = 0, m_eos = -1;
    bool m_mapped = false;
};

// Marian / OPUS-MT folders: the tokenizer of the source side (source.spm) or the target side (target.spm), both
// through vocab.json. Null when the folder is not such a folder.
std::unique_ptr<Tokenizer> marianTokenizer(const std::string& folder, bool target);

class GgufFile;
// llama.cpp's "t5" vocabulary of a GGUF file (a SentencePiece Unigram model's pieces, scores, types and normaliser).
std::unique_ptr<Tokenizer> t5TokenizerFromGguf(const GgufFile& file);

} // namespace attnscope::core
