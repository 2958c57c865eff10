// Fuzz harness: a safetensors file opened as the weights of each of the newer families (beside that family's
// reference config.json) and run forward: Hugging Face's layouts of experts and routers (Qwen3-MoE, OLMoE, gpt-oss's
// interleaved gate/up and its *_blocks/*_scales MXFP4, Granite-MoE's fused and stacked experts and shared expert),
// DeepSeek's latent attention, SmolLM3, and a vision
// transformer's patch embedding. The input is tried against every config in turn (a real file of one family is
// refused by the others' tensor names at once).
#include "fuzz_model_run.h"
#include "fuzz_support.h"
#include "model/model_loader.h"
#include "util/error.h"

#include <filesystem>
#include <fstream>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {
const char* const kFamilies[] = {"gptoss-tiny", "qwen3moe-tiny",         "olmoe-tiny", "deepseek2-tiny",
                                 "smollm3-tiny", "granitemoeshared-tiny", "vit-tiny"};

// scratch/<case>/config.json, copied once from the reference data.
std::string folderFor(const std::string& name)
{
    const fs::path folder = fs::path(fuzz::scratchFolder()) / name;
    if (!fs::exists(folder / "config.json")) {
        fs::create_directories(folder);
        fs::path source = fs::path(ATTNSCOPE_SOURCE_DIR) / ".." / "shared" / "testdata" / name;
        if (!fs::exists(source)) // a case of the project's own
            source = fs::path(ATTNSCOPE_SOURCE_DIR) / "tests" / "data" / "reference" / name;
        fs::copy_file(source / "config.json", folder / "config.json", fs::copy_options::overwrite_existing);
        if (fs::exists(source / "preprocessor_config.json"))
            fs::copy_file(source / "preprocessor_config.json", folder / "preprocessor_config.json",
                          fs::copy_options::overwrite_existing);
    }
    return folder.string();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    for (const char* name : kFamilies) {
        const auto folder = folderFor(name);
        std::ofstream(folder + "/model.safetensors", std::ios::binary | std::ios::trunc)
            .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
        try {
            const auto loaded = core::loadModel(folder);
            fuzz::runFewTokens(*loaded.model);
        } catch (const core::Error&) {
        }
    }
    return 0;
}
