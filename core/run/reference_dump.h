// Runs a model on a reference-style input.json and collects every captured tensor under the reference names
// (the layout of ../shared/testdata/*/expected.safetensors). Used by `attnscope-cli dump` and the tests.
#pragma once

#include "io/safetensors.h"
#include "model/attention_model.h"

#include <nlohmann/json_fwd.hpp>
#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

// Transformer-XL input: "segments" (list of id lists; or "token_ids" with "segment_length"/"tgt_len"),
// optional "mem_len", "same_length", "clamp_len". GPT-2 input: "token_ids".
// Names: Transformer-XL seg{s}.embedding/pos_emb/mask and seg{s}.layer{l}.attn_prob/term_a..term_d/
// mems_in/attn_output/hidden; GPT-2 embedding, layer{l}.attn_prob/attn_output/hidden, ln_f, logits.
// `inputFile` is only used in messages.
// A JSON list of token ids (each 0 .. 2^31 - 1); Error(BadInput) naming `file` and `key` otherwise.
std::vector<std::int32_t> jsonIdList(const nlohmann::json& v, const std::string& file, const std::string& key);

// How a reference-style input.json runs: its segments and run options (the parsing dumpReference does first).
struct ReferenceRun {
    std::vector<std::vector<std::int32_t>> segments;
    RunOptions options;
    std::vector<int> streamRows; // a speech encoder's rows to dump (its sites are too large whole); empty: all
};
ReferenceRun parseReferenceInput(const AttentionModel& model, const nlohmann::json& input, const std::string& inputFile);

// The observer dumpReference runs with: every captured tensor under the reference's names, appended to `out`.
std::unique_ptr<AttentionObserver> referenceObserver(const ModelInfo& info, std::vector<OutputTensor>& out);

// Every tensor of the run under the reference's names (a vision-language model's: run/picture_prompt.h). An encoder-decoder model's input is "input_ids" (the source)
// and "decoder_input_ids" (the target from the decoder start token); its tensors encoder.embedding,
// encoder.layer{l}.attn_prob / hidden, encoder.last_hidden_state, decoder.embedding, decoder.layer{l}.self_attn_prob /
// cross_attn_prob / hidden, decoder.last_hidden_state, logits, and for T5 {encoder,decoder}.position_bucket / _bias.
std::vector<OutputTensor> dumpReference(const AttentionModel& model, const nlohmann::json& input,
                                        const std::string& inputFile);

// An encoder-decoder model's greedy generation of `steps` tokens from the decoder start token, with the input's source,
// in the layout of generation.safetensors: step{s}.layer{l}.self_attn [heads, s + 1], step{s}.layer{l}.cross_attn
// [heads, S], step{s}.logits [vocab]. `generated` receives the new ids.
std::vector<OutputTensor> dumpGeneration(const AttentionModel& model, const nlohmann::json& input,
                                         const std::string& inputFile, int steps,
                                         std::vector<std::int32_t>* generated = nullptr);

} // namespace attnscope::core
