// Unicode classification by binary search over generated range tables.
#include "tokenize/unicode_class.h"

#include <algorithm>
#include <iterator>

namespace attnscope::core {

namespace {
struct CodepointRange {
    char32_t lo, hi;
};
#include "tokenize/unicode_tables.inc"

template <std::size_t N>
bool inRanges(const CodepointRange (&table)[N], char32_t cp)
{
    const auto it = std::upper_bound(std::begin(table), std::end(table), cp,
                                     [](char32_t c, const CodepointRange& r) { return c < r.lo; });
    return it != std::begin(table) && cp <= std::prev(it)->hi;
}
} // namespace

CharClass classify(char32_t cp)
{
    if (cp < 0x80) { // fast path for ASCII
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
            return CharClass::Letter;
        if (cp >= '0' && cp <= '9')
            return CharClass::Number;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D))
            return CharClass::Space;
        return CharClass::Other;
    }
    if (inRanges(kLetterRanges, cp))
        return CharClass::Letter;
    if (inRanges(kNumberRanges, cp))
        return CharClass::Number;
    if (inRanges(kSpaceRanges, cp))
        return CharClass::Space;
    return CharClass::Other;
}

char32_t decodeUtf8(std::string_view s, std::size_t pos, std::size_t& len)
{
    const auto b0 = static_cast<unsigned char>(s[pos]);
    len = 1;
    if (b0 < 0x80)
        return b0;
    int extra;
    char32_t cp;
    if ((b0 & 0xE0) == 0xC0) {
        extra = 1;
        cp = b0 & 0x1F;
    } else if ((b0 & 0xF0) == 0xE0) {
        extra = 2;
        cp = b0 & 0x0F;
    } else if ((b0 & 0xF8) == 0xF0) {
        extra = 3;
        cp = b0 & 0x07;
    } else {
        return 0xFFFD;
    }
    if (pos + static_cast<std::size_t>(extra) >= s.size())
        return 0xFFFD; // truncated sequence
    for (int i = 1; i <= extra; ++i) {
        const auto b = static_cast<unsigned char>(s[pos + static_cast<std::size_t>(i)]);
        if ((b & 0xC0) != 0x80)
            return 0xFFFD;
        cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr char32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0xFFFD;
    len = static_cast<std::size_t>(extra) + 1;
    return cp;
}

void appendUtf8(std::string& out, char32_t cp)
{
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

bool isValidUtf8(std::string_view s)
{
    for (std::size_t i = 0; i < s.size();) {
        std::size_t len;
        const char32_t cp = decodeUtf8(s, i, len);
        if (cp == 0xFFFD && !(len == 3 && s.substr(i, 3) == "\xEF\xBF\xBD"))
            return false;
        i += len;
    }
    return true;
}

} // namespace attnscope::core
