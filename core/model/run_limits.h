// Limits on what a file or the command line may ask a run for, checked before anything is allocated, in one place
// per quantity: the memory length (carried tokens), the segment length, and the memory a run would need.
#pragma once

#include "model/attention_model.h"
#include "util/memory_info.h" // checkFits

#include <cstdint>
#include <string>

namespace attnscope::core {

inline constexpr long long kMaxMemoryLength = 1 << 20;  // tokens of memory or carried cache
inline constexpr long long kMaxSegmentLength = 1 << 16; // tokens of one segment

// `value` as a memory length (0 .. kMaxMemoryLength); otherwise Error(BadInput) naming `file` (may be empty) and
// `key` (a JSON key or an option such as "--mem-len").
int checkedMemoryLength(long long value, const std::string& file, const std::string& key);
// `value` as a segment length (1 .. min(kMaxSegmentLength, modelMaximum)).
int checkedSegmentLength(long long value, int modelMaximum, const std::string& file, const std::string& key);

// What a run keeps in memory besides the weights: the carried state (Transformer-XL's memory and its projections
// and relative tables, a causal model's key/value cache) and, when the observer keeps them, one segment's
// [heads, q, k] probabilities and terms.
std::uint64_t estimateRunBytes(const ModelInfo& info, int memLen, int segmentLen, bool keepProbabilities);
// Refuses (Error(BadInput), saying how much is needed and available) a run needing more than half the memory
// available now. `what` names the run in the message ("the scan", "the dump of input.json").
void checkRunFits(const ModelInfo& info, int memLen, int segmentLen, bool keepProbabilities, const std::string& what);

// Bytes of `arrays` float32 arrays of [tokens, vocabulary] logits (the forward's read-out, an observer's copy).
std::uint64_t logitsBytes(const ModelInfo& info, std::size_t tokens, int arrays = 2);

} // namespace attnscope::core
