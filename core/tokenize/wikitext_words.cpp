// wikiTextWords: one pass over the characters of a line, then the word-final period rule over the words.
#include "tokenize/wikitext_words.h"

#include "tokenize/unicode_class.h"

#include <set>

namespace attnscope::core {

namespace {

struct Char {
    char32_t cp;
    std::size_t begin, end;
};

bool alnum(char32_t c) { return isLetter(c) || isNumber(c); }
bool digit(char32_t c) { return isNumber(c); }

// Moses's English nonbreaking prefixes (abbreviations whose period stays), and those that stay only before a number.
const std::set<std::string>& nonbreaking()
{
    static const std::set<std::string> words = {
        "Adj", "Adm", "Adv", "Asst", "Bart", "Bldg", "Brig", "Bros", "Capt", "Cmdr", "Col", "Comdr", "Con", "Corp",
        "Cpl", "DR", "Dr", "Drs", "Ens", "Gen", "Gov", "Hon", "Hr", "Hosp", "Insp", "Lt", "MM", "MR", "MRS", "MS",
        "Maj", "Messrs", "Mlle", "Mme", "Mr", "Mrs", "Ms", "Msgr", "Op", "Ord", "Pfc", "Ph", "Prof", "Pvt", "Rep",
        "Reps", "Res", "Rev", "Rt", "Sen", "Sens", "Sfc", "Sgt", "Sr", "St", "Supt", "Surg", "v", "vs", "i.e", "rev",
        "e.g", "Jan", "Feb", "Mar", "Apr", "Jun", "Jul", "Aug", "Sep", "Sept", "Oct", "Nov", "Dec", "Jr", "Ltd", "Inc",
        "Co", "Mt", "Ft", "etc", "al", "cf", "ca", "approx"};
    return words;
}
const std::set<std::string>& numericOnly()
{
    static const std::set<std::string> words = {"No", "Nos", "Art", "Nr", "pp"};
    return words;
}

bool isUpperInitial(const std::string& w)
{
    std::size_t len = 0;
    const char32_t c = decodeUtf8(w, 0, len);
    return len == w.size() && generalCategory(c) == GeneralCategory::Lu;
}

} // namespace

std::vector<WordSpan> wikiTextWords(std::string_view line, std::size_t offset)
{
    std::vector<Char> chars;
    for (std::size_t i = 0; i < line.size();) {
        std::size_t len = 0;
        char32_t c = decodeUtf8(line, i, len);
        // Moses's punctuation normalisation: typographic quotes and apostrophes as ASCII.
        if (c == U'\u2019' || c == U'\u2018' || c == U'\u00B4' || c == U'`')
            c = U'\'';
        else if (c == U'\u201C' || c == U'\u201D' || c == U'\u201E')
            c = U'"';
        chars.push_back({c, offset + i, offset + i + len});
        i += len;
    }
    std::vector<WordSpan> words;
    WordSpan cur;
    bool open = false;
    auto flush = [&] {
        if (open && !cur.text.empty())
            words.push_back(cur);
        cur = {};
        open = false;
    };
    auto add = [&](const Char& ch) {
        if (!open) {
            cur.begin = ch.begin;
            open = true;
        }
        appendUtf8(cur.text, ch.cp);
        cur.end = ch.end;
    };
    auto alone = [&](std::string text, const Char& ch) {
        flush();
        words.push_back({std::move(text), ch.begin, ch.end});
    };
    const std::size_t n = chars.size();
    // Specials such as <unk> (WikiText's own unknown word, typed back in): where each starting at i ends.
    std::vector<std::size_t> specialEnd(n, 0);
    std::vector<bool> inSpecial(n, false);
    for (std::size_t i = 0; i < n; ++i) {
        if (chars[i].cp != U'<')
            continue;
        std::size_t j = i + 1;
        while (j < n && j - i <= 16 && (isLetter(chars[j].cp) || chars[j].cp == U'_'))
            ++j;
        if (j < n && j > i + 1 && chars[j].cp == U'>') {
            specialEnd[i] = j;
            for (std::size_t k = i; k <= j; ++k)
                inSpecial[k] = true;
            i = j;
        }
    }
    // Letters and digits, and a special's brackets: what a joining hyphen or a clitic sits between.
    auto wordChar = [&](std::size_t k, bool lettersOnly) {
        return k < n && (inSpecial[k] || (lettersOnly ? isLetter(chars[k].cp) : alnum(chars[k].cp)));
    };
    for (std::size_t i = 0; i < n; ++i) {
        const char32_t c = chars[i].cp;
        const char32_t prev = i > 0 ? chars[i - 1].cp : U' ';
        const char32_t next = i + 1 < n ? chars[i + 1].cp : U' ';
        if (specialEnd[i] > i) { // a vocabulary special such as <unk> or <eos> stays whole
            flush();
            for (std::size_t k = i; k <= specialEnd[i]; ++k)
                add(chars[k]);
            flush();
            i = specialEnd[i];
            continue;
        }
        if (isWhiteSpace(c)) {
            flush();
        } else if (alnum(c)) {
            add(chars[i]);
        } else if (c == U'-') {
            if (i > 0 && wordChar(i - 1, false) && wordChar(i + 1, false))
                alone("@-@", chars[i]);
            else
                add(chars[i]); // Moses leaves other hyphens inside their word ("--", "-5")
        } else if (c == U',') {
            if (digit(prev) && digit(next))
                alone("@,@", chars[i]);
            else
                alone(",", chars[i]);
        } else if (c == U'.') {
            if (digit(prev) && digit(next))
                alone("@.@", chars[i]);
            else
                add(chars[i]); // a word-final period is decided below
        } else if (c == U'\'') {
            if (i > 0 && wordChar(i - 1, true) && isLetter(next)) { // "don't" -> "don" "'t"; "John's" -> "John" "'s"
                flush();
                add(chars[i]);
            } else if (digit(prev) && next == U's') { // "1990's" -> "1990" "'s"
                flush();
                add(chars[i]);
            } else {
                alone("'", chars[i]);
            }
        } else {
            std::string s;
            appendUtf8(s, c);
            alone(s, chars[i]);
        }
    }
    flush();

    // A word ending in '.' keeps it when it is an abbreviation; otherwise the period is a word of its own.
    std::vector<WordSpan> out;
    for (std::size_t w = 0; w < words.size(); ++w) {
        const WordSpan& word = words[w];
        if (word.text.size() < 2 || word.text.back() != '.' || word.text == "..") {
            out.push_back(word);
            continue;
        }
        std::string prefix = word.text.substr(0, word.text.size() - 1);
        while (!prefix.empty() && prefix.back() == '.')
            prefix.pop_back();
        bool hasLetter = false;
        for (std::size_t i = 0; i < prefix.size();) {
            std::size_t len = 0;
            if (isLetter(decodeUtf8(prefix, i, len)))
                hasLetter = true;
            i += len;
        }
        const WordSpan* after = w + 1 < words.size() ? &words[w + 1] : nullptr;
        std::size_t len = 0;
        const bool nextLower = after && generalCategory(decodeUtf8(after->text, 0, len)) == GeneralCategory::Ll;
        const bool nextNumber = after && isNumber(decodeUtf8(after->text, 0, len));
        const bool keep = (prefix.find('.') != std::string::npos && hasLetter) || nonbreaking().count(prefix) ||
                          isUpperInitial(prefix) || nextLower || (numericOnly().count(prefix) && nextNumber);
        if (keep || prefix.empty()) {
            out.push_back(word);
            continue;
        }
        out.push_back({word.text.substr(0, word.text.size() - 1), word.begin, word.end - 1});
        out.push_back({".", word.end - 1, word.end});
    }
    return out;
}

} // namespace attnscope::core
