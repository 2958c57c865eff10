// Float scratch memory that grows on demand and is never value-initialised, 64-byte aligned. A std::vector zero-fills
// what it grows by: for the attention's per-head score blocks that was megabytes of memset per head and layer.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace attnscope::core {

class FloatScratch {
public:
    // Room for n floats (capacity kept when it shrinks); the contents are unspecified.
    float* resize(std::size_t n)
    {
        if (n > m_capacity) {
            const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
            m_data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
            if (!m_data)
                throw std::bad_alloc();
            m_capacity = n;
        }
        m_size = n;
        return m_data.get();
    }
    float* data() { return m_data.get(); }
    const float* data() const { return m_data.get(); }
    std::size_t size() const { return m_size; }
    float& operator[](std::size_t i) { return m_data.get()[i]; }
    const float& operator[](std::size_t i) const { return m_data.get()[i]; }

private:
    struct Free {
        void operator()(float* p) const { std::free(p); }
    };
    std::unique_ptr<float, Free> m_data;
    std::size_t m_size = 0, m_capacity = 0;
};

} // namespace attnscope::core
