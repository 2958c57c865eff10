// Unicode for the tokenizers: UTF-8 decoding, general categories and White_Space (what \p{..} and \s mean in the
// pre-tokenizer patterns, Oniguruma's meaning), lower-casing, and NFC / NFD normalisation that keeps track of where each character came
// from. Tables are generated from Unicode by tools/gen_unicode_tables.py.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::core {

enum class GeneralCategory : std::uint8_t {
    Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po, Sm, Sc, Sk, So, Zs, Zl, Zp, Cc, Cf, Cs, Co, Cn,
};
GeneralCategory generalCategory(char32_t cp);
// Bit of a category in a mask (1u << index).
constexpr std::uint32_t categoryBit(GeneralCategory c) { return 1u << static_cast<unsigned>(c); }
// Masks of the one-letter groups: L, M, N, P, S, Z, C.
std::uint32_t categoryGroupMask(char group);
// Unicode White_Space (U+0085 is white space, U+FEFF is not), as Oniguruma's \s.
bool isWhiteSpace(char32_t cp);
bool isLetter(char32_t cp);
bool isNumber(char32_t cp);

// Decodes the code point at `pos`; sets `len` to its byte length. Invalid bytes decode as U+FFFD, length 1.
char32_t decodeUtf8(std::string_view s, std::size_t pos, std::size_t& len);
void appendUtf8(std::string& out, char32_t cp);
std::string toUtf8(char32_t cp);
bool isValidUtf8(std::string_view s);

// A character of a text being tokenized, and the bytes [begin, end) of the original text it stands for.
struct TextUnit {
    char32_t cp = 0;
    std::uint32_t begin = 0;
    std::uint32_t end = 0;
};
// NFC (canonical decomposition, canonical order, canonical composition); a composed character covers the
// original bytes of everything it was composed from.
std::vector<TextUnit> toNfc(const std::vector<TextUnit>& units);
// NFD (canonical decomposition, canonical order); every part covers its character's bytes.
std::vector<TextUnit> toNfd(const std::vector<TextUnit>& units);
// Full Unicode lower-casing (U+0130 becomes i + U+0307); every part covers its character's bytes.
std::vector<TextUnit> toLower(const std::vector<TextUnit>& units);

} // namespace attnscope::core
