// The token grid over other units, as encoder analyses read it: special tokens left out with every row renormalised
// (Clark et al. 2019 show [SEP] collecting most of BERT's attention, which hides the rest), and whole words instead
// of subword pieces (attention to a word summed over its pieces, attention from a word averaged over its pieces, as
// Clark et al. do). Works for every tokenizer: words are found from the tokens' spans and texts.
#pragma once

#include "analysis/attention_grid.h"
#include "tokenize/tokenizer.h"

#include <string_view>
#include <vector>

namespace attnscope::core {

// A special token the model's template added ([CLS], [SEP], <s>, BOS): it has no span in the text.
bool isSpecialToken(const Token& token);

// The word of each token (0, 1, ...): a piece continues the word before it unless white space (a gap between spans,
// or a leading space in its text as byte-level and SentencePiece pieces carry it), punctuation or a special token
// separates them.
std::vector<int> wordOfTokens(const std::vector<Token>& tokens);

// The tokens and text a grid's rows or its columns are of (a grid over two streams has one of each: a cross-attention
// site's target rows and source columns).
struct GridAxis {
    const std::vector<Token>& tokens;
    std::string_view text;
};

// The grid without its special tokens' rows and columns; with `renormalise`, each row's remaining values are scaled
// to sum to 1 (probabilities; raw scores are kept as they are). The highlight is recomputed for `topFraction`.
AttentionGrid withoutSpecialTokens(const AttentionGrid& grid, const GridAxis& rows, const GridAxis& cols, bool renormalise,
                                   double topFraction);
inline AttentionGrid withoutSpecialTokens(const AttentionGrid& grid, const std::vector<Token>& tokens, bool renormalise,
                                          double topFraction)
{
    return withoutSpecialTokens(grid, GridAxis{tokens, {}}, GridAxis{tokens, {}}, renormalise, topFraction);
}

// The grid over words: rows and columns are the words of its tokens (rowTokens / colTokens hold each word's first
// token, rowLabels / colLabels its text from `text`); cell (w, v) = mean over w's query pieces of the sum over v's key
// pieces (masked pieces count 0; a cell with no visible piece stays masked). With `sumKeys` false the keys are
// averaged too (raw scores).
AttentionGrid wordLevelGrid(const AttentionGrid& grid, const GridAxis& rows, const GridAxis& cols, bool sumKeys,
                            double topFraction);
inline AttentionGrid wordLevelGrid(const AttentionGrid& grid, const std::vector<Token>& tokens, std::string_view text,
                                   bool sumKeys, double topFraction)
{
    return wordLevelGrid(grid, GridAxis{tokens, text}, GridAxis{tokens, text}, sumKeys, topFraction);
}

// The sentence of each token (0, 1, ...): a sentence ends after a token whose text ends with . ! ? or … (closing
// quotes and brackets after it stay with it) or holds a line break; special tokens belong to the sentence they open
// or close. Sentences of reasoning traces (Bogdan et al. 2025, "Thought Anchors") are read this way.
std::vector<int> sentenceOfTokens(const std::vector<Token>& tokens);

// The grid over sentences: cell (s, t) = mean over s's query tokens of the sum over t's key tokens, as words are;
// labels "S3: first words…" (`text` gives them).
AttentionGrid sentenceLevelGrid(const AttentionGrid& grid, const std::vector<Token>& tokens, std::string_view text,
                                double topFraction);

} // namespace attnscope::core
