// Read-only memory map of a whole file (RAII). Weights are used in place from the map.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope::core {

class MappedFile {
public:
    // Throws Error(Io) naming the file when it cannot be opened or mapped. An empty file maps to size 0.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::uint8_t* data() const noexcept { return m_data; }
    std::size_t size() const noexcept { return m_size; }
    const std::string& path() const noexcept { return m_path; }

private:
    std::string m_path;
    const std::uint8_t* m_data = nullptr;
    std::size_t m_size = 0;
};

} // namespace attnscope::core
