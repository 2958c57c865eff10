// Fuzz harness: a GGUF file opened as a model (config, every tensor the family asks for, in the shapes it asks for)
// and run forward on a few tokens. Seeded with every reference case's GGUF: Mixture-of-Experts (stacked 3-D expert
// tensors), DeepSeek's latent attention, gpt-oss's MXFP4 blocks and sinks, SmolLM3's NoPE layers, Granite-MoE, T5.
#include "fuzz_model_run.h"
#include "fuzz_support.h"
#include "model/model_loader.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "model.gguf");
    try {
        const auto loaded = core::loadModel(path);
        fuzz::runFewTokens(*loaded.model);
    } catch (const core::Error&) {
    }
    return 0;
}
