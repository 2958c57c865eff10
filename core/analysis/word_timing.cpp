// Word timings from cross-attention. Shapes: H heads, T rows (decoder positions), S keys (encoder positions), F the
// frames that hold the recording (the first F keys).
#include "analysis/word_timing.h"

#include "util/error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace attnscope::core {

namespace {

// Row t's keys 0 .. F-1, renormalised to sum to one (a softmax over those keys only) or as they are.
std::vector<double> croppedRows(const HeadRows& h, int T, int keys, int F, int firstRow, bool renormalise)
{
    std::vector<double> out(static_cast<std::size_t>(T - firstRow) * F);
    for (int t = firstRow; t < T; ++t) {
        const float* row = h.probs.data() + static_cast<std::size_t>(t) * keys;
        double sum = 0;
        for (int f = 0; f < F; ++f)
            sum += row[f];
        const double scale = renormalise && sum > 0 ? 1.0 / sum : 1.0;
        for (int f = 0; f < F; ++f)
            out[static_cast<std::size_t>(t - firstRow) * F + f] = row[f] * scale;
    }
    return out;
}

// Each frame's column standardised over the rows (population deviation).
void standardiseColumns(std::vector<double>& w, int rows, int F)
{
    for (int f = 0; f < F; ++f) {
        double mean = 0, square = 0;
        for (int t = 0; t < rows; ++t)
            mean += w[static_cast<std::size_t>(t) * F + f];
        mean /= rows;
        for (int t = 0; t < rows; ++t)
            square += std::pow(w[static_cast<std::size_t>(t) * F + f] - mean, 2);
        const double sd = std::sqrt(square / rows);
        for (int t = 0; t < rows; ++t) {
            double& v = w[static_cast<std::size_t>(t) * F + f];
            v = sd > 0 ? (v - mean) / sd : 0.0;
        }
    }
}

// The median of each frame's `width` neighbours along time, reflected at the edges (the edge not repeated).
std::vector<double> medianFiltered(const std::vector<double>& w, int rows, int F, int width)
{
    const int half = width / 2;
    std::vector<double> out(w.size()), window(static_cast<std::size_t>(width));
    for (int t = 0; t < rows; ++t)
        for (int f = 0; f < F; ++f) {
            for (int k = -half; k <= half; ++k) {
                int i = f + k;
                if (i < 0)
                    i = -i;
                if (i >= F)
                    i = 2 * (F - 1) - i;
                window[static_cast<std::size_t>(k + half)] = w[static_cast<std::size_t>(t) * F + std::clamp(i, 0, F - 1)];
            }
            std::nth_element(window.begin(), window.begin() + half, window.end());
            out[static_cast<std::size_t>(t) * F + f] = window[static_cast<std::size_t>(half)];
        }
    return out;
}

void appendAsFloat(std::vector<float>& to, const std::vector<double>& from)
{
    to.insert(to.end(), from.begin(), from.end());
}

std::vector<double> jumpTimesOf(const WarpPath& path, double secondsPerPosition)
{
    std::vector<double> times;
    for (const int frame : jumpFrames(path))
        times.push_back(frame * secondsPerPosition);
    return times;
}

std::vector<double> negated(const std::vector<float>& m)
{
    std::vector<double> out(m.size());
    std::transform(m.begin(), m.end(), out.begin(), [](float v) { return -static_cast<double>(v); });
    return out;
}

// A byte string that ends inside a UTF-8 character (what a byte-level token may be alone).
bool endsMidCharacter(const std::string& s)
{
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
        if (i + len > s.size())
            return true;
        i += len;
    }
    return false;
}

std::string stripped(const std::string& s)
{
    const char* space = " \t\n\r\f\v";
    const auto first = s.find_first_not_of(space);
    if (first == std::string::npos)
        return {};
    return s.substr(first, s.find_last_not_of(space) - first + 1);
}

// The probability of each text token at the row that predicts it: the softmax over the text vocabulary (below `end`).
std::vector<double> textTokenProbabilities(const TranscriptRun& run)
{
    std::vector<double> probs;
    const int first = static_cast<int>(run.sot.size()); // row sot + k predicts text token k
    for (std::size_t k = 0; k < run.text.size(); ++k) {
        const float* row = run.logits.data() + (static_cast<std::size_t>(first) + k) * run.vocab;
        const int n = std::min(run.end, run.vocab);
        const float top = *std::max_element(row, row + n);
        double sum = 0;
        for (int v = 0; v < n; ++v)
            sum += std::exp(static_cast<double>(row[v]) - top);
        const std::int32_t id = run.text[k];
        probs.push_back(id < n ? std::exp(static_cast<double>(row[id]) - top) / sum : 0.0);
    }
    return probs;
}

void checkRun(const TranscriptRun& run, int rows, int keys)
{
    if (run.heads.empty())
        throw Error(ErrorCode::BadInput, "no alignment heads to time the words by");
    if (run.frames < 1 || run.frames > keys)
        throw Error(ErrorCode::BadInput, "the recording holds " + std::to_string(run.frames) +
                                             " encoder positions; word timings need 1 to " + std::to_string(keys));
    if (run.text.empty())
        throw Error(ErrorCode::BadInput, "the transcript has no text tokens to time");
    if (static_cast<std::size_t>(rows) != run.sot.size() + run.text.size() + 2)
        throw Error(ErrorCode::Internal, "the run's rows do not match its transcript");
}

} // namespace

WarpPath dynamicTimeWarp(const std::vector<double>& x, int N, int M)
{
    const auto at = [M](int i, int j) { return static_cast<std::size_t>(i) * (M + 1) + j; };
    std::vector<float> cost(static_cast<std::size_t>(N + 1) * (M + 1), std::numeric_limits<float>::infinity());
    std::vector<std::int8_t> trace(cost.size(), -1);
    cost[0] = 0;
    for (int j = 1; j <= M; ++j)
        for (int i = 1; i <= N; ++i) {
            const float c0 = cost[at(i - 1, j - 1)], c1 = cost[at(i - 1, j)], c2 = cost[at(i, j - 1)];
            float c;
            std::int8_t t;
            if (c0 < c1 && c0 < c2) {
                c = c0, t = 0;
            } else if (c1 < c0 && c1 < c2) {
                c = c1, t = 1;
            } else {
                c = c2, t = 2;
            }
            cost[at(i, j)] = static_cast<float>(x[static_cast<std::size_t>(i - 1) * M + (j - 1)] + static_cast<double>(c));
            trace[at(i, j)] = t;
        }
    for (int j = 0; j <= M; ++j)
        trace[at(0, j)] = 2;
    for (int i = 0; i <= N; ++i)
        trace[at(i, 0)] = 1;
    WarpPath path;
    int i = N, j = M;
    while (i > 0 || j > 0) {
        path.text.push_back(i - 1);
        path.time.push_back(j - 1);
        const std::int8_t t = trace[at(i, j)];
        if (t == 0)
            --i, --j;
        else if (t == 1)
            --i;
        else
            --j;
    }
    std::reverse(path.text.begin(), path.text.end());
    std::reverse(path.time.begin(), path.time.end());
    return path;
}

std::vector<int> jumpFrames(const WarpPath& path)
{
    std::vector<int> frames;
    for (std::size_t k = 0; k < path.text.size(); ++k)
        if (k == 0 || path.text[k] != path.text[k - 1])
            frames.push_back(path.time[k]);
    return frames;
}

AlignmentSteps alignmentSteps(const std::vector<HeadRows>& heads, int keys, int F, bool renormalise, int skipFirst,
                              int skipLast, int dropBefore, int medianWidth)
{
    AlignmentSteps s;
    s.heads = static_cast<int>(heads.size());
    const int T = heads.empty() ? 0 : static_cast<int>(heads.front().probs.size() / static_cast<std::size_t>(keys));
    s.rows = T - dropBefore;
    s.frames = F;
    if (s.rows - skipFirst - skipLast < 1 || F < 1)
        throw Error(ErrorCode::BadInput, "too few rows or frames to align");
    std::vector<double> mean(static_cast<std::size_t>(s.rows) * F, 0.0);
    for (const HeadRows& h : heads) {
        std::vector<double> w = croppedRows(h, T, keys, F, dropBefore, renormalise);
        appendAsFloat(s.resoftmax, w);
        standardiseColumns(w, s.rows, F);
        appendAsFloat(s.standardized, w);
        w = medianFiltered(w, s.rows, F, medianWidth);
        appendAsFloat(s.filtered, w);
        for (std::size_t k = 0; k < w.size(); ++k)
            mean[k] += w[k];
    }
    for (int t = skipFirst; t < s.rows - skipLast; ++t)
        for (int f = 0; f < F; ++f)
            s.matrix.push_back(static_cast<float>(mean[static_cast<std::size_t>(t) * F + f] / s.heads));
    return s;
}

std::vector<std::pair<std::string, std::vector<std::int32_t>>>
splitWords(const std::vector<std::int32_t>& tokens, std::int32_t end, const std::function<std::string(std::int32_t)>& bytesOf,
           bool spaceSeparated)
{
    // Whole characters first: a token that ends inside a character waits for the next.
    std::vector<std::pair<std::string, std::vector<std::int32_t>>> pieces, words;
    std::pair<std::string, std::vector<std::int32_t>> current;
    for (const auto id : tokens) {
        current.first += bytesOf(id);
        current.second.push_back(id);
        if (!endsMidCharacter(current.first) || id >= end)
            pieces.push_back(std::exchange(current, {}));
    }
    if (!current.second.empty())
        pieces.push_back(std::move(current));
    if (!spaceSeparated)
        return pieces;
    static const std::string punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";
    for (auto& piece : pieces) {
        const bool special = piece.second.front() >= end;
        const bool spaced = piece.first.starts_with(" ");
        const bool mark = punctuation.find(stripped(piece.first)) != std::string::npos; // Python's `in` on a string
        if (special || spaced || mark || words.empty()) {
            words.push_back(std::move(piece));
        } else {
            words.back().first += piece.first;
            words.back().second.insert(words.back().second.end(), piece.second.begin(), piece.second.end());
        }
    }
    return words;
}

SpeechAlignment alignWords(const TranscriptRun& run)
{
    const int keys = run.heads.empty() ? 0 : static_cast<int>(run.heads.front().probs.size() /
                                                              (run.sot.size() + run.text.size() + 2));
    checkRun(run, static_cast<int>(run.sot.size() + run.text.size() + 2), keys);
    SpeechAlignment a;
    a.steps = alignmentSteps(run.heads, keys, run.frames, true, static_cast<int>(run.sot.size()), 1);
    const int rows = static_cast<int>(run.text.size()) + 1;
    a.path = dynamicTimeWarp(negated(a.steps.matrix), rows, run.frames);
    a.jumpTimes = jumpTimesOf(a.path, run.secondsPerPosition);
    std::vector<std::int32_t> tokens = run.text;
    tokens.push_back(run.end);
    const auto words = splitWords(tokens, run.end, run.bytesOf, run.spaceSeparated);
    const auto probs = textTokenProbabilities(run);
    std::size_t first = 0;
    for (std::size_t w = 0; w + 1 < words.size(); ++w) { // the last word is the end token
        const std::size_t next = first + words[w].second.size();
        WordTiming t{words[w].first, words[w].second, a.jumpTimes.at(first), a.jumpTimes.at(next), 0.0};
        for (std::size_t k = first; k < next; ++k)
            t.probability += probs.at(k) / static_cast<double>(next - first);
        a.words.push_back(std::move(t));
        first = next;
    }
    return a;
}

std::vector<double> tokenTimestamps(const std::vector<HeadRows>& heads, int keys, int frames, int dropPrompt,
                                    double secondsPerPosition)
{
    const AlignmentSteps s = alignmentSteps(heads, keys, frames, false, 0, 0, dropPrompt);
    const WarpPath path = dynamicTimeWarp(negated(s.matrix), s.rows, frames);
    const std::vector<double> jumps = jumpTimesOf(path, secondsPerPosition);
    std::vector<double> out(static_cast<std::size_t>(dropPrompt > 0 ? dropPrompt : 1), 0.0);
    out.insert(out.end(), jumps.begin(), jumps.end());
    if (dropPrompt > 0)
        out.push_back(jumps.back());
    return out;
}

std::vector<HeadAlignmentScore> rankAlignmentHeads(const TranscriptRun& run, const std::vector<HeadRows>& all,
                                                   const std::vector<int>& reference)
{
    const int T = static_cast<int>(run.sot.size() + run.text.size() + 2);
    const int sot = static_cast<int>(run.sot.size()), rows = T - sot - 1;
    std::vector<HeadAlignmentScore> scores;
    for (const HeadRows& h : all) {
        const int keys = static_cast<int>(h.probs.size() / static_cast<std::size_t>(T));
        const AlignmentSteps s = alignmentSteps({h}, keys, run.frames, true, sot, 1);
        HeadAlignmentScore score{h.head, dynamicTimeWarp(negated(s.matrix), rows, run.frames), {}};
        score.jumps = jumpFrames(score.path);
        for (std::size_t k = 0; k < score.path.text.size(); ++k)
            score.pathScore += s.matrix[static_cast<std::size_t>(score.path.text[k]) * run.frames + score.path.time[k]];
        score.pathScore /= static_cast<double>(score.path.text.size());
        for (std::size_t r = 0; r < score.jumps.size() && r < reference.size(); ++r)
            score.meanFrameError += std::abs(score.jumps[r] - reference[r]) / static_cast<double>(score.jumps.size());
        int previousPeak = -1, forward = 0;
        for (int r = sot; r < T - 1; ++r) {
            const float* row = s.resoftmax.data() + static_cast<std::size_t>(r) * run.frames;
            const auto peak = static_cast<int>(std::max_element(row, row + run.frames) - row);
            score.sharpness += row[peak] / static_cast<double>(rows);
            forward += r > sot && peak >= previousPeak ? 1 : 0;
            previousPeak = peak;
        }
        score.monotonicity = rows > 1 ? static_cast<double>(forward) / (rows - 1) : 1.0;
        scores.push_back(std::move(score));
    }
    std::stable_sort(scores.begin(), scores.end(), [](const auto& a, const auto& b) {
        return a.meanFrameError != b.meanFrameError ? a.meanFrameError < b.meanFrameError : a.pathScore > b.pathScore;
    });
    return scores;
}

} // namespace attnscope::core
