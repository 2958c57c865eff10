// Large buffers mapped directly (with a transparent-huge-page hint), small ones in a vector.
#include "util/layer_buffer.h"

#include <new>
#include <sys/mman.h>

namespace attnscope::core {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

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
    if (m_mapped)
        ::munmap(m_data, m_mapped);
}

} // namespace attnscope::core
