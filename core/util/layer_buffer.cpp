// Large buffers mapped directly (with a transparent-huge-page hint), small ones in a vector; the last freed mapping of
// a thread kept for the next buffer of its size.
#include "util/layer_buffer.h"

#include <new>
#include <sys/mman.h>

namespace attnscope::core {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Mappings up to this size are kept for reuse when freed, as malloc keeps freed memory (util/memory_info.cpp).
constexpr std::size_t kKeepAtMost = std::size_t{64} << 20;

// One freed mapping per thread. A corpus scan asks for a buffer of the same size every segment, and a fresh mapping's
// pages are zeroed by the kernel as they are first touched (a sixtieth of the scan's time).
struct SpareMapping {
    void* data = nullptr;
    std::size_t bytes = 0;
    void release()
    {
        if (data)
            ::munmap(data, bytes);
        data = nullptr;
        bytes = 0;
    }
    ~SpareMapping() { release(); }
};
thread_local SpareMapping tSpare;
} // namespace

LayerBuffer::LayerBuffer(std::size_t floats)
    : m_size(floats)
{
    const std::size_t bytes = floats * sizeof(float);
    if (bytes < 2 * kHugePage) { // not worth a mapping of its own
        m_small.resize(floats);
        m_data = m_small.data();
        return;
    }
    m_mapped = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    if (tSpare.data && tSpare.bytes == m_mapped) {
        m_data = static_cast<float*>(tSpare.data);
        tSpare.data = nullptr;
        tSpare.bytes = 0;
        return;
    }
    void* p = ::mmap(nullptr, m_mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    ::madvise(p, m_mapped, MADV_HUGEPAGE); // a hint: without huge pages it is an ordinary mapping
#endif
    m_data = static_cast<float*>(p);
}

LayerBuffer::~LayerBuffer()
{
    if (!m_mapped)
        return;
    if (m_mapped > kKeepAtMost) {
        ::munmap(m_data, m_mapped);
        return;
    }
    tSpare.release();
    tSpare.data = m_data;
    tSpare.bytes = m_mapped;
}

} // namespace attnscope::core
