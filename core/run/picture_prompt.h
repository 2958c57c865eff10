// A picture and a prompt for a vision-language decoder, as a reference input.json gives them ("image": a PNG file
// beside it, or {"file": ...}; "input_ids" with one placeholder per picture), read and prepared the model's way, and
// the reference dump of such a run (the vision tower's, the projector's and the decoder's tensors, and a greedy
// generation's steps when the input asks for them).
#pragma once

#include "image/pixels.h"
#include "image/preprocess.h"
#include "io/safetensors.h"
#include "model/attention_model.h"
#include "tokenize/tokenizer.h"

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

class VisionLanguageModel;

// The model as a vision-language model; Error(BadInput) naming it when it reads no picture.
const VisionLanguageModel& asVisionLanguage(const AttentionModel& model);

struct PicturePrompt {
    // Per picture, in prompt order: after the resize (and a LLaVA processor's padding), and what the tower sees before
    // rescaling (after the crop), 8-bit; its pixel values.
    std::vector<Image8> resized, prepared;
    std::vector<std::shared_ptr<const PixelValues>> pictures;
    std::vector<std::int32_t> ids;      // as given: one placeholder (Gemma 3: <start_of_image>) per picture
    std::vector<std::int32_t> expanded; // each placeholder expanded in place to the picture's image tokens
    // The run options that carry the pictures (RunOptions::image and morePictures).
    RunOptions runOptions() const;
};

// The expanded prompt as tokens to capture: text tokens as `tokenizer` names them, each picture token by its cell of
// the picture's grid ("▣r1c1", row-major; a second picture's "▣2 r1c1"). Null `tokenizer`: ids as <ID>.
std::vector<Token> pictureTokens(const AttentionModel& model, const PicturePrompt& prompt, const Tokenizer* tokenizer);

// PNG pictures prepared as the preprocessor_config.json in `modelFolder` says, with the prompt's ids expanded (LLaVA:
// each <image> to the picture's tokens). A model whose processor frames the tokens with text (Gemma 3's "\n\n" around
// <start_of_image> ... <end_of_image>) needs the expanded ids as its processor made them (`expanded`, or as `ids`
// when they hold the picture tokens already); they are checked against the pictures.
PicturePrompt picturePrompt(const AttentionModel& model, const std::string& modelFolder,
                            const std::vector<std::string>& pngPaths, std::vector<std::int32_t> ids,
                            std::vector<std::int32_t> expanded = {});
// The same from a typed prompt: `text` tokenized (the tokenizer's BOS added) with one placeholder per picture where the
// text has them, or one where the text starts when it has none: LLaVA's <image>, expanded to the picture's tokens;
// Gemma 3's <start_of_image>, which its processor writes out as "\n\n<start_of_image>" + the picture's
// <image_soft_token>s + "<end_of_image>\n\n" before tokenizing.
PicturePrompt picturePromptOfText(const AttentionModel& model, const Tokenizer& tokenizer, const std::string& modelFolder,
                                  const std::vector<std::string>& pngPaths, const std::string& text);
// The same from a reference input.json: "image" (a file or {"file": ...}) or "images" ([{"file": ...}, ...]) beside it,
// "input_ids", and "input_ids_expanded" where the model needs them.
PicturePrompt picturePromptOf(const AttentionModel& model, const std::string& modelFolder, const nlohmann::json& input,
                              const std::string& inputFile);

// Every tensor of the run under the reference's names: resized, cropped, pixel_values ([3, H, W] for one "image",
// [n, 3, H, W] for "images"), token_type_ids (1 at the picture tokens), vision.pre_layrnorm / last_hidden_state,
// vision.layer{l}.attn_prob / hidden, image_features, image_embeds, input_ids, input_ids_expanded, position_ids,
// inputs_embeds, attn_mask, layer{l}.attn_prob / hidden, norm, logits; and with "generation": {"n_new": N} the greedy
// steps gen.ids, gen.step{s}.layer{l}.attn_prob [heads, T + s] and gen.step{s}.logits (s >= 1). The model folder is
// the model's source.
std::vector<OutputTensor> dumpPicturePrompt(const AttentionModel& model, const nlohmann::json& input,
                                            const std::string& inputFile);

} // namespace attnscope::core
