// A picture and a prompt for a vision-language decoder, as a reference input.json gives them ("image": a PNG file
// beside it, or {"file": ...}; "input_ids" with one placeholder per picture), read and prepared the model's way, and
// the reference dump of such a run (the vision tower's, the projector's and the decoder's tensors, and a greedy
// generation's steps when the input asks for them).
#pragma once

#include "image/pixels.h"
#include "image/preprocess.h"
#include "io/safetensors.h"
#include "model/attention_model.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

class VisionLanguageModel;

// The model as a vision-language model; Error(BadInput) naming it when it reads no picture.
const VisionLanguageModel& asVisionLanguage(const AttentionModel& model);

struct PicturePrompt {
    Image8 resized;  // after the resize (and a LLaVA processor's padding), 8-bit
    Image8 prepared; // what the tower sees before rescaling: after the crop
    std::shared_ptr<const PixelValues> pixels;
    std::vector<std::int32_t> ids;      // as given: one placeholder per picture
    std::vector<std::int32_t> expanded; // each placeholder expanded in place to the picture's image tokens
};

// A PNG picture prepared as the preprocessor_config.json in `modelFolder` says, with the prompt's ids expanded.
PicturePrompt picturePrompt(const AttentionModel& model, const std::string& modelFolder, const std::string& pngPath,
                            std::vector<std::int32_t> ids);
// The same from a reference input.json (the picture named beside it).
PicturePrompt picturePromptOf(const AttentionModel& model, const std::string& modelFolder, const nlohmann::json& input,
                              const std::string& inputFile);

// Every tensor of the run under the reference's names: resized, cropped, pixel_values, vision.pre_layrnorm,
// vision.layer{l}.attn_prob / hidden, image_features, image_embeds, input_ids, input_ids_expanded, position_ids,
// inputs_embeds, attn_mask, layer{l}.attn_prob / hidden, norm, logits; and with "generation": {"n_new": N} the greedy
// steps gen.ids, gen.step{s}.layer{l}.attn_prob [heads, T + s] and gen.step{s}.logits (s >= 1). The model folder is
// the model's source.
std::vector<OutputTensor> dumpPicturePrompt(const AttentionModel& model, const nlohmann::json& input,
                                            const std::string& inputFile);

} // namespace attnscope::core
