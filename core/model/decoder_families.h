// What each decoder family adds to the shared Llama-family readers, as a row of the family table
// (FamilyRow::decoder): its tensor names, the config.json keys and GGUF metadata of its own, and its quirks (the
// block's differences, the same whichever file kind was read). docs/architecture.md, "Adding a family".
#pragma once

#include "model/config_reader.h"
#include "model/tensor_names.h"

#include <string>

namespace attnscope::core {

class GgufFile;

struct DecoderFamily {
    const DecoderNames& (*names)();
    // The family's own config.json keys, read after the shared ones (sizes, heads, rope theta, biases, tying); null:
    // none. LlamaConfig::modelType says which of the row's model types the file is.
    void (*jsonKeys)(const ConfigReader& r, const nlohmann::json& j, LlamaConfig& c) = nullptr;
    // Its own GGUF metadata, read after the shared keys; null: none.
    void (*ggufKeys)(const GgufFile& g, LlamaConfig& c) = nullptr;
    // What the family changes in the Llama block, set after either reader; null: none.
    void (*quirks)(LlamaConfig& c) = nullptr;
    // The MLP's activation as config.json names it: the key, the one value the forward computes, and whose it is
    // (for the message refusing another).
    const char* activationKey = "hidden_act";
    const char* activation = "silu";
    const char* activationNote = "Llama-family models";
};

extern const DecoderFamily kLlamaFamily, kQwen3Family, kQwen3MoeFamily, kOlmoeFamily, kSmolLM3Family, kGptOssFamily,
    kMixtralFamily, kGraniteFamily, kDeepseekFamily, kOlmo2Family, kGemma2Family, kGemma3Family, kPhi3Family,
    kGptNeoXFamily, kLfm2Family, kQwen35Family, kGraniteHybridFamily, kQwen3NextFamily,
    kNemotronHFamily;

} // namespace attnscope::core
