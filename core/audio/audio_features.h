// A speech model's input: a log-mel spectrogram of a fixed window (Whisper's 30 s), and how much of it is the sound.
#pragma once

#include <cstddef>
#include <vector>

namespace attnscope::core {

struct AudioFeatures {
    int mels = 0;   // frequency bins (rows)
    int frames = 0; // 10-ms frames (columns): the whole window, padding included
    std::vector<float> values; // [mels, frames], row-major, as the model reads it
    // Frames that hold the recording (n_samples // hop, at most `frames`): what word timings may use.
    int contentFrames = 0;
    double seconds = 0;        // the recording's length (before padding or cutting)
    double frameSeconds = 0.01; // hop / sampling rate
    float at(int mel, int frame) const { return values[static_cast<std::size_t>(mel) * frames + frame]; }
};

} // namespace attnscope::core
