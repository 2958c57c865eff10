// A recording for a speech model and what is run on it: its features the model's way (preprocessor_config.json of
// the model's folder, or a stored input_features tensor) and the transcript the decoder reads (typed, given as ids,
// or the model's own). Word timings over such a run: analysis/speech_alignment.h.
#pragma once

#include "audio/audio_features.h"
#include "audio/log_mel.h"
#include "audio/speech_settings.h"
#include "model/attention_model.h"
#include "run/text_capture.h"

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

// The transcript to time: `ids` either the whole decoder input (from the start token: start sequence,
// <|notimestamps|>, the text, the end) or the text tokens alone, wrapped in `prompt` and the end.
struct Transcript {
    std::vector<std::int32_t> sot, text;
};
Transcript transcriptOf(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& prompt,
                        const SpeechSettings& settings);
std::vector<std::int32_t> decoderInput(const Transcript& t, const SpeechSettings& settings);

// The decoder's input for a capture of a recording: `ids` as given when they start with the start token, else the
// prompt (language en, transcribe) and then `ids` (a text's tokens); with no ids the model's own greedy transcription
// (the settings' suppressions, up to `maxNewTokens` or the end token) after the prompt.
std::vector<std::int32_t> speechDecoderIds(const AttentionModel& model, const SpeechSettings& settings,
                                           std::shared_ptr<const AudioFeatures> audio,
                                           const std::vector<std::int32_t>* ids, int maxNewTokens);

// `ids` continued greedily by up to `count` tokens (ending at the end token), never writing the settings' suppressed
// tokens (nor, right after the prompt, its begin-suppressed ones).
std::vector<std::int32_t> continueTranscript(const AttentionModel& model, const SpeechSettings& settings,
                                             std::shared_ptr<const AudioFeatures> audio,
                                             std::vector<std::int32_t> ids, int count);

// A capture of a recording heard with `text` (its transcript, tokenized after the prompt; empty: the prompt alone)
// continued by the model for up to `generate` tokens; the audio stream's tokens are its encoder positions labelled by
// their time ("0.02 s"). What the window and headless export show. Error naming the file for a recording that does
// not read.
// A capture of the same features given as options.previous is continued, not run again (the window's Generate adds
// one token at a time so). With `generate`, the model writes through its key/value cache first and the whole
// transcript is captured after: the encoder runs twice then (docs/performance.md, "Speech").
std::shared_ptr<const TextCapture> captureRecording(const AttentionModel& model, const std::string& folder,
                                                    const Tokenizer& tokenizer,
                                                    std::shared_ptr<const AudioFeatures> audio,
                                                    const std::string& text, int generate, CaptureOptions options);

// Every head of the decoder, layer by layer.
std::vector<DecoderHead> everyDecoderHead(const ModelInfo& info);

} // namespace attnscope::core
