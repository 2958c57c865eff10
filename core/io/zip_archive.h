// Read-only view of a ZIP archive's stored (uncompressed) entries inside a memory map: what PyTorch's torch.save
// writes (every entry stored, data often aligned to 64 bytes, ZIP64 records past 4 GB). Written from the PKWARE
// APPNOTE's description of the end-of-central-directory record, its ZIP64 forms, central directory headers and local
// file headers. Entries are never inflated: a compressed entry is refused by name (a torch.save archive has none, and
// a deflated entry is how a zip bomb makes a small file claim gigabytes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnscope::core {

class ZipArchive {
public:
    struct Entry {
        std::string name;
        std::uint64_t dataOffset = 0; // first byte of the entry's data in the file
        std::uint64_t size = 0;       // bytes (stored: compressed size == size)
        std::uint16_t method = 0;     // 0 = stored
    };

    // Reads the central directory of the `size` bytes at `data` (the whole file, mapped). Throws Error(CorruptFile)
    // naming `path` for a truncated or inconsistent archive (records past the end, entries overlapping the directory,
    // duplicate names, more entries than the directory can hold).
    ZipArchive(const std::uint8_t* data, std::uint64_t size, std::string path);

    // True when the bytes start like a ZIP archive (a local file header).
    static bool looksLikeZip(const std::uint8_t* data, std::uint64_t size);

    const std::vector<Entry>& entries() const { return m_entries; }
    const Entry* find(const std::string& name) const;
    // The stored bytes of an entry. Throws Error(CorruptFile) for a compressed entry, naming it.
    const std::uint8_t* bytes(const Entry& e) const;

private:
    const std::uint8_t* m_data;
    std::uint64_t m_size;
    std::string m_path;
    std::vector<Entry> m_entries;
    std::map<std::string, std::size_t> m_index;
};

} // namespace attnscope::core
