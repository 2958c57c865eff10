// How much memory the machine can give us, for refusing work that would not fit (with a message, not a crash).
#pragma once

#include <cstdint>
#include <string>

namespace attnscope::core {

// MemAvailable from /proc/meminfo (bytes), or 0 when unknown; less when the environment variable
// ATTNSCOPE_MEMORY_LIMIT says so ("2G", "512M", "65536": a share of a machine shared with others, and how tests
// reach the refusals without filling the machine).
std::uint64_t availableMemoryBytes();
// MemTotal from /proc/meminfo (bytes), or 0 when unknown.
std::uint64_t totalMemoryBytes();
// Makes freed large blocks go back to the system at once. glibc raises its mmap threshold after the first large
// free, so later tensors of that size come from the heap and stay resident after they are freed: an app that
// recomputes a long text on every keystroke would grow by a text's worth of tensors per edit. Freed heap memory up
// to 64 MB is kept for reuse instead of trimmed (each layer's buffers would come back as fresh, faulting pages).
// Call first in main().
void returnLargeBlocksToSystem();
// Peak and current resident memory of this process (bytes; 0 when unknown), and a reset of the peak.
std::uint64_t peakResidentBytes();
std::uint64_t residentBytes();
void resetPeakResident();
// Resident memory of this process split by kind: anonymous (heap, buffers) and file-backed (mapped weights).
struct ResidentSplit {
    std::uint64_t anonymous = 0, file = 0;
};
ResidentSplit residentSplit();
// "3.2 GiB", "512 MiB"
std::string formatBytes(std::uint64_t bytes);
// The one refusal for anything a file or a request sizes: Error(BadInput) "`what` would need about N, more than half
// of the M available; `advice`" (naming `file` when given) when `need` passes half the memory available now.
void checkFits(std::uint64_t need, const std::string& what, const std::string& advice, const std::string& file = {});


} // namespace attnscope::core
