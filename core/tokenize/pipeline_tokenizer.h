// The tokenizer pipeline of Hugging Face's tokenizers, which every subword format here is expressed in:
//   1. added tokens (special or not) are matched in the raw text first;
//   2. each piece between them is normalised (Prepend, Replace, NFC, Lowercase, Strip, BertNormalizer);
//   3. pre-tokenised (ByteLevel with the GPT-2 pattern, Split by a pattern, Metaspace, Digits, Whitespace,
//      BertPreTokenizer, ...);
//   4. each pre-token is encoded by the model: BPE (bpe_model.h) or WordPiece (wordpiece_model.h);
//   5. the post-processor's template adds special tokens around a text or a pair (encodeWithSpecial,
//      encodePairWithSpecial).
// Every character keeps the original bytes it came from, so every token has its span in the input text.
// Built from tokenizer.json, vocab.json + merges.txt, SentencePiece tokenizer.model, a BERT vocab.txt, or a GGUF
// vocabulary (tokenizer_formats.h). Immutable after construction; encode is thread-safe.
#pragma once

#include "tokenize/added_token_trie.h"
#include "tokenize/subword_model.h"
#include "tokenize/tokenizer.h"
#include "tokenize/unicode_class.h"
#include "tokenize/unicode_regex.h"

#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

struct AddedToken {
    std::string content;
    int id = 0;
    bool special = false;
    bool lstrip = false, rstrip = false; // white space on that side belongs to the token
    bool singleWord = false;             // only as a whole word
};

struct NormalizerStep {
    // Bert: BertNormalizer (clean text, CJK ideographs isolated, accents stripped, lower-cased, by the flags below).
    enum class Kind { Prepend, Replace, Nfc, Lowercase, Strip, Bert } kind = Kind::Prepend;
    std::u32string text;      // Prepend: what; Replace: the literal pattern
    std::u32string content;   // Replace: the replacement
    std::shared_ptr<const UnicodeRegex> regex; // Replace with a regex pattern
    bool left = true, right = true; // Strip
    bool cleanText = true, chineseChars = true, stripAccents = true, lowercase = true; // Bert
    bool atTextStart = false; // Prepend: only to the piece the text starts with (a slow Llama tokenizer, legacy false)
};

enum class SplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };

struct PreTokenizerStep {
    // Bert: BertPreTokenizer (split on white space, every punctuation character a word of its own).
    enum class Kind { ByteLevel, Split, Metaspace, Digits, Whitespace, WhitespaceSplit, Punctuation, Bert } kind = Kind::ByteLevel;
    std::shared_ptr<const UnicodeRegex> regex; // ByteLevel (when it splits), Split, Whitespace
    std::u32string literal;                    // Split by a literal string
    SplitBehavior behavior = SplitBehavior::Isolated;
    bool invert = false;          // Split: the pattern describes what to keep
    bool addPrefixSpace = false;  // ByteLevel
    bool mapBytes = true;         // ByteLevel: bytes to GPT-2's printable characters
    char32_t replacement = U'\u2581'; // Metaspace
    enum class Prepend { Always, First, Never } prepend = Prepend::Always; // Metaspace
    bool split = true;            // Metaspace
    bool individualDigits = false; // Digits
};

struct TokenizerPipeline {
    std::vector<AddedToken> added;
    std::vector<NormalizerStep> normalizers;
    std::vector<PreTokenizerStep> preTokenizers;
    std::shared_ptr<const SubwordModel> model;
    std::vector<int> prefixIds, suffixIds; // what the post-processor adds around a text
    // What it makes of a pair: special tokens by id, A and B, each with a token type. Empty: the default
    // (Tokenizer::pairTemplate).
    struct PairItem {
        TemplateItem::Kind kind = TemplateItem::Kind::Special;
        std::vector<int> ids;
        std::int32_t typeId = 0;
    };
    std::vector<PairItem> pair;
    std::string kind;                      // "byte-level BPE", "SentencePiece BPE", "WordPiece", ...
    std::string source;                    // file, for messages
};

class PipelineTokenizer final : public Tokenizer {
public:
    explicit PipelineTokenizer(TokenizerPipeline pipeline);

    std::vector<Token> encodeText(std::string_view text) const override;
    std::vector<Token> specialPrefix() const override;
    std::vector<Token> specialSuffix() const override;
    std::vector<TemplateItem> pairTemplate() const override;
    // A byte-level piece that is part of a character spells its bytes <0xNN> (valid UTF-8 for JSON and Python);
    // textOf gives the bytes themselves, which join the next tokens' into the character.
    std::string pieceOf(std::int32_t id) const override;
    std::string textOf(std::int32_t id) const override;
    std::string kind() const override { return m_p.kind; }
    int vocabSize() const override;
    const TokenizerPipeline& pipeline() const { return m_p; }

    // The GPT-2 pre-tokenizer pattern (also ByteLevel's default split).
    static const char* gpt2Pattern();

private:
    using Piece = std::vector<TextUnit>;
    void encodePiece(Piece piece, bool first, std::vector<Token>& out) const;
    void normalize(Piece& piece) const;
    std::vector<Piece> preTokenize(Piece piece, bool first) const;
    std::string display(const Token& t, std::string_view text) const;
    std::string pieceBytes(std::int32_t id) const; // the piece as bytes (a byte-level piece mapped back)
    Token specialToken(int id, std::uint32_t at) const;

    TokenizerPipeline m_p;
    AddedTokenTrie m_addedTrie; // the added tokens' contents (indices into m_p.added)
    // Indices of the added tokens matching `text` at `pos`, longest content first (ties in their order).
    void addedAt(std::string_view text, std::size_t pos, std::vector<std::size_t>& out) const;
};

} // namespace attnscope::core
