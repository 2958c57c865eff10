// NumPy's .npy format (version 1.0) for float32 arrays: what the CLI and the app's data exports write, so a notebook
// reads them with numpy.load.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::core {

// The whole file: magic, header (little-endian float32, C order, this shape; padded to 64 bytes), the values.
std::string npyBytes(const std::vector<std::int64_t>& shape, const float* values);

} // namespace attnscope::core
