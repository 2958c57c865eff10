// How a speech model (Whisper) is prompted and decoded, from its generation_config.json (falling back to config.json,
// where older checkpoints keep the suppressions): the start of the transcript, the language and task tokens, the
// tokens never written, and the decoder heads whose cross-attention aligns words with the audio.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnscope::core {

struct ModelInfo;

struct DecoderHead {
    int layer = 0, head = 0;
    bool operator==(const DecoderHead&) const = default;
};

struct SpeechSettings {
    std::int32_t start = -1;        // <|startoftranscript|>
    std::int32_t end = -1;          // <|endoftext|>: ends the transcript
    std::int32_t noTimestamps = -1; // <|notimestamps|>
    bool multilingual = false;      // the prompt names a language and a task
    std::map<std::string, std::int32_t> languages; // "en" -> <|en|>
    std::map<std::string, std::int32_t> tasks;     // "transcribe", "translate"
    std::vector<std::int32_t> suppress;        // never written
    std::vector<std::int32_t> suppressAtBegin; // never the first token written
    // The heads OpenAI's word timings read; the decoder's second half when the file names none (openai's default).
    std::vector<DecoderHead> alignmentHeads;
    bool alignmentHeadsGiven = false;
    std::string source; // the file read ("" when the folder has neither)
};

// The folder's settings for a model of `info`'s shape; every id and head is checked against it (Error(BadConfig)
// naming the file and key).
SpeechSettings readSpeechSettings(const std::string& folder, const ModelInfo& info);

// The transcript's start: <|startoftranscript|>, then (multilingual) the language and the task, then
// <|notimestamps|>. `language` is a code ("en") or a token ("<|en|>"); Error(BadInput) naming the ones the model knows.
std::vector<std::int32_t> speechPrompt(const SpeechSettings& s, const std::string& language, const std::string& task);

// The decoder heads "l:h,l:h" (or "all", or "" for the settings' own) checked against the model's shape.
std::vector<DecoderHead> parseDecoderHeads(const std::string& text, const SpeechSettings& s, const ModelInfo& info);

} // namespace attnscope::core
