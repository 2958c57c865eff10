// The options of a corpus scan as every front end builds them (the window's scan dialog and its compute job, headless
// export, `attnscope-cli scan`, Python's Model.scan): what the user chose, the model's defaults for the rest, checked
// in one place, so a default cannot differ between them.
#pragma once

#include "analysis/relpos_scan.h"

#include <optional>
#include <string>

namespace attnscope::core {

// What a user may choose; anything left unset takes the model's default (defaultScanMemLen / defaultScanSegmentLen).
struct ScanChoices {
    std::optional<int> memLen;
    std::optional<int> segmentLen;
    std::int64_t maxTokens = -1; // -1: the whole text
    std::optional<bool> sameLength;
    std::optional<int> clampLen;
    std::string terms;              // extra profiles ("a,b,d", "1,2,3"); see ScanOptions::terms
    std::optional<BandSplit> bands; // the band split of band profiles (default: the model's, bandsFor)
};

// The scan options for `info`: the choices with defaults filled in, checked (checkScanOptions: Error(BadInput) naming
// the wrong one). Progress, partial results and the stop token are the caller's to add.
ScanOptions scanOptionsFor(const ModelInfo& info, const ScanChoices& choices);

// "1,2,3": one profile per band of the model's default split (what Fig. 7's counterpart draws for a rotary model).
// Error(BadInput) for a model without rotary embeddings.
std::string everyBandProfile(const ModelInfo& info);

} // namespace attnscope::core
