// Fuzz harness: PyTorch checkpoints (ZIP directory, legacy layout, the restricted unpickler, tensor views against their
// storages) and every tensor read through the checkpoint as the product engine would.
#include "fuzz_support.h"
#include "io/checkpoint.h"
#include "io/pytorch_file.h"
#include "util/error.h"

#include <vector>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "pytorch_model.bin");
    try {
        const auto c = core::Checkpoint::openPytorch(path);
        std::vector<float> row;
        for (const auto& name : c->names())
            try {
                const auto v = c->get(name);
                row.resize(static_cast<std::size_t>(v.cols()));
                for (std::int64_t r = 0; r < v.rows(); ++r)
                    v.decodeRow(r, 0, v.cols(), row.data());
            } catch (const core::Error&) { // an integer tensor: not a weight, refused by name
            }
    } catch (const core::Error&) {
    }
    return 0;
}
