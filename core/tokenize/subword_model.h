// The model step of a tokenizer pipeline (tokenize/pipeline_tokenizer.h): one pre-token, as characters that remember
// their source bytes, to token ids. Byte-pair encoding (bpe_model.h) and WordPiece (wordpiece_model.h) implement it.
#pragma once

#include "tokenize/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::core {

class SubwordModel {
public:
    // An initial symbol: one character (UTF-8) and the original bytes it stands for.
    struct Unit {
        std::string text;
        std::uint32_t begin = 0, end = 0;
    };
    virtual ~SubwordModel() = default;
    // Appends the tokens of one pre-token (ids and source spans; texts are filled in by the caller).
    virtual void encode(const std::vector<Unit>& units, std::vector<Token>& out) const = 0;
    // The piece of an id as the vocabulary spells it (empty for unused ids).
    virtual const std::string& piece(int id) const = 0;
    virtual int vocabSize() const = 0;
};

} // namespace attnscope::core
