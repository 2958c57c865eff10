// Read-only memory map of a whole file (RAII). Weights are used in place from the map.
//
// A file truncated underneath the program would kill it with SIGBUS the moment a page past the new end is read. Every
// map registers its address range; a process-wide SIGBUS handler puts a zero page over a faulting page inside one of
// them, marks that map damaged and lets the reader go on. Whoever reads the map asks damaged() after its work (the
// checkpoint does after every layer) and refuses the result with a message naming the file: the program survives and
// says what happened. A fault outside every map keeps the default action.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <ctime>

namespace attnscope::core {

class MappedFile {
public:
    // Throws Error(Io) naming the file when it cannot be opened (or is not a regular file, e.g. a FIFO) or mapped.
    // An empty file maps to size 0.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::uint8_t* data() const noexcept { return m_data; }
    std::size_t size() const noexcept { return m_size; }
    const std::string& path() const noexcept { return m_path; }
    // True once a read hit a page the file no longer has (it was truncated while mapped: what was read there is
    // zeros), or once the file was written over in place (its size or modification time changed: the map shows a mix
    // of old and new bytes). A file replaced by a rename is not damaged: the map keeps the old file.
    bool damaged() const noexcept;

private:
    std::string m_path;
    const std::uint8_t* m_data = nullptr;
    std::size_t m_size = 0;
    int m_slot = -1; // registration in the SIGBUS handler's table, or -1
    int m_fd = -1;   // the file, open for as long as it is mapped
    struct timespec m_modified {}, m_changed {}; // mtime, and ctime (which a writer cannot put back)
    unsigned long m_links = 0;                   // a rename over the file changes its ctime through this
};

} // namespace attnscope::core
