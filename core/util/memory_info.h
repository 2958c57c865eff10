// How much memory the machine can give us, for refusing work that would not fit (with a message, not a crash).
#pragma once

#include <cstdint>
#include <string>

namespace attnscope::core {

// MemAvailable from /proc/meminfo (bytes), or 0 when unknown.
std::uint64_t availableMemoryBytes();
// "3.2 GiB", "512 MiB"
std::string formatBytes(std::uint64_t bytes);

} // namespace attnscope::core
