// memory_info: /proc/meminfo reader.
#include "util/memory_info.h"

#include "util/error.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <malloc.h>
#include <sstream>

namespace attnscope::core {

void returnLargeBlocksToSystem()
{
    mallopt(M_MMAP_THRESHOLD, 32 << 20); // a fixed threshold also turns glibc's dynamic raising off
    // ... and leaves the trim threshold at 128 kB, so the buffers a forward pass frees and allocates again for every
    // layer went back to the system each time and came back as fresh pages: a page fault per 4 kB, a tenth of a
    // corpus scan's time. Keep up to 64 MB of freed memory for reuse instead.
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

namespace {
std::uint64_t statusKiB(const char* key)
{
    std::ifstream in("/proc/self/status");
    std::string line;
    const std::string prefix = std::string(key) + ":";
    while (std::getline(in, line))
        if (line.rfind(prefix, 0) == 0) {
            std::istringstream s(line.substr(prefix.size()));
            std::uint64_t kib = 0;
            s >> kib;
            return kib;
        }
    return 0;
}
} // namespace

ResidentSplit residentSplit() { return {statusKiB("RssAnon") * 1024, statusKiB("RssFile") * 1024}; }

std::uint64_t peakResidentBytes()
{
    return statusKiB("VmHWM") * 1024;
}

std::uint64_t residentBytes()
{
    return statusKiB("VmRSS") * 1024;
}

void resetPeakResident()
{
    std::ofstream("/proc/self/clear_refs") << "5"; // resets VmHWM to the current RSS (Linux 4.0+)
}

namespace {
// A "Key:   N kB" line of /proc/meminfo in bytes, or 0.
std::uint64_t meminfoBytes(const std::string& key)
{
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key, 0) == 0) {
            std::istringstream s(line.substr(key.size()));
            std::uint64_t kib = 0;
            s >> kib;
            return kib * 1024;
        }
    return 0;
}
} // namespace

std::uint64_t availableMemoryBytes()
{
    std::uint64_t available = meminfoBytes("MemAvailable:");
    if (const char* cap = std::getenv("ATTNSCOPE_MEMORY_LIMIT"); cap && *cap) {
        char* end = nullptr;
        double v = std::strtod(cap, &end);
        const char unit = end ? static_cast<char>(std::toupper(static_cast<unsigned char>(*end))) : '\0';
        v *= unit == 'K' ? 1024.0 : unit == 'M' ? 1048576.0 : unit == 'G' ? 1073741824.0 : 1.0;
        if (v > 0 && std::isfinite(v) && (available == 0 || v < static_cast<double>(available)))
            available = static_cast<std::uint64_t>(v);
    }
    return available;
}
std::uint64_t totalMemoryBytes() { return meminfoBytes("MemTotal:"); }

std::string formatBytes(std::uint64_t bytes)
{
    char buf[32];
    if (bytes >= (1ull << 30))
        std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
    else if (bytes >= (1ull << 20))
        std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1ull << 20));
    else // a small model's weights or a short text's records: "0 MiB" would say nothing
        std::snprintf(buf, sizeof buf, "%.0f KiB", static_cast<double>(bytes) / 1024.0);
    return buf;
}

void checkFits(std::uint64_t need, const std::string& what, const std::string& advice, const std::string& file)
{
    const auto available = availableMemoryBytes();
    if (available > 0 && need > available / 2)
        throw Error(ErrorCode::BadInput, what + " would need about " + formatBytes(need) + ", more than half of the " +
                                             formatBytes(available) + " available; " + advice,
                    file);
}

} // namespace attnscope::core
