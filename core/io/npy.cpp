// npyBytes (npy.h).
#include "io/npy.h"

namespace attnscope::core {

std::string npyBytes(const std::vector<std::int64_t>& shape, const float* values)
{
    std::string dims;
    std::int64_t count = 1;
    for (auto d : shape) {
        dims += std::to_string(d) + ", ";
        count *= d;
    }
    if (shape.size() > 1)
        dims.resize(dims.size() - 1); // "(3, 4,)" reads as "(3, 4)"; one axis keeps its comma: "(3, )"
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
    const std::size_t total = 10 + header.size() + 1; // magic (6) + version (2) + length (2) + header + '\n'
    header.append((64 - total % 64) % 64, ' ');
    header.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    out.push_back(static_cast<char>(header.size() & 0xFF));
    out.push_back(static_cast<char>(header.size() >> 8));
    out += header;
    out.append(reinterpret_cast<const char*>(values), static_cast<std::size_t>(count) * sizeof(float));
    return out;
}

} // namespace attnscope::core
