// Runs a model over a tokenized text and keeps every segment's attention (the interactive views' data).
#pragma once

#include "model/attention_model.h"
#include "tokenize/tokenizer.h"

#include <memory>
#include <vector>

namespace attnscope::core {

// One segment's captured attention. Keys: mlen memory positions then qlen current ones; key j is the token at
// absolute position firstPosition - mlen + j.
struct SegmentCapture {
    std::int64_t firstPosition = 0;
    int qlen = 0, mlen = 0, klen = 0;
    std::vector<std::uint8_t> mask;            // [qlen, klen], 1 = masked
    std::vector<std::vector<float>> probs;     // per layer [heads, qlen, klen]
    std::vector<std::vector<float>> terms[4];  // per term, per layer [heads, qlen, klen] (empty unless captured)
};

struct TextCapture {
    ModelInfo model;
    std::string text; // the UTF-8 text the token spans refer to
    std::vector<Token> tokens;
    std::vector<SegmentCapture> segments;
    int segmentLen = 0;
    int memLen = 0;
    bool hasTerms() const { return !segments.empty() && !segments.front().terms[0].empty(); }
    std::size_t bytes() const; // memory held, for limits and messages
};

struct CaptureOptions {
    int segmentLen = 0;       // 0: the model's default
    RunOptions run;
    bool captureTerms = true; // only relative models have terms
    std::size_t maxBytes = std::size_t(2) << 30; // refuse texts whose capture would exceed this (clear error)
};

// Tokens must be non-empty (Error(BadInput) "text tokenizes to nothing" otherwise).
std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, std::vector<Token> tokens,
                                                const CaptureOptions& options);
// Tokenizes `text` as the model sees it by default (encodeWithSpecial: Llama's BOS first) and captures it; the
// capture keeps the text.
std::shared_ptr<const TextCapture> captureText(const AttentionModel& model, const Tokenizer& tokenizer,
                                                std::string text, const CaptureOptions& options);

} // namespace attnscope::core
