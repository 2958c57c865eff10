// Speech speed and memory: a random Whisper of a real shape (whisper-base: 6 + 6 layers, d 512, 8 heads, FFN 2048;
// whisper-small: 12 + 12, d 768, 12 heads, FFN 3072; 80 mels, 51,865 tokens) hears 30 s of sound: the log-mel
// features, the encoder over 1500 frames and a greedy transcription of a set length, then the capture of the
// transcript with every site's score inputs kept (what the window shows), and one encoder head's 1500 x 1500 grid.
// Weights are random: speed, not quality.
#pragma once

#include <string>

namespace attnscope::bench {

int speechTranscribe(const std::string& shape, int newTokens, int threads, int rounds);

} // namespace attnscope::bench
