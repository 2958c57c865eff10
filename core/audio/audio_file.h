// Reading a recording for a speech model: any file libsndfile opens (WAV, FLAC, OGG, ...), down-mixed to mono and
// resampled to the model's rate with libsoxr (its high-quality setting, SoX's default `rate`).
#pragma once

#include <string>
#include <vector>

namespace attnscope::core {

struct AudioSamples {
    int sampleRate = 0;
    std::vector<float> samples; // mono, -1 .. 1 (16-bit PCM reads as n / 32768)
    double fileSeconds = 0;     // the whole file's length (samples may hold only its start)
    long long fileSamples = 0;  // the whole file's samples at sampleRate (what a feature extractor counts frames of)
    double seconds() const { return sampleRate > 0 ? static_cast<double>(samples.size()) / sampleRate : 0.0; }
};

// The first `maxSeconds` of the file's sound at `sampleRate` (the rest is not read: a speech model hears a fixed
// window). Error(Io / CorruptFile / BadInput) naming the file: unreadable, not audio, no samples, absurd rates.
AudioSamples readAudioFile(const std::string& path, int sampleRate, double maxSeconds);

// Mono samples at `from` Hz resampled to `to` Hz (libsoxr, high quality); the same samples when the rates agree.
std::vector<float> resampled(const std::vector<float>& samples, int from, int to);

} // namespace attnscope::core
