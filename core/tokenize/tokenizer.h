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
    std::size_t begin = 0;  // byte span [begin, end) in the UTF-8 input
    std::size_t end = 0;
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    // Thread-safe. Returns no tokens for an empty text; callers report "text tokenizes to nothing".
    virtual std::vector<Token> encode(std::string_view text) const = 0;
    virtual std::string kind() const = 0; // "byte-level BPE", "word-level"
    virtual int vocabSize() const = 0;
};

// Loads the tokenizer of a model folder: vocab.json + merges.txt or tokenizer.json (byte-level BPE),
// or vocab.txt (word level). Throws Error naming the folder when none is present or a file is broken.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string& folder);

} // namespace attnscope::core
