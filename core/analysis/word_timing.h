// Word timings from a speech model's cross-attention, as OpenAI's find_alignment computes them: the alignment heads'
// attention over the recording's frames re-softmaxed, standardised over the tokens, median-filtered along time,
// averaged over the heads, and a dynamic time warping path through it; the path's jumps are the tokens' start times.
// Also Hugging Face's token timestamps (its two releases' recipes), and each head's own path for a ranking of heads.
#pragma once

#include "audio/speech_settings.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnscope::core {

// One head's cross-attention probabilities over every encoder position, [rows, keys] row-major.
struct HeadRows {
    DecoderHead head;
    std::vector<float> probs;
};

// A monotone path through a [rows, frames] matrix from (0, 0) to (rows - 1, frames - 1).
struct WarpPath {
    std::vector<int> text, time;
};
// OpenAI's dtw on `cost` [rows, frames] (the negated matrix): float32 costs, ties to the time step.
WarpPath dynamicTimeWarp(const std::vector<double>& cost, int rows, int frames);
// The first cell of each row of the path (where the text index changes, and the first cell).
std::vector<int> jumpFrames(const WarpPath& path);

// The recipe's steps over a head set, each [heads, rows, frames] but the last.
struct AlignmentSteps {
    int heads = 0, rows = 0, frames = 0;
    std::vector<float> resoftmax, standardized, filtered;
    std::vector<float> matrix; // [rows - skipFirst - skipLast, frames]: the mean over heads, the token rows only
};
// `renormalise`: OpenAI's re-softmax over the first `frames` keys (false: Hugging Face's crop of the probabilities).
// The first `skipFirst` and last `skipLast` rows are dropped after the filter (OpenAI: the start sequence and the
// end); `dropBefore` rows before the statistics (Hugging Face since v4.54: the prompt).
AlignmentSteps alignmentSteps(const std::vector<HeadRows>& heads, int keys, int frames, bool renormalise,
                              int skipFirst, int skipLast, int dropBefore = 0, int medianWidth = 7);

struct WordTiming {
    std::string word;
    std::vector<std::int32_t> tokens;
    double start = 0, end = 0, probability = 0;
};
struct SpeechAlignment {
    AlignmentSteps steps;
    WarpPath path;
    std::vector<double> jumpTimes; // seconds, one per text row
    std::vector<WordTiming> words;
};

// What the alignment is computed over: the teacher-forced transcript and the run's outputs.
struct TranscriptRun {
    std::vector<std::int32_t> sot;     // the start sequence (start, language, task)
    std::vector<std::int32_t> text;    // the text tokens (the run is sot + <|notimestamps|> + text + end)
    std::int32_t end = -1;
    int frames = 0;                    // encoder positions holding the recording: content frames / 2
    double secondsPerPosition = 0.02;
    std::vector<HeadRows> heads;       // the alignment heads' cross-attention
    std::vector<float> logits;         // [rows, vocab] of the run
    int vocab = 0;
    // A token's bytes as the tokenizer spells them (a piece of a UTF-8 character possibly).
    std::function<std::string(std::int32_t)> bytesOf;
    bool spaceSeparated = true; // false for languages written without spaces (zh, ja, th, lo, my, yue)
};

// OpenAI's find_alignment (median filter 7): the matrix, the path, its jump times and the words with their
// probabilities (the mean over a word's tokens of the softmax over the text tokens).
SpeechAlignment alignWords(const TranscriptRun& run);

// OpenAI's split_to_word_tokens: tokens grouped into whole UTF-8 characters, then words at a leading space, a
// punctuation mark or a special token (ids from `end`).
std::vector<std::pair<std::string, std::vector<std::int32_t>>>
splitWords(const std::vector<std::int32_t>& tokens, std::int32_t end, const std::function<std::string(std::int32_t)>& bytesOf,
           bool spaceSeparated);

// Hugging Face's _extract_token_timestamps over all `rows` of the run: v4.48's (`dropPrompt` 0: every row in the
// statistics, timestamps [0, jump of row 0, ...]) or v4.54's and later (`dropPrompt` = the prompt's length: those
// rows dropped first, then [0] * prompt + jumps + the last jump). One value per row plus one, in seconds.
std::vector<double> tokenTimestamps(const std::vector<HeadRows>& heads, int keys, int frames, int dropPrompt,
                                    double secondsPerPosition = 0.02);

// Every head ranked by how well it aligns: its own find_alignment path compared with a reference path's jumps (the
// chosen heads'), and how monotone and sharp its attention over the text rows is.
struct HeadAlignmentScore {
    DecoderHead head;
    WarpPath path;
    std::vector<int> jumps;     // each text row's first frame
    double pathScore = 0;       // mean of its own matrix over its path
    double meanFrameError = 0;  // mean |jump - reference jump| over the text rows, in encoder positions
    double monotonicity = 0;    // share of consecutive text rows whose peak frame does not move back
    double sharpness = 0;       // mean largest re-softmaxed probability of the text rows
};
// `all`: every head's cross-attention; `reference`: the jumps to compare with (alignWords(...).path's). Sorted best
// first: smallest frame error, then the higher path score.
std::vector<HeadAlignmentScore> rankAlignmentHeads(const TranscriptRun& run, const std::vector<HeadRows>& all,
                                                   const std::vector<int>& reference);

} // namespace attnscope::core
