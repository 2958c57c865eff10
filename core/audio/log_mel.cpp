// The log-mel front end. Shapes: N window samples, n = nFft, B = n / 2 + 1 bins, F frames, M mel bins.
#include "audio/log_mel.h"

#include "model/config_reader.h"
#include "util/error.h"
#include "util/text_file.h"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numbers>

namespace attnscope::core {

namespace {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Slaney's mel scale: linear below 1 kHz (3 f / 200), logarithmic above.
constexpr double kMinLogHertz = 1000.0, kMinLogMel = 15.0;
const double kLogStep = 27.0 / std::log(6.4);

double hertzToMel(double f)
{
    return f >= kMinLogHertz ? kMinLogMel + std::log(f / kMinLogHertz) * kLogStep : 3.0 * f / 200.0;
}

double melToHertz(double m)
{
    return m >= kMinLogMel ? kMinLogHertz * std::exp((m - kMinLogMel) / kLogStep) : 200.0 * m / 3.0;
}

// numpy's linspace: start + i * step, the last point exactly `stop`.
std::vector<double> linspace(double start, double stop, int count)
{
    std::vector<double> v(static_cast<std::size_t>(count));
    const double step = count > 1 ? (stop - start) / (count - 1) : 0.0;
    for (int i = 0; i < count; ++i)
        v[static_cast<std::size_t>(i)] = start + i * step;
    if (count > 1)
        v.back() = stop;
    return v;
}

// The padded signal's sample p (the window centred on each frame: nFft / 2 reflected samples on either side, the
// edge sample not repeated).
double paddedSample(std::span<const float> window, int N, int half, std::int64_t p)
{
    std::int64_t i = p - half;
    if (i < 0)
        i = -i;
    if (i >= N)
        i = 2 * static_cast<std::int64_t>(N - 1) - i;
    return static_cast<std::size_t>(i) < window.size() ? window[static_cast<std::size_t>(i)] : 0.0;
}

// The power spectrum of every frame, [F, B]; frames that see only silence are exactly 0, as the transform makes them.
MatrixD powerSpectrum(std::span<const float> window, const MelSettings& s)
{
    const int n = s.nFft, B = s.bins(), F = s.frames(), N = s.windowSamples, half = n / 2;
    std::vector<double> hann(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) // periodic: the window of n + 1 points without its last
        hann[static_cast<std::size_t>(k)] = 0.5 - 0.5 * std::cos(2.0 * std::numbers::pi * k / n);
    // The frames with sound in them, windowed, as rows.
    std::vector<int> sounding;
    MatrixD rows(F, n);
    for (int t = 0; t < F; ++t) {
        bool any = false;
        for (int k = 0; k < n; ++k) {
            const double v = paddedSample(window, N, half, static_cast<std::int64_t>(t) * s.hop + k) * hann[static_cast<std::size_t>(k)];
            rows(static_cast<Eigen::Index>(sounding.size()), k) = v;
            any = any || v != 0.0;
        }
        if (any)
            sounding.push_back(t);
    }
    // The one-sided discrete Fourier transform as a product with its cosine and sine tables (n need not be a power
    // of two: Whisper's is 400).
    MatrixD cosines(n, B), sines(n, B);
    for (int k = 0; k < n; ++k)
        for (int b = 0; b < B; ++b) {
            const double angle = 2.0 * std::numbers::pi * static_cast<double>((static_cast<std::int64_t>(k) * b) % n) / n;
            cosines(k, b) = std::cos(angle);
            sines(k, b) = std::sin(angle);
        }
    const auto S = static_cast<Eigen::Index>(sounding.size());
    const MatrixD re = rows.topRows(S) * cosines, im = rows.topRows(S) * sines;
    MatrixD power = MatrixD::Zero(F, B);
    for (Eigen::Index r = 0; r < S; ++r)
        power.row(sounding[static_cast<std::size_t>(r)]) = re.row(r).array().square() + im.row(r).array().square();
    return power;
}

} // namespace

MelSettings parseMelSettings(const nlohmann::json& j, const std::string& file)
{
    const ConfigReader r(j, file);
    MelSettings s;
    s.source = file;
    s.mels = r.intOr("feature_size", 80, 1);
    s.nFft = r.intOr("n_fft", 400, 2);
    s.hop = r.intOr("hop_length", 160, 1);
    s.sampleRate = r.intOr("sampling_rate", 16000, 1000);
    const int chunk = r.intOr("chunk_length", 30, 1);
    if (chunk > 600)
        r.fail("chunk_length", std::to_string(chunk) + " s is longer than a window a speech model reads");
    s.windowSamples = r.intOr("n_samples", chunk * s.sampleRate, 1);
    if (s.mels > 512)
        r.fail("feature_size", std::to_string(s.mels) + " mel bins is more than a spectrogram has");
    if (s.nFft > 4096)
        r.fail("n_fft", std::to_string(s.nFft) + " is longer than a transform of speech (at most 4096)");
    if (s.sampleRate > 768000)
        r.fail("sampling_rate", std::to_string(s.sampleRate) + " Hz is not a rate a recording has");
    if (s.windowSamples > 600 * s.sampleRate || s.windowSamples / s.hop < 1)
        r.fail("n_samples", std::to_string(s.windowSamples) + " samples is not a window of 1 frame to 10 minutes");
    if (s.hop > s.nFft)
        r.fail("hop_length", "is longer than n_fft: frames would skip samples");
    // The transform holds every frame's window: bounded before anything is sized by it (Whisper: 3000 x 400).
    if (static_cast<long long>(s.frames()) * s.nFft > 32LL * 1024 * 1024)
        r.fail("hop_length", std::to_string(s.frames()) + " frames of " + std::to_string(s.nFft) +
                                 " samples is more than a spectrogram of speech holds");
    return s;
}

MelSettings readMelSettings(const std::string& folder, int mels)
{
    const std::string path = (std::filesystem::path(folder) / "preprocessor_config.json").string();
    if (!std::filesystem::is_regular_file(path)) {
        MelSettings s;
        s.mels = mels;
        return s;
    }
    MelSettings s = parseMelSettings(readJsonFile(path), path);
    if (s.mels != mels)
        throw Error(ErrorCode::BadConfig, "says " + std::to_string(s.mels) + " mel bins; the model reads " +
                                              std::to_string(mels), path, "feature_size");
    return s;
}

std::vector<double> melFilterBank(const MelSettings& s)
{
    const int B = s.bins(), M = s.mels;
    const auto points = linspace(hertzToMel(0.0), hertzToMel(s.sampleRate / 2), M + 2);
    std::vector<double> edges(points.size());
    std::transform(points.begin(), points.end(), edges.begin(), melToHertz);
    const auto binFreq = linspace(0.0, s.sampleRate / 2, B); // sampling_rate // 2, as the reference spaces them
    std::vector<double> bank(static_cast<std::size_t>(B) * M);
    for (int b = 0; b < B; ++b)
        for (int m = 0; m < M; ++m) {
            const double f = binFreq[static_cast<std::size_t>(b)];
            const double lo = edges[static_cast<std::size_t>(m)], mid = edges[static_cast<std::size_t>(m) + 1],
                         hi = edges[static_cast<std::size_t>(m) + 2];
            const double down = -(lo - f) / (mid - lo), up = (hi - f) / (hi - mid);
            // Slaney's normalisation: each triangle of area one in Hz.
            bank[static_cast<std::size_t>(b) * M + m] = std::max(0.0, std::min(down, up)) * (2.0 / (hi - lo));
        }
    return bank;
}

AudioFeatures logMelFeatures(std::span<const float> samples, const MelSettings& s)
{
    const int F = s.frames(), M = s.mels, B = s.bins();
    // Padded with silence or cut to the window.
    const std::span<const float> window = samples.first(std::min(samples.size(), static_cast<std::size_t>(s.windowSamples)));
    const MatrixD power = powerSpectrum(window, s);
    const auto bank = melFilterBank(s);
    const MatrixD mel = power * Eigen::Map<const MatrixD>(bank.data(), B, M); // [F, M]
    MatrixD logMel = mel.array().max(1e-10).log10();
    const double floor = logMel.maxCoeff() - 8.0;
    AudioFeatures out;
    out.mels = M;
    out.frames = F;
    out.values.resize(static_cast<std::size_t>(M) * F);
    for (int m = 0; m < M; ++m)
        for (int t = 0; t < F; ++t)
            out.values[static_cast<std::size_t>(m) * F + t] = static_cast<float>((std::max(logMel(t, m), floor) + 4.0) / 4.0);
    out.seconds = static_cast<double>(samples.size()) / s.sampleRate;
    out.contentFrames = static_cast<int>(std::min<std::size_t>(samples.size() / static_cast<std::size_t>(s.hop), static_cast<std::size_t>(F)));
    out.frameSeconds = static_cast<double>(s.hop) / s.sampleRate;
    return out;
}

} // namespace attnscope::core
