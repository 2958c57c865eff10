// UTF-8 repair, excerpts and numbers for messages.
#include "util/message_text.h"

#include <algorithm>
#include <cstdio>

namespace attnscope::core {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

// Length of the well-formed character starting at s[i] (1-4), or 0 when none starts there.
std::size_t characterLength(std::string_view s, std::size_t i)
{
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char c = b(0);
    if (c < 0x80)
        return 1;
    std::size_t n = 0;
    unsigned char low = 0x80, high = 0xBF; // the allowed range of the second byte (RFC 3629's table)
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            low = 0xA0; // no overlong forms
        if (c == 0xED)
            high = 0x9F; // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            low = 0x90;
        if (c == 0xF4)
            high = 0x8F; // nothing past U+10FFFF
    } else {
        return 0;
    }
    if (i + n > s.size() || b(1) < low || b(1) > high)
        return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (b(k) < 0x80 || b(k) > 0xBF)
            return 0;
    return n;
}

} // namespace

std::string bytesSpelled(std::string_view s)
{
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        const auto n = characterLength(s, i);
        if (n) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            const auto b = static_cast<unsigned char>(s[i++]);
            out += std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
        }
    }
    return out;
}

std::string validUtf8(std::string_view s)
{
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        if (const auto n = characterLength(s, i)) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            out.append(kReplacement);
            ++i;
        }
    }
    return out;
}

std::string excerpt(std::string_view s, std::size_t maxBytes)
{
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        const auto n = characterLength(s, i);
        const auto piece = n ? s.substr(i, n) : kReplacement;
        if (out.size() + piece.size() > maxBytes)
            return out + "...";
        out.append(piece);
        i += n ? n : 1;
    }
    return out;
}

std::string formatNumber(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string someOf(const std::vector<long long>& numbers, long long total)
{
    constexpr std::size_t kShown = 5;
    std::string out;
    for (std::size_t i = 0; i < numbers.size() && i < kShown; ++i)
        out += (i ? ", " : "") + std::to_string(numbers[i]);
    const long long named = static_cast<long long>(std::min(numbers.size(), kShown));
    if (total < 0)
        total = static_cast<long long>(numbers.size());
    if (total > named)
        out += " and " + std::to_string(total - named) + " more";
    return out;
}

} // namespace attnscope::core
