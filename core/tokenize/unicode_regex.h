// Regular expressions for the pre-tokenizer patterns of Hugging Face tokenizer.json files and GGUF vocabularies
// (GPT-2, Llama 3, Qwen2, ...), run by Oniguruma, the engine the Rust tokenizers library itself uses, so \s, \p{L},
// (?i:..) and lookahead mean exactly what they mean for the reference ids. Patterns and texts are UTF-32 code points
// here. Hostile input is bounded: patterns longer than kMaxPatternBytes or nested deeper than Oniguruma's parse limit
// are refused when compiled, and a match that would backtrack past kRetryLimit steps stops with an error naming the
// pattern instead of hanging.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnscope::core {

class UnicodeRegex {
public:
    static constexpr std::size_t kMaxPatternBytes = 64 * 1024;
    static constexpr unsigned long kRetryLimit = 20'000'000; // backtracking steps per match; a search's grows with its text

    // Throws Error(BadJson) with the pattern and Oniguruma's reason when it cannot be compiled. `file` and `key` say
    // where the pattern came from (a tokenizer.json and its key path; empty for built-in patterns): every error,
    // compiling or matching, names them.
    explicit UnicodeRegex(std::string_view pattern, std::string file = {}, std::string key = {});
    ~UnicodeRegex();
    UnicodeRegex(const UnicodeRegex&) = delete;
    UnicodeRegex& operator=(const UnicodeRegex&) = delete;

    // Length in code points of the match starting at `pos` of `text`, or -1 when none starts there.
    int matchAt(const std::u32string& text, int pos) const;
    // Every non-overlapping match, left to right, as [begin, end) code point ranges (empty matches skipped).
    // Throws Error(BadInput) naming the pattern when the text makes it backtrack past kRetryLimit.
    std::vector<std::pair<int, int>> findAll(const std::u32string& text) const;
    const std::string& pattern() const { return m_pattern; }

private:
    struct Compiled;
    std::string m_pattern;
    std::string m_file, m_key;
    std::unique_ptr<Compiled> m_compiled;
};

} // namespace attnscope::core
