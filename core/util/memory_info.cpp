// memory_info: /proc/meminfo reader.
#include "util/memory_info.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace attnscope::core {

std::uint64_t availableMemoryBytes()
{
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("MemAvailable:", 0) == 0) {
            std::istringstream s(line.substr(13));
            std::uint64_t kib = 0;
            s >> kib;
            return kib * 1024;
        }
    return 0;
}

std::string formatBytes(std::uint64_t bytes)
{
    char buf[32];
    if (bytes >= (1ull << 30))
        std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
    else
        std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1ull << 20));
    return buf;
}

} // namespace attnscope::core
