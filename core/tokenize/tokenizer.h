// Tokenizer interface: text -> tokens that keep their display text and byte span in the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::core {

struct Token {
    std::int32_t id = 0;
    std::string text;       // what a view shows (valid UTF-8; partial characters shown as <0xNN>)
    std::size_t begin = 0;  // byte span [begin, end) in the UTF-8 input (empty for added special tokens)
    std::size_t end = 0;
};

// The ids of tokens, in order (what a model runs).
inline std::vector<std::int32_t> idsOf(std::span<const Token> tokens)
{
    std::vector<std::int32_t> ids;
    ids.reserve(tokens.size());
    for (const auto& t : tokens)
        ids.push_back(t.id);
    return ids;
}

// A text pair as a model reads it: tokens and each token's type (token_type_ids: 0 for the first text and what frames
// it, 1 for the second where the model tells the two apart).
struct PairEncoding {
    std::vector<Token> tokens;
    std::vector<std::int32_t> typeIds;
    std::size_t secondText = 0; // index of the first token after text A and the special tokens that close it
};

// One element of a post-processor's template: special tokens, or the place of text A or B, with a token type.
struct TemplateItem {
    enum class Kind { Special, A, B } kind = Kind::Special;
    std::vector<Token> special; // Kind::Special: the tokens (ids and texts; spans are set where they are placed)
    std::int32_t typeId = 0;
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    // The text's tokens, without the special tokens a model adds around a text (Hugging Face's
    // add_special_tokens=False); special tokens written in the text are recognised. Thread-safe. Returns no tokens
    // for an empty text; callers report "text tokenizes to nothing".
    std::vector<Token> encode(std::string_view text) const;
    // What the model's tokenizer adds by default before / after a text (Llama's BOS), as tokens with empty spans.
    virtual std::vector<Token> specialPrefix() const { return {}; }
    virtual std::vector<Token> specialSuffix() const { return {}; }
    // encode() with the special prefix and suffix: what the model sees by default.
    std::vector<Token> encodeWithSpecial(std::string_view text) const;
    // A pair through the pair template ([CLS] A [SEP] B [SEP] with types 0 / 1 for BERT, <s> A </s></s> B </s> all 0
    // for RoBERTa). B's spans are offsets into `b` plus `bOffset`, so a caller can show the pair as one text; a special
    // token sits, with an empty span, where the text before it ends.
    PairEncoding encodePairWithSpecial(std::string_view a, std::string_view b, std::size_t bOffset) const;
    // The pair template; by default the special prefix, A (type 0), B (type 1), the special suffix.
    virtual std::vector<TemplateItem> pairTemplate() const;
    virtual std::string kind() const = 0; // "byte-level BPE", "SentencePiece BPE", "word-level"
    virtual int vocabSize() const = 0;
    // How the vocabulary spells an id (a prediction's token): the piece, an added token's content, or "<id>".
    virtual std::string pieceOf(std::int32_t id) const { return "<" + std::to_string(id) + ">"; }
    // The text a token adds when it is appended to a text (generation): a word-level token with its space, a
    // SentencePiece ▁ as a space, a byte token as its byte, a byte-level piece as its bytes.
    virtual std::string textOf(std::int32_t id) const { return pieceOf(id); }

    // The file it was read from (tokenizer.json, tokenizer.model, a .gguf file, ...), for messages; empty for one
    // made in memory.
    const std::string& source() const { return m_source; }
    void setSource(std::string file) { m_source = std::move(file); }
    // A model's tokenizer (model_loader's loadModelTokenizer) knows the model's vocabulary: a token it gives past that
    // (a tokenizer of another model beside the weights) throws Error(BadInput) naming the tokenizer's file and the
    // token, before a forward pass could say only "outside the vocabulary". 0: not bound.
    void bindToModelVocabulary(int modelVocabulary) { m_modelVocabulary = modelVocabulary; }

protected:
    // What encode() returns, before the check against the model's vocabulary.
    virtual std::vector<Token> encodeText(std::string_view text) const = 0;

private:
    void checkFitsModel(const std::vector<Token>& tokens) const;
    std::string m_source;
    int m_modelVocabulary = 0;
};

// What a vocab.txt is: a word list (Transformer-XL, WikiText style) or BERT's WordPiece. The folder's
// tokenizer_config.json class decides first; otherwise the model's family (model/families.h; for a bare folder its
// config.json's model type, loadFolderTokenizer) passes its kind here; never which files happen to exist.
enum class VocabTxt { WordList, WordPiece };

// Loads a tokenizer from a model folder (tokenizer.json first, then tokenizer.model, then vocab.json + merges.txt,
// then vocab.txt), from one of those files, or from a .gguf file's embedded vocabulary. Throws Error naming the file
// or folder when none is present or a file is broken.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& folderOrFile, VocabTxt vocabTxt = VocabTxt::WordList);

// The ids of the vocabulary's control tokens by their spelling: <unk>, <eos>, </s>, <|endoftext|>, <pad>, [CLS],
// [SEP], [UNK] and the like (a name in angle brackets, optionally with bars, or capitals in square brackets); not
// SentencePiece's byte pieces (<0x0A>) nor a token-id tokenizer's ids (<5>), which are text. What generation leaves
// out unless asked.
std::vector<std::int32_t> controlTokenIds(const Tokenizer& tokenizer);

} // namespace attnscope::core
