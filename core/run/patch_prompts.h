// The patching workflow's inputs as people type them, turned into what core/analysis/activation_patching.h takes: a
// prompt's token ids (the tokenizer's special tokens added, as every text is run) and an answer word's one token. One
// recipe for the window, headless export, the CLI and the Python module.
#pragma once

#include "tokenize/tokenizer.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attnscope::core {

std::vector<std::int32_t> promptIds(const Tokenizer& tokenizer, const std::string& text);

// The token an answer stands for: digits are an id; a word must be one token, tried with a leading space first (as
// it follows the prompt: GPT-2's " Mary"), then as typed. Error(BadInput) naming the word otherwise.
std::int32_t answerToken(const Tokenizer& tokenizer, const std::string& answer);

// "the clean prompt has 12 tokens and the corrupted 13: ..." when the lengths differ; empty when they match.
std::string promptLengthProblem(const Tokenizer& tokenizer, const std::vector<std::int32_t>& clean,
                                const std::vector<std::int32_t>& corrupt);

// "L.H" or "L.H, L.H, ..." (layers and heads counted from 1, as people count) as 0-based (layer, unit) pairs; an
// empty or blank text gives none. Error(BadInput) naming `what` (the option or field) and the bad item otherwise.
std::vector<std::pair<int, int>> layerDotUnits(const std::string& text, const std::string& what);

} // namespace attnscope::core
