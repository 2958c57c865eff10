// A recording for a speech model and what is run on it: its features the model's way (preprocessor_config.json of
// the model's folder, or a stored input_features tensor), the cross-attention of chosen decoder heads over a
// teacher-forced transcript, and the word timings that come of it.
#pragma once

#include "analysis/word_timing.h"
#include "audio/audio_features.h"
#include "audio/log_mel.h"
#include "audio/speech_settings.h"
#include "model/attention_model.h"

#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

class Tokenizer;

// The model's own front end over a file libsndfile reads (resampled to the front end's rate), from `folder`'s
// preprocessor_config.json; Error naming the file.
std::shared_ptr<const AudioFeatures> audioFeaturesOfFile(const AttentionModel& model, const std::string& folder,
                                                         const std::string& audioPath);
// A stored "input_features" [mels, frames] (and "num_frames" when present) of a safetensors file.
std::shared_ptr<const AudioFeatures> readAudioFeatures(const std::string& path);

// Every decoder layer's cross-attention of the chosen heads over teacher-forced `ids`, and the run's logits.
struct CrossAttentionRun {
    std::vector<HeadRows> heads; // in the order asked
    std::vector<float> logits;   // [ids, vocab]
    int keys = 0;
};
CrossAttentionRun crossAttentionOf(const AttentionModel& model, const RunOptions& options,
                                   const std::vector<std::int32_t>& ids, const std::vector<DecoderHead>& heads);

// The transcript to time: `ids` either the whole decoder input (from the start token: start sequence,
// <|notimestamps|>, the text, the end) or the text tokens alone, wrapped in `prompt` and the end.
struct Transcript {
    std::vector<std::int32_t> sot, text;
};
Transcript transcriptOf(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& prompt,
                        const SpeechSettings& settings);
std::vector<std::int32_t> decoderInput(const Transcript& t, const SpeechSettings& settings);

// The run alignWords and rankAlignmentHeads read: `heads`' cross-attention over the transcript.
TranscriptRun transcriptRun(const AttentionModel& model, std::shared_ptr<const AudioFeatures> audio,
                            const Transcript& transcript, const SpeechSettings& settings,
                            const std::vector<DecoderHead>& heads, const Tokenizer* tokenizer);

// Every head of the decoder, layer by layer.
std::vector<DecoderHead> everyDecoderHead(const ModelInfo& info);

} // namespace attnscope::core
