// Encoder-decoder speed and memory: a random model of a real shape (Marian / OPUS-MT: 6 + 6 layers, d 512, 8 heads,
// FFN 2048, 58,101 tokens; t5-small: 6 + 6 layers, d 512, 8 heads of 64, FFN 2048, 32,128 tokens) translates a source
// into a target of a set length with every site's attention kept. Weights are random: speed, not quality.
#pragma once

#include <string>

namespace attnscope::bench {

// Prints the median seconds of `rounds` translations (encoder once, `newTokens` decoder steps through the cache),
// the weight file's size and the peak resident memory; returns the exit code.
int seq2seqTranslate(const std::string& shape, int sourceTokens, int newTokens, int threads, int rounds);

} // namespace attnscope::bench
