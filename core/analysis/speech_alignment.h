// Word timings over a speech model's run: the cross-attention of chosen decoder heads over a teacher-forced
// transcript of a recording, gathered into what analysis/word_timing.h computes on.
#pragma once

#include "analysis/word_timing.h"
#include "audio/audio_features.h"
#include "audio/speech_settings.h"
#include "model/attention_model.h"
#include "run/speech_run.h"

#include <memory>
#include <vector>

namespace attnscope::core {

class Tokenizer;

// Every decoder layer's cross-attention of the chosen heads over teacher-forced `ids`, and the run's logits.
struct CrossAttentionRun {
    std::vector<HeadRows> heads; // in the order asked
    std::vector<float> logits;   // [ids, vocab]
    int keys = 0;
};
CrossAttentionRun crossAttentionOf(const AttentionModel& model, const RunOptions& options,
                                   const std::vector<std::int32_t>& ids, const std::vector<DecoderHead>& heads);

// The run alignWords and rankAlignmentHeads read: `heads`' cross-attention over the transcript.
TranscriptRun transcriptRun(const AttentionModel& model, std::shared_ptr<const AudioFeatures> audio,
                            const Transcript& transcript, const SpeechSettings& settings,
                            const std::vector<DecoderHead>& heads, const Tokenizer* tokenizer);

// A transcript timed and every head ranked, from one run that records every decoder head: the run over the chosen
// `heads` (what alignWords read), every head's rows, the word timings and the ranking against their path.
struct TranscriptTiming {
    TranscriptRun run;
    std::vector<HeadRows> everyHead;
    SpeechAlignment words;
    std::vector<HeadAlignmentScore> ranking;
};
TranscriptTiming timeTranscript(const AttentionModel& model, std::shared_ptr<const AudioFeatures> audio,
                                const Transcript& transcript, const SpeechSettings& settings,
                                const std::vector<DecoderHead>& heads, const Tokenizer* tokenizer);

} // namespace attnscope::core
