// UnicodeRegex: a recursive-descent parser into a node array, and a continuation-passing backtracking matcher.
#include "tokenize/unicode_regex.h"

#include "tokenize/unicode_class.h"
#include "util/error.h"

#include <algorithm>

namespace attnscope::core {

namespace {

// A non-owning callable reference (continuations live on the caller's stack for the duration of the call).
template <typename Sig> class FnRef;
template <typename R, typename... A> class FnRef<R(A...)> {
public:
    template <typename F>
    FnRef(F& f) // NOLINT: implicit on purpose
        : m_obj(&f)
        , m_call([](void* o, A... a) -> R { return (*static_cast<F*>(o))(a...); })
    {
    }
    R operator()(A... a) const { return m_call(m_obj, a...); }

private:
    void* m_obj;
    R (*m_call)(void*, A...);
};

// Simple case folding: ASCII and Latin-1 letters (what the tokenizer patterns' (?i:'s|'t|...) need).
char32_t otherCase(char32_t c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 0xE0 && c <= 0xFE && c != 0xF7))
        return c - 0x20;
    if ((c >= 'A' && c <= 'Z') || (c >= 0xC0 && c <= 0xDE && c != 0xD7))
        return c + 0x20;
    return c;
}

std::uint32_t categoryMask(const std::string& name)
{
    if (name.size() == 1)
        return categoryGroupMask(name[0]);
    static const char* names[] = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
                                  "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
    for (unsigned i = 0; i < 30; ++i)
        if (name == names[i])
            return 1u << i;
    static const std::pair<const char*, char> longNames[] = {{"Letter", 'L'},      {"Mark", 'M'},   {"Number", 'N'},
                                                             {"Punctuation", 'P'}, {"Symbol", 'S'}, {"Separator", 'Z'},
                                                             {"Other", 'C'}};
    for (const auto& [n, g] : longNames)
        if (name == n)
            return categoryGroupMask(g);
    if (name == "L&" || name == "LC")
        return categoryBit(GeneralCategory::Lu) | categoryBit(GeneralCategory::Ll) | categoryBit(GeneralCategory::Lt);
    return 0;
}

} // namespace

bool UnicodeRegex::CharSet::matches(char32_t c) const
{
    bool in = any ? c != '\n' : false;
    if (!in)
        for (const auto& [lo, hi] : ranges)
            if (c >= lo && c <= hi) {
                in = true;
                break;
            }
    if (!in && space)
        in = isWhiteSpace(c);
    if (!in && digit)
        in = generalCategory(c) == GeneralCategory::Nd;
    if (!in && word)
        in = c == '_' || isLetter(c) || isNumber(c) ||
             (categoryGroupMask('M') & categoryBit(generalCategory(c))) ||
             generalCategory(c) == GeneralCategory::Pc;
    if (!in && categories)
        in = (categories & categoryBit(generalCategory(c))) != 0;
    if (!in)
        for (const auto& e : excluded)
            if (!e.matches(c)) {
                in = true;
                break;
            }
    return in != negated;
}

// ------------------------------------------------------------------------------------------------------------------
class RegexParser {
public:
    RegexParser(UnicodeRegex& re, std::string_view pattern)
        : m_re(re)
    {
        for (std::size_t i = 0; i < pattern.size();) {
            std::size_t len;
            m_cp.push_back(decodeUtf8(pattern, i, len));
            i += len;
        }
    }

    int parse()
    {
        const int root = alternation(false);
        if (m_pos < m_cp.size())
            fail("unbalanced ')'");
        return root;
    }

private:
    [[noreturn]] void fail(const std::string& what) const
    {
        throw Error(ErrorCode::BadJson,
                    "cannot use the regular expression " + m_re.m_pattern + ": " + what + " at character " +
                        std::to_string(m_pos));
    }
    bool more() const { return m_pos < m_cp.size(); }
    char32_t peek() const { return m_cp[m_pos]; }
    char32_t next()
    {
        if (!more())
            fail("unexpected end");
        return m_cp[m_pos++];
    }
    bool eat(char32_t c)
    {
        if (more() && peek() == c) {
            ++m_pos;
            return true;
        }
        return false;
    }
    int add(UnicodeRegex::Node n)
    {
        m_re.m_nodes.push_back(std::move(n));
        return static_cast<int>(m_re.m_nodes.size()) - 1;
    }

    int alternation(bool icase)
    {
        UnicodeRegex::Node alt;
        alt.kind = UnicodeRegex::Node::Kind::Alt;
        alt.kids.push_back(sequence(icase));
        while (eat('|'))
            alt.kids.push_back(sequence(icase));
        return alt.kids.size() == 1 ? alt.kids.front() : add(std::move(alt));
    }

    int sequence(bool icase)
    {
        UnicodeRegex::Node seq;
        seq.kind = UnicodeRegex::Node::Kind::Seq;
        while (more() && peek() != '|' && peek() != ')')
            seq.kids.push_back(quantified(icase));
        return add(std::move(seq));
    }

    int quantified(bool icase)
    {
        int atom = this->atom(icase);
        while (more()) {
            int lo, hi;
            const char32_t c = peek();
            if (c == '*') { lo = 0; hi = -1; ++m_pos; }
            else if (c == '+') { lo = 1; hi = -1; ++m_pos; }
            else if (c == '?') { lo = 0; hi = 1; ++m_pos; }
            else if (c == '{' && braceCount(lo, hi)) {}
            else break;
            UnicodeRegex::Node rep;
            rep.kind = UnicodeRegex::Node::Kind::Repeat;
            rep.kids = {atom};
            rep.min = lo;
            rep.max = hi;
            if (eat('?'))
                rep.mode = UnicodeRegex::Node::Mode::Lazy;
            else if (eat('+'))
                rep.mode = UnicodeRegex::Node::Mode::Possessive;
            atom = add(std::move(rep));
        }
        return atom;
    }

    // {n}, {n,}, {n,m}; leaves the position unchanged (a literal '{') when it is not a count.
    bool braceCount(int& lo, int& hi)
    {
        const std::size_t start = m_pos;
        ++m_pos;
        auto number = [&](int& out) {
            const std::size_t s = m_pos;
            long v = 0;
            while (more() && peek() >= '0' && peek() <= '9' && v < 100000)
                v = v * 10 + (next() - '0');
            out = static_cast<int>(v);
            return m_pos > s;
        };
        if (!number(lo)) {
            m_pos = start;
            return false;
        }
        hi = lo;
        if (eat(',')) {
            if (!number(hi))
                hi = -1;
        }
        if (!eat('}')) {
            m_pos = start;
            return false;
        }
        if (hi >= 0 && hi < lo)
            fail("{n,m} with m < n");
        return true;
    }

    int atom(bool icase)
    {
        const char32_t c = next();
        UnicodeRegex::Node n;
        n.kind = UnicodeRegex::Node::Kind::Set;
        switch (c) {
        case '(': {
            bool groupIcase = icase;
            int result;
            if (eat('?')) {
                if (eat(':')) {
                    result = alternation(icase);
                } else if (eat('=') || (peek() == '!' && (++m_pos, true))) {
                    const bool negative = m_cp[m_pos - 1] == '!';
                    UnicodeRegex::Node look;
                    look.kind = UnicodeRegex::Node::Kind::LookAhead;
                    look.negate = negative;
                    look.kids = {alternation(icase)};
                    result = add(std::move(look));
                } else if (eat('i')) {
                    groupIcase = true;
                    if (eat(')')) // (?i) for the rest: not used by tokenizers; keep simple
                        fail("(?i) without a group is not supported; use (?i:...)");
                    if (!eat(':'))
                        fail("expected ':' after (?i");
                    result = alternation(groupIcase);
                } else {
                    fail("unsupported group construct");
                }
            } else {
                result = alternation(icase); // capturing groups match like non-capturing ones
            }
            if (!eat(')'))
                fail("missing ')'");
            return result;
        }
        case '[': n.set = charClass(icase); return add(std::move(n));
        case '.': n.set.any = true; return add(std::move(n));
        case '^': n.kind = UnicodeRegex::Node::Kind::Start; return add(std::move(n));
        case '$': n.kind = UnicodeRegex::Node::Kind::End; return add(std::move(n));
        case '\\': escape(n.set, false); break;
        case ')': case '|': case '*': case '+': case '?': fail("nothing to repeat or group");
        default: n.set.ranges.push_back({c, c}); break;
        }
        if (icase)
            fold(n.set);
        return add(std::move(n));
    }

    static void fold(UnicodeRegex::CharSet& set)
    {
        std::vector<std::pair<char32_t, char32_t>> extra;
        for (const auto& [lo, hi] : set.ranges)
            for (char32_t c = lo; c <= hi && c <= 0xFF; ++c)
                if (otherCase(c) != c)
                    extra.push_back({otherCase(c), otherCase(c)});
        set.ranges.insert(set.ranges.end(), extra.begin(), extra.end());
    }

    UnicodeRegex::CharSet charClass(bool icase)
    {
        UnicodeRegex::CharSet set;
        if (eat('^'))
            set.negated = true;
        bool first = true;
        while (true) {
            if (!more())
                fail("missing ']'");
            char32_t c = next();
            if (c == ']' && !first)
                break;
            first = false;
            if (c == '\\') {
                UnicodeRegex::CharSet item;
                const char32_t literal = escape(item, true);
                if (literal == 0) { // a class escape: \s, \p{L}, \S ...
                    if (item.negated) {
                        item.negated = false;
                        set.excluded.push_back(std::move(item));
                    } else {
                        set.ranges.insert(set.ranges.end(), item.ranges.begin(), item.ranges.end());
                        set.categories |= item.categories;
                        set.space = set.space || item.space;
                        set.word = set.word || item.word;
                        set.digit = set.digit || item.digit;
                    }
                    continue;
                }
                c = literal;
            }
            char32_t hi = c;
            if (more() && peek() == '-' && m_pos + 1 < m_cp.size() && m_cp[m_pos + 1] != ']') {
                ++m_pos;
                hi = next();
                if (hi == '\\') {
                    UnicodeRegex::CharSet dummy;
                    hi = escape(dummy, true);
                    if (hi == 0)
                        fail("a class escape cannot end a range");
                }
                if (hi < c)
                    fail("range out of order");
            }
            set.ranges.push_back({c, hi});
        }
        if (icase)
            fold(set);
        return set;
    }

    // After a backslash: fills `set` for class escapes and returns 0, or returns the literal code point.
    char32_t escape(UnicodeRegex::CharSet& set, bool inClass)
    {
        const char32_t c = next();
        switch (c) {
        case 'n': return literal(set, '\n', inClass);
        case 'r': return literal(set, '\r', inClass);
        case 't': return literal(set, '\t', inClass);
        case 'f': return literal(set, '\f', inClass);
        case 'v': return literal(set, '\v', inClass);
        case '0': return literal(set, 0, inClass);
        case 's': set.space = true; return 0;
        case 'S': set.space = true; set.negated = true; return 0;
        case 'd': set.digit = true; return 0;
        case 'D': set.digit = true; set.negated = true; return 0;
        case 'w': set.word = true; return 0;
        case 'W': set.word = true; set.negated = true; return 0;
        case 'p':
        case 'P': {
            std::string name;
            if (eat('{')) {
                while (more() && peek() != '}')
                    name += static_cast<char>(next());
                if (!eat('}'))
                    fail("missing '}' in \\p{...}");
            } else {
                name = static_cast<char>(next());
            }
            if (!name.empty() && name[0] == '^') { // \p{^L} = \P{L}
                name.erase(0, 1);
                set.negated = !set.negated;
            }
            const std::uint32_t mask = categoryMask(name);
            if (!mask)
                fail("unknown Unicode category \\p{" + name + "}");
            set.categories = mask;
            if (c == 'P')
                set.negated = !set.negated;
            return 0;
        }
        case 'x': {
            std::string hex;
            if (eat('{')) {
                while (more() && peek() != '}')
                    hex += static_cast<char>(next());
                if (!eat('}'))
                    fail("missing '}' in \\x{...}");
            } else {
                hex += static_cast<char>(next());
                hex += static_cast<char>(next());
            }
            return literal(set, hexValue(hex), inClass);
        }
        case 'u': {
            std::string hex;
            for (int i = 0; i < 4; ++i)
                hex += static_cast<char>(next());
            return literal(set, hexValue(hex), inClass);
        }
        default:
            if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
                fail(std::string("unsupported escape \\") + static_cast<char>(c));
            return literal(set, c, inClass); // an escaped punctuation character stands for itself
        }
    }

    // A literal character: added to `set` outside a class; inside one, returned to the class parser (0 means "a
    // class escape", so \0 cannot be used there).
    char32_t literal(UnicodeRegex::CharSet& set, char32_t c, bool inClass)
    {
        if (inClass && c == 0)
            fail("\\0 in a class is not supported");
        if (!inClass)
            set.ranges.push_back({c, c});
        return c;
    }

    char32_t hexValue(const std::string& hex)
    {
        if (hex.empty() || hex.size() > 6 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
            fail("bad hexadecimal escape");
        const auto v = std::stoul(hex, nullptr, 16);
        if (v > 0x10FFFF)
            fail("code point beyond U+10FFFF");
        return static_cast<char32_t>(v);
    }

    UnicodeRegex& m_re;
    std::vector<char32_t> m_cp;
    std::size_t m_pos = 0;
};

// ------------------------------------------------------------------------------------------------------------------
class RegexMatcher {
public:
    RegexMatcher(const UnicodeRegex& re, const std::u32string& text)
        : m_nodes(re.m_nodes)
        , m_text(text)
        , m_n(static_cast<int>(text.size()))
    {
    }
    using Cont = FnRef<bool(int)>;

    bool match(int id, int pos, Cont k) const
    {
        const UnicodeRegex::Node& node = m_nodes[static_cast<std::size_t>(id)];
        switch (node.kind) {
        case UnicodeRegex::Node::Kind::Set:
            return pos < m_n && node.set.matches(m_text[static_cast<std::size_t>(pos)]) && k(pos + 1);
        case UnicodeRegex::Node::Kind::Seq:
            return sequence(node, 0, pos, k);
        case UnicodeRegex::Node::Kind::Alt:
            for (int kid : node.kids)
                if (match(kid, pos, k))
                    return true;
            return false;
        case UnicodeRegex::Node::Kind::Repeat:
            return repeat(node, pos, k);
        case UnicodeRegex::Node::Kind::LookAhead: {
            auto accept = [](int) { return true; };
            const bool found = match(node.kids.front(), pos, Cont(accept));
            return found != node.negate && k(pos);
        }
        case UnicodeRegex::Node::Kind::Start:
            return pos == 0 && k(pos);
        case UnicodeRegex::Node::Kind::End:
            return pos == m_n && k(pos);
        }
        return false;
    }

private:
    bool sequence(const UnicodeRegex::Node& node, std::size_t i, int pos, Cont k) const
    {
        if (i == node.kids.size())
            return k(pos);
        auto rest = [&](int p) { return sequence(node, i + 1, p, k); };
        return match(node.kids[i], pos, Cont(rest));
    }

    bool repeat(const UnicodeRegex::Node& node, int pos, Cont k) const
    {
        const UnicodeRegex::Node& body = m_nodes[static_cast<std::size_t>(node.kids.front())];
        const int max = node.max < 0 ? m_n - pos : std::min(node.max, m_n - pos);
        if (body.kind == UnicodeRegex::Node::Kind::Set) {
            // One character per repetition: count the run, then hand the continuation each length in turn.
            int run = 0;
            while (run < max && body.set.matches(m_text[static_cast<std::size_t>(pos + run)]))
                ++run;
            if (run < node.min)
                return false;
            switch (node.mode) {
            case UnicodeRegex::Node::Mode::Greedy:
                for (int c = run; c >= node.min; --c)
                    if (k(pos + c))
                        return true;
                return false;
            case UnicodeRegex::Node::Mode::Lazy:
                for (int c = node.min; c <= run; ++c)
                    if (k(pos + c))
                        return true;
                return false;
            case UnicodeRegex::Node::Mode::Possessive:
                return k(pos + run);
            }
            return false;
        }
        return repeatGeneral(node, 0, pos, k);
    }

    bool repeatGeneral(const UnicodeRegex::Node& node, int count, int pos, Cont k) const
    {
        const bool canStop = count >= node.min;
        const bool canGo = node.max < 0 || count < node.max;
        auto again = [&](int p) { return p != pos && repeatGeneral(node, count + 1, p, k); }; // no empty loops
        if (node.mode == UnicodeRegex::Node::Mode::Lazy) {
            if (canStop && k(pos))
                return true;
            return canGo && match(node.kids.front(), pos, Cont(again));
        }
        if (canGo && match(node.kids.front(), pos, Cont(again)))
            return true;
        return canStop && k(pos);
    }

    const std::vector<UnicodeRegex::Node>& m_nodes;
    const std::u32string& m_text;
    int m_n;
};

UnicodeRegex::UnicodeRegex(std::string_view pattern)
    : m_pattern(pattern)
{
    RegexParser parser(*this, pattern);
    m_root = parser.parse();
}

int UnicodeRegex::matchAt(const std::u32string& text, int pos) const
{
    int end = -1;
    auto accept = [&](int p) {
        end = p;
        return true;
    };
    RegexMatcher(*this, text).match(m_root, pos, RegexMatcher::Cont(accept));
    return end < 0 ? -1 : end - pos;
}

std::vector<std::pair<int, int>> UnicodeRegex::findAll(const std::u32string& text) const
{
    std::vector<std::pair<int, int>> out;
    const RegexMatcher matcher(*this, text);
    const int n = static_cast<int>(text.size());
    for (int pos = 0; pos < n;) {
        int end = -1;
        auto accept = [&](int p) {
            end = p;
            return true;
        };
        if (matcher.match(m_root, pos, RegexMatcher::Cont(accept)) && end > pos) {
            out.emplace_back(pos, end);
            pos = end;
        } else {
            ++pos;
        }
    }
    return out;
}

} // namespace attnscope::core
