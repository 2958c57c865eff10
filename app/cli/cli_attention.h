// attnscope-cli attention: one layer's attention of a text as a NumPy file, what Python's Capture.attention returns
// (run/layer_attention.h); and the text-or-ids capture that it and `page` share.
#pragma once

#include "cli_args.h"
#include "model/model_loader.h"
#include "run/text_capture.h"

#include <memory>
#include <string>
#include <vector>

namespace attnscope::cli {

extern const std::vector<std::string> kAttentionOptions;
extern const std::vector<std::string> kAttentionFlags;

int cmdAttention(const Args& a, const std::vector<std::string>& builtins);

// --ids "5 6 7" (or "5,6,7") as tokens spelled by their ids (each checked against the vocabulary).
std::vector<core::Token> idArgument(const Args& a, const core::LoadedModel& loaded);
// The --ids tokens, else --text / --text-file through the model's tokenizer, captured with the model's defaults.
std::shared_ptr<const core::TextCapture> captureOfArguments(const Args& a, const core::LoadedModel& loaded);

} // namespace attnscope::cli
