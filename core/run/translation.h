// Running an encoder-decoder model on a source and a target, the target typed (teacher forcing) or generated token by
// token (greedy or sampled) through the decoder's key/value cache, the encoder run once. What the views keep is every
// site's probabilities: a translation is sentences long, so [heads, rows, columns] per site is small (6 + 6 layers, 8
// heads, 30 x 30 tokens: 1 MB), and a grid, an alignment or a ranking of heads reads it without a forward pass.
#pragma once

#include "model/seq2seq.h"
#include "tokenize/tokenizer.h"

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <random>

namespace attnscope::core {

class StopToken;

// One site's attention over the whole run: [heads, rows, cols], row i over column j (masked entries 0).
struct SiteAttention {
    int heads = 0, rows = 0, cols = 0;
    std::vector<float> p;
    float at(int head, int row, int col) const
    {
        return p[(static_cast<std::size_t>(head) * rows + row) * cols + col];
    }
};

struct Translation {
    std::vector<std::int32_t> source;
    std::vector<std::int32_t> target;      // starts with the decoder start token
    int typed = 0;                         // target tokens given (teacher forcing); the rest were generated
    std::vector<SiteAttention> sites;      // by ModelInfo::sites index
    std::vector<float> logits;             // [target, vocab]: row t predicts target token t + 1
    int vocab = 0;
    bool finished = false;                 // generation stopped at the end-of-sequence token
};

struct GenerateOptions {
    int maxNewTokens = 32;
    bool sample = false;       // false: greedy (the largest logit)
    float temperature = 1.0f;
    std::uint64_t seed = 0;
    bool stopAtEos = true;
    const StopToken* stop = nullptr;
    // After every generated token, the translation so far (for a window that shows it growing).
    std::function<void(const Translation&)> onStep;
};

// A typed source as the model reads it: the tokenizer's tokens with the special tokens it adds (</s> for T5, Marian,
// BART's <s> ... </s>). Error(BadInput) for a source that tokenizes to nothing.
std::vector<Token> sourceTokens(const Tokenizer& tokenizer, std::string_view text);
// A typed target as the decoder reads it: the decoder start token, then the text's tokens (no end token).
std::vector<std::int32_t> targetIds(const EncoderDecoderModel& model, const Tokenizer& target, std::string_view text);

// The target `target` (its first token the decoder start) read with the source: every site, every target row.
Translation teacherForce(const EncoderDecoderModel& model, std::span<const std::int32_t> source,
                         std::span<const std::int32_t> target, const StopToken* stop = nullptr);
// Continues `prefix` (at least the decoder start token) one token at a time.
Translation generate(const EncoderDecoderModel& model, std::span<const std::int32_t> source,
                     std::span<const std::int32_t> prefix, const GenerateOptions& options);

// The reference layout of ../shared/testdata/{t5,bart,marian}-tiny: input.json's input_ids and decoder_input_ids,
// tensors named encoder.embedding, encoder.layer{l}.attn_prob / hidden, encoder.last_hidden_state, decoder.embedding,
// decoder.layer{l}.self_attn_prob / cross_attn_prob / hidden, decoder.last_hidden_state, logits, and for T5
// {encoder,decoder}.position_bucket / position_bias. `inputFile` names the input in messages.
std::vector<OutputTensor> dumpSeq2Seq(const EncoderDecoderModel& model, const nlohmann::json& input,
                                      const std::string& inputFile);
// A greedy generation of `steps` tokens from the decoder start in the layout of generation.safetensors:
// step{s}.layer{l}.self_attn [heads, s + 1], step{s}.layer{l}.cross_attn [heads, S], step{s}.logits [vocab].
std::vector<OutputTensor> dumpGeneration(const EncoderDecoderModel& model, std::span<const std::int32_t> source,
                                         int steps, std::vector<std::int32_t>* generated = nullptr);

} // namespace attnscope::core
