// Fuzz harness: a recording (libsndfile's readers, the resampler, the log-mel front end) from the bytes of a file.
#include "audio/audio_file.h"
#include "audio/log_mel.h"
#include "util/error.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // libsndfile opens files by name: the input goes to a file of this process's own.
    static const std::string path = "/tmp/attnscope-fuzz-audio-" + std::to_string(getpid()) + ".wav";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    try {
        core::MelSettings s; // a one-second window keeps every input quick
        s.windowSamples = 16000;
        const auto audio = core::readAudioFile(path, s.sampleRate, s.windowSeconds());
        (void)core::logMelFeatures(audio.samples, s);
    } catch (const core::Error&) {
    }
    std::remove(path.c_str());
    return 0;
}
