// Whisper's front end, as Hugging Face's WhisperFeatureExtractor computes it: the recording padded or cut to the
// window, a centred STFT (periodic Hann, reflect padding), the power spectrum through Slaney mel filters, log10 with a
// floor 8 decades under the window's maximum, scaled to (x + 4) / 4. Computed in double, stored in float32.
#pragma once

#include "audio/audio_features.h"

#include <nlohmann/json_fwd.hpp>

#include <span>
#include <string>
#include <vector>

namespace attnscope::core {

struct MelSettings {
    int mels = 80;
    int nFft = 400;
    int hop = 160;
    int sampleRate = 16000;
    int windowSamples = 480000; // the window the model hears (chunk_length 30 s)
    int bins() const { return nFft / 2 + 1; }
    int frames() const { return windowSamples / hop; }
    double windowSeconds() const { return static_cast<double>(windowSamples) / sampleRate; }
    std::string source; // the preprocessor_config.json it was read from ("" for defaults)
};

// preprocessor_config.json's feature_size, n_fft, hop_length, sampling_rate and n_samples (or chunk_length), each
// checked (Error(BadConfig) naming the file and key).
MelSettings parseMelSettings(const nlohmann::json& j, const std::string& file);
// `folder`/preprocessor_config.json, or the defaults with `mels` bins when the folder has none (OpenAI's checkpoints).
MelSettings readMelSettings(const std::string& folder, int mels);

// The Slaney filter bank, [bins, mels] row-major (Hugging Face's mel_filter_bank with norm and scale "slaney", 0 Hz to
// half the sampling rate).
std::vector<double> melFilterBank(const MelSettings& s);

// The model's input from mono samples at s.sampleRate (already resampled).
AudioFeatures logMelFeatures(std::span<const float> samples, const MelSettings& s);

} // namespace attnscope::core
