// An image run's tensors under the vision reference data's names: the model's own outputs (patch_embeds, pos_embed,
// embedding, last_hidden_state, pooled outputs and heads), each layer's attn_prob and hidden, and the rollout the
// app draws (analysis/rollout.h, from a capture of the same run). What `attnscope-cli dump` writes for a vision model.
#pragma once

#include "image/pixels.h"
#include "io/safetensors.h"
#include "model/attention_model.h"

#include <memory>
#include <string>

namespace attnscope::core {

// pixel_values F32 [1, 3, H, W] from a safetensors file (the reference's pixel_values.safetensors, or ours).
PixelValues readPixelValues(const std::string& path);
// Throws Error(BadInput) when `model` is not a vision model.
std::vector<OutputTensor> dumpImage(const AttentionModel& model, std::shared_ptr<const PixelValues> pixels);

} // namespace attnscope::core
