// attnscope-cli's speech commands (Whisper): features of a recording, a transcription (generate --audio), and word
// timings with every head ranked by how well it aligns (align).
#pragma once

#include "cli_args.h"
#include "model/model_loader.h"

#include <string>
#include <vector>

namespace attnscope::cli {

extern const std::vector<std::string> kFeaturesOptions, kAlignOptions;

int cmdFeatures(const Args& a, const std::vector<std::string>& builtins);
int cmdAlign(const Args& a, const std::vector<std::string>& builtins);
// generate --audio: greedy (or sampled) transcription with the generation config's suppressions.
int generateSpeech(const Args& a, const core::LoadedModel& loaded);

} // namespace attnscope::cli
