// Fuzz harness: a corpus scan's result file, then what the views and `heads` read from it.
#include "analysis/head_atlas.h"
#include "analysis/scan_result.h"
#include "fuzz_support.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "scan.safetensors");
    try {
        auto r = core::ScanResult::load(path);
        for (const auto& name : r.profileNames)
            (void)core::summariseHeads(r, name);
        const auto atlas = core::atlasFromScan(r);
        (void)core::formatAtlas(atlas, core::TableFormat::Json);
        if (r.layers * r.heads <= 64)
            (void)core::clusterOrder(core::headDistances(r), r.layers * r.heads);
        r.merge(core::ScanResult::load(path));
    } catch (const core::Error&) {
    }
    return 0;
}
