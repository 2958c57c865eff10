// Text and numbers in messages. Text from files is cut at character boundaries and repaired so a message is always
// valid UTF-8 (the CLI prints messages and JSON carries them; a word cut inside a character, or a file's own invalid
// bytes, would make that output invalid); numbers keep their magnitude (std::to_string prints 1e-40 as 0.000000).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::core {

// `s` with every byte that does not begin or continue a well-formed UTF-8 character (overlong forms, surrogates and
// values past U+10FFFF included) replaced by U+FFFD.
std::string validUtf8(std::string_view s);
// `s` with every byte that does not begin or continue a well-formed UTF-8 character written as "<0xNN>": how a token
// that is part of a character (a byte-level piece, a byte-fallback byte) is spelled wherever text must be valid
// UTF-8 (JSON, Python strings, the page), as SentencePiece spells its byte pieces.
std::string bytesSpelled(std::string_view s);
// At most `maxBytes` bytes of `s` (valid UTF-8, see validUtf8), cut before a character that would not fit whole, with
// "..." added when anything was left out.
std::string excerpt(std::string_view s, std::size_t maxBytes);
// A number as a person reads it: six significant digits, exponent when tiny or huge ("1e-40", "0.5", "1e+30",
// "nan", "inf").
std::string formatNumber(double v);
// The first five of `numbers` joined by ", ", and "and N more" when `total` (default: all of them) is larger: a
// message names a few, never as many as a file chose ("shards 2, 3, 4, 5, 6 and 99999994 more").
std::string someOf(const std::vector<long long>& numbers, long long total = -1);

} // namespace attnscope::core
