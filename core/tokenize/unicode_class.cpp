// Unicode tables lookups (binary search) and NFC.
#include "tokenize/unicode_class.h"

#include <algorithm>
#include <iterator>

namespace attnscope::core {

namespace {
struct CategoryRange {
    char32_t lo, hi;
    std::uint8_t cat;
};
struct CccRange {
    char32_t lo, hi;
    std::uint8_t ccc;
};
struct Decomposition {
    char32_t cp, first, second;
};
struct Composition {
    char32_t first, second, composed;
};
#include "tokenize/unicode_tables.inc"

// Hangul syllables compose and decompose by formula.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr int kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

int combiningClass(char32_t cp)
{
    const auto it = std::upper_bound(std::begin(kCombiningClassRanges), std::end(kCombiningClassRanges), cp,
                                     [](char32_t c, const CccRange& r) { return c < r.lo; });
    return it != std::begin(kCombiningClassRanges) && cp <= std::prev(it)->hi ? std::prev(it)->ccc : 0;
}

void decompose(char32_t cp, std::uint32_t begin, std::uint32_t end, std::vector<TextUnit>& out)
{
    if (cp >= kSBase && cp < kSBase + kSCount) {
        const int s = static_cast<int>(cp - kSBase);
        out.push_back({kLBase + static_cast<char32_t>(s / kNCount), begin, end});
        out.push_back({kVBase + static_cast<char32_t>((s % kNCount) / kTCount), begin, end});
        if (s % kTCount)
            out.push_back({kTBase + static_cast<char32_t>(s % kTCount), begin, end});
        return;
    }
    const auto it = std::lower_bound(std::begin(kDecompositions), std::end(kDecompositions), cp,
                                     [](const Decomposition& d, char32_t c) { return d.cp < c; });
    if (it == std::end(kDecompositions) || it->cp != cp) {
        out.push_back({cp, begin, end});
        return;
    }
    decompose(it->first, begin, end, out);
    if (it->second)
        decompose(it->second, begin, end, out);
}

char32_t compose(char32_t a, char32_t b)
{
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
        return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
        return a + (b - kTBase);
    const auto it = std::lower_bound(std::begin(kCompositions), std::end(kCompositions), std::pair{a, b},
                                     [](const Composition& c, std::pair<char32_t, char32_t> k) {
                                         return std::pair{c.first, c.second} < k;
                                     });
    return it != std::end(kCompositions) && it->first == a && it->second == b ? it->composed : 0;
}
// Canonical order: a run of non-starters is sorted by combining class (stable).
void canonicalOrder(std::vector<TextUnit>& d)
{
    for (std::size_t i = 0; i < d.size();) {
        if (combiningClass(d[i].cp) == 0) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < d.size() && combiningClass(d[j].cp) != 0)
            ++j;
        std::stable_sort(d.begin() + static_cast<std::ptrdiff_t>(i), d.begin() + static_cast<std::ptrdiff_t>(j),
                         [](const TextUnit& a, const TextUnit& b) { return combiningClass(a.cp) < combiningClass(b.cp); });
        i = j;
    }
}
} // namespace

GeneralCategory generalCategory(char32_t cp)
{
    const auto it = std::upper_bound(std::begin(kCategoryRanges), std::end(kCategoryRanges), cp,
                                     [](char32_t c, const CategoryRange& r) { return c < r.lo; });
    if (it != std::begin(kCategoryRanges) && cp <= std::prev(it)->hi)
        return static_cast<GeneralCategory>(std::prev(it)->cat);
    return GeneralCategory::Cn;
}

std::uint32_t categoryGroupMask(char group)
{
    using G = GeneralCategory;
    auto bits = [](std::initializer_list<G> gs) {
        std::uint32_t m = 0;
        for (G g : gs)
            m |= categoryBit(g);
        return m;
    };
    switch (group) {
    case 'L': return bits({G::Lu, G::Ll, G::Lt, G::Lm, G::Lo});
    case 'M': return bits({G::Mn, G::Mc, G::Me});
    case 'N': return bits({G::Nd, G::Nl, G::No});
    case 'P': return bits({G::Pc, G::Pd, G::Ps, G::Pe, G::Pi, G::Pf, G::Po});
    case 'S': return bits({G::Sm, G::Sc, G::Sk, G::So});
    case 'Z': return bits({G::Zs, G::Zl, G::Zp});
    case 'C': return bits({G::Cc, G::Cf, G::Cs, G::Co, G::Cn});
    default: return 0;
    }
}

bool isWhiteSpace(char32_t cp)
{
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool isLetter(char32_t cp)
{
    if (cp < 0x80)
        return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
    return categoryGroupMask('L') & categoryBit(generalCategory(cp));
}

bool isNumber(char32_t cp)
{
    if (cp < 0x80)
        return cp >= '0' && cp <= '9';
    return categoryGroupMask('N') & categoryBit(generalCategory(cp));
}

std::vector<TextUnit> toLower(const std::vector<TextUnit>& units)
{
    std::vector<TextUnit> out;
    out.reserve(units.size());
    for (const auto& u : units) {
        if (u.cp < 0x80) {
            out.push_back({u.cp >= 'A' && u.cp <= 'Z' ? u.cp + 0x20 : u.cp, u.begin, u.end});
            continue;
        }
        const auto it = std::lower_bound(std::begin(kLowerCase), std::end(kLowerCase), u.cp,
                                         [](const Decomposition& d, char32_t c) { return d.cp < c; });
        if (it == std::end(kLowerCase) || it->cp != u.cp) {
            out.push_back(u);
            continue;
        }
        out.push_back({it->first, u.begin, u.end});
        if (it->second)
            out.push_back({it->second, u.begin, u.end});
    }
    return out;
}

std::vector<TextUnit> toNfd(const std::vector<TextUnit>& units)
{
    std::vector<TextUnit> d;
    d.reserve(units.size());
    for (const auto& u : units)
        decompose(u.cp, u.begin, u.end, d);
    canonicalOrder(d);
    return d;
}

std::vector<TextUnit> toNfc(const std::vector<TextUnit>& units)
{
    std::vector<TextUnit> d;
    d.reserve(units.size());
    for (const auto& u : units)
        decompose(u.cp, u.begin, u.end, d);
    canonicalOrder(d);
    // Canonical composition: a character joins the last starter unless a character between them blocks it (a
    // starter, or a mark of the same or a higher combining class).
    std::vector<TextUnit> out;
    out.reserve(d.size());
    if (d.empty())
        return out;
    out.push_back(d.front());
    std::size_t starter = 0;
    int lastClass = combiningClass(d.front().cp) == 0 ? 0 : 256; // a text may start with a mark: it composes with nothing
    for (std::size_t i = 1; i < d.size(); ++i) {
        const TextUnit& u = d[i];
        const int cc = combiningClass(u.cp);
        const char32_t composite = lastClass == 256 ? 0 : compose(out[starter].cp, u.cp);
        if (composite && (lastClass < cc || lastClass == 0)) {
            auto& s = out[starter];
            s.cp = composite;
            s.begin = std::min(s.begin, u.begin);
            s.end = std::max(s.end, u.end);
            continue;
        }
        if (cc == 0)
            starter = out.size();
        lastClass = cc;
        out.push_back(u);
    }
    return out;
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
    // Overlong forms, surrogates and values beyond U+10FFFF are invalid.
    static constexpr char32_t minimum[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < minimum[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0xFFFD;
    len = static_cast<std::size_t>(extra) + 1;
    return cp;
}

void appendUtf8(std::string& out, char32_t cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

std::string toUtf8(char32_t cp)
{
    std::string s;
    appendUtf8(s, cp);
    return s;
}

bool isValidUtf8(std::string_view s)
{
    for (std::size_t i = 0; i < s.size();) {
        std::size_t len;
        const char32_t cp = decodeUtf8(s, i, len);
        if (cp == 0xFFFD && len == 1 && static_cast<unsigned char>(s[i]) >= 0x80)
            return false;
        i += len;
    }
    return true;
}

} // namespace attnscope::core
