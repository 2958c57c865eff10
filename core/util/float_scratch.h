// Scratch memory that grows on demand and is never value-initialised, 64-byte aligned (floats, or the integer digits
// of the row kernels). A std::vector zero-fills what it grows by: for the attention's per-head score blocks that was
// megabytes of memset per head and layer.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace attnscope::core {

template <class T>
class AlignedScratch {
public:
    // Room for n elements (capacity kept when it shrinks); the contents are unspecified.
    T* resize(std::size_t n)
    {
        if (n > m_capacity) {
            const std::size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
            m_data.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
            if (!m_data)
                throw std::bad_alloc();
            m_capacity = n;
        }
        m_size = n;
        return m_data.get();
    }
    T* data() { return m_data.get(); }
    const T* data() const { return m_data.get(); }
    std::size_t size() const { return m_size; }
    T& operator[](std::size_t i) { return m_data.get()[i]; }
    const T& operator[](std::size_t i) const { return m_data.get()[i]; }

private:
    struct Free {
        void operator()(T* p) const { std::free(p); }
    };
    std::unique_ptr<T, Free> m_data;
    std::size_t m_size = 0, m_capacity = 0;
};

using FloatScratch = AlignedScratch<float>;

} // namespace attnscope::core
