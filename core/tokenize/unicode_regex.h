// A small backtracking regular-expression engine over code points, for the pre-tokenizer patterns of Hugging Face
// tokenizer.json files and GGUF vocabularies (GPT-2, Llama 3, Qwen2, ...). Perl/Oniguruma semantics: leftmost-first
// alternation, greedy / lazy / possessive quantifiers, \p{..} general categories, \s = Unicode White_Space,
// (?i:..) groups (ASCII and Latin-1 case folding), (?=..) and (?!..) lookahead, ^ and $.
// std::regex has no Unicode classes, hence this. Repeats of a single character class run in a loop, so a 1 MB word
// matched by \p{L}+ costs linear time and no recursion depth.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnscope::core {

class UnicodeRegex {
public:
    // Throws Error(BadJson) with the pattern and the position of the problem when it cannot be compiled.
    explicit UnicodeRegex(std::string_view pattern);

    // Length in code points of the match starting at `pos` of `text`, or -1 when none starts there.
    int matchAt(const std::u32string& text, int pos) const;
    // Every non-overlapping match, left to right, as [begin, end) code point ranges (empty matches skipped).
    std::vector<std::pair<int, int>> findAll(const std::u32string& text) const;
    const std::string& pattern() const { return m_pattern; }

    struct CharSet {
        std::vector<std::pair<char32_t, char32_t>> ranges;
        std::uint32_t categories = 0; // general category bits
        bool space = false;           // \s
        bool word = false;            // \w
        bool digit = false;           // \d
        std::vector<CharSet> excluded; // items like \S, \P{L} inside a class: match what they do not
        bool negated = false;
        bool any = false;              // . (everything but \n)
        bool matches(char32_t c) const;
    };
    struct Node {
        enum class Kind { Set, Seq, Alt, Repeat, LookAhead, Start, End } kind = Kind::Seq;
        CharSet set;
        std::vector<int> kids;
        int min = 1, max = 1;
        enum class Mode { Greedy, Lazy, Possessive } mode = Mode::Greedy;
        bool negate = false; // negative lookahead
    };

private:
    friend class RegexParser;
    friend class RegexMatcher;
    std::string m_pattern;
    std::vector<Node> m_nodes;
    int m_root = -1;
};

} // namespace attnscope::core
