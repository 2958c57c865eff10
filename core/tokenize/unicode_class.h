// UTF-8 decoding and the Unicode classes the GPT-2 pre-tokenizer needs (letter, number, white space).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnscope::core {

enum class CharClass { Letter, Number, Space, Other };

CharClass classify(char32_t cp);

// Decodes the code point at `pos`; sets `len` to its byte length. Invalid bytes decode as U+FFFD, length 1.
char32_t decodeUtf8(std::string_view s, std::size_t pos, std::size_t& len);
void appendUtf8(std::string& out, char32_t cp);
bool isValidUtf8(std::string_view s);

} // namespace attnscope::core
