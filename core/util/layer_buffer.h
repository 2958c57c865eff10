// A layer's captured attention (heads x queries x keys floats: 38 MB for 1,024 tokens of a 9-head model), in
// anonymous memory that asks the kernel for 2 MB pages. As a std::vector it was zero-filled and then faulted in
// 4 kB at a time on every forward pass (glibc maps blocks this large afresh each time): 9,000 page faults per run.
// Nothing is written before the attention is, and a freed buffer's mapping (up to 64 MB) is kept for the next one of
// its size on the same thread, so the contents start unspecified: whoever fills it writes every element
// (attendAllHeads writes each kept row whole, masked entries as 0).
#pragma once

#include <cstddef>
#include <vector>

namespace attnscope::core {

class LayerBuffer {
public:
    explicit LayerBuffer(std::size_t floats = 0);
    ~LayerBuffer();
    LayerBuffer(const LayerBuffer&) = delete;
    LayerBuffer& operator=(const LayerBuffer&) = delete;

    float* data() { return m_data; }
    std::size_t size() const { return m_size; }

private:
    float* m_data = nullptr;
    std::size_t m_size = 0, m_mapped = 0; // m_mapped: bytes mapped (0: small, held in m_small)
    std::vector<float> m_small;
};

} // namespace attnscope::core
