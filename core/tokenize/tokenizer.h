// Tokenizer interface: text -> tokens that keep their display text and byte span in the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    // The text's tokens, without the special tokens a model adds around a text (Hugging Face's
    // add_special_tokens=False); special tokens written in the text are recognised. Thread-safe. Returns no tokens
    // for an empty text; callers report "text tokenizes to nothing".
    virtual std::vector<Token> encode(std::string_view text) const = 0;
    // What the model's tokenizer adds by default before / after a text (Llama's BOS), as tokens with empty spans.
    virtual std::vector<Token> specialPrefix() const { return {}; }
    virtual std::vector<Token> specialSuffix() const { return {}; }
    // encode() with the special prefix and suffix: what the model sees by default.
    std::vector<Token> encodeWithSpecial(std::string_view text) const;
    virtual std::string kind() const = 0; // "byte-level BPE", "SentencePiece BPE", "word-level"
    virtual int vocabSize() const = 0;
};

// Loads a tokenizer from a model folder (tokenizer.json first, then tokenizer.model, then vocab.json + merges.txt,
// then vocab.txt), from one of those files, or from a .gguf file's embedded vocabulary. Throws Error naming the file
// or folder when none is present or a file is broken.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& folderOrFile);

} // namespace attnscope::core
