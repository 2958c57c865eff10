// Audio decoding (libsndfile) and resampling (libsoxr).
#include "audio/audio_file.h"

#include "util/error.h"

#include <sndfile.h>
#include <soxr.h>

#include <algorithm>
#include <cmath>
#include <memory>

namespace attnscope::core {

namespace {

struct SndfileCloser {
    void operator()(SNDFILE* f) const { sf_close(f); }
};

// The file's first `frames` frames, each frame's channels averaged. Read in blocks, so memory follows the samples
// the file really holds, not what its header claims.
std::vector<float> monoFrames(SNDFILE* file, const SF_INFO& info, sf_count_t frames, const std::string& path)
{
    constexpr sf_count_t kBlock = 65536;
    std::vector<float> interleaved(static_cast<std::size_t>(kBlock) * static_cast<std::size_t>(info.channels)), mono;
    while (static_cast<sf_count_t>(mono.size()) < frames) {
        const sf_count_t want = std::min(kBlock, frames - static_cast<sf_count_t>(mono.size()));
        const sf_count_t got = sf_readf_float(file, interleaved.data(), want);
        if (got < 0)
            throw Error(ErrorCode::CorruptFile, std::string("cannot read the samples: ") + sf_strerror(file), path);
        for (sf_count_t t = 0; t < got; ++t) {
            double sum = 0;
            for (int c = 0; c < info.channels; ++c)
                sum += interleaved[static_cast<std::size_t>(t) * info.channels + c];
            mono.push_back(info.channels == 1 ? static_cast<float>(sum) : static_cast<float>(sum / info.channels));
        }
        if (got < want)
            break; // the file ends before its header said
    }
    return mono;
}

} // namespace

std::vector<float> resampled(const std::vector<float>& samples, int from, int to)
{
    if (from == to || samples.empty())
        return samples;
    const double ratio = static_cast<double>(to) / from;
    std::vector<float> out(static_cast<std::size_t>(std::ceil(samples.size() * ratio)) + 16);
    std::size_t done = 0;
    const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
    const soxr_error_t err = soxr_oneshot(from, to, 1, samples.data(), samples.size(), nullptr, out.data(), out.size(),
                                          &done, nullptr, &quality, nullptr);
    if (err)
        throw Error(ErrorCode::Internal, std::string("resampling failed: ") + err);
    out.resize(done);
    return out;
}

AudioSamples readAudioFile(const std::string& path, int sampleRate, double maxSeconds)
{
    SF_INFO info{};
    std::unique_ptr<SNDFILE, SndfileCloser> file(sf_open(path.c_str(), SFM_READ, &info));
    if (!file)
        throw Error(ErrorCode::Io, std::string("cannot open it as audio: ") + sf_strerror(nullptr), path);
    if (info.samplerate < 1000 || info.samplerate > 768000)
        throw Error(ErrorCode::CorruptFile, "its sampling rate of " + std::to_string(info.samplerate) +
                                                " Hz is not one a recording has", path);
    if (info.channels < 1 || info.channels > 64)
        throw Error(ErrorCode::CorruptFile, "it says it has " + std::to_string(info.channels) + " channels", path);
    if (info.frames <= 0)
        throw Error(ErrorCode::BadInput, "it holds no samples", path);
    // A little more than the window, so the resampler's filter sees past its end.
    const auto wanted = static_cast<sf_count_t>(std::ceil((maxSeconds + 0.05) * info.samplerate));
    const sf_count_t frames = std::min(info.frames, wanted);
    AudioSamples out;
    out.sampleRate = sampleRate;
    out.fileSeconds = static_cast<double>(info.frames) / info.samplerate;
    out.fileSamples = info.samplerate == sampleRate
                          ? static_cast<long long>(info.frames)
                          : static_cast<long long>(std::llround(static_cast<double>(info.frames) * sampleRate / info.samplerate));
    out.samples = resampled(monoFrames(file.get(), info, frames, path), info.samplerate, sampleRate);
    const auto keep = static_cast<std::size_t>(std::llround(maxSeconds * sampleRate));
    if (out.samples.size() > keep)
        out.samples.resize(keep);
    if (out.samples.empty())
        throw Error(ErrorCode::BadInput, "it holds no samples", path);
    return out;
}

} // namespace attnscope::core
