// Typed text split into words the way WikiText was (the corpus Transformer-XL's WT103 model learnt from): the Moses
// tokenizer's English rules with aggressive dash splitting, as Hugging Face's TransfoXLTokenizer applies them, then
// its number rule. Punctuation is split off ("km," -> "km" ","), a hyphen between letters or digits becomes "@-@",
// a comma or period between digits "@,@" / "@.@", English clitics part from their word ("don't" -> "don" "'t",
// "John's" -> "John" "'s"), and a word-final period is split off unless the word is an abbreviation (a nonbreaking
// prefix such as "Mr." or "St.", a word with an inner period such as "U.S.", or one followed by a lower-case word).
// Written from the rules' descriptions and checked against WikiText's own spelling; not a copy of either.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace attnscope::core {

struct WordSpan {
    std::string text;        // the word as the vocabulary spells it ("@-@" for a joining hyphen)
    std::size_t begin = 0;   // bytes of the typed text it stands for
    std::size_t end = 0;
};

// Words of one line (no '\n' inside); spans index into `line`, shifted by `offset`.
std::vector<WordSpan> wikiTextWords(std::string_view line, std::size_t offset = 0);

} // namespace attnscope::core
