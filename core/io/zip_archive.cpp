// ZipArchive: end-of-central-directory search, ZIP64 records, central directory and local headers, all bounds-checked.
#include "io/zip_archive.h"

#include "util/error.h"

#include <algorithm>
#include <cstring>

namespace attnscope::core {

namespace {
constexpr std::uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEndRecord = 0x06054b50,
                        kZip64EndRecord = 0x06064b50, kZip64Locator = 0x07064b50;
constexpr std::uint64_t kEndRecordSize = 22, kMaxComment = 0xFFFF;
constexpr std::uint64_t kMaxEntries = 10'000'000;

std::uint64_t le(const std::uint8_t* p, int bytes)
{
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}
} // namespace

bool ZipArchive::looksLikeZip(const std::uint8_t* data, std::uint64_t size)
{
    return size >= 4 && le(data, 4) == kLocalHeader;
}

ZipArchive::ZipArchive(const std::uint8_t* data, std::uint64_t size, std::string path)
    : m_data(data)
    , m_size(size)
    , m_path(std::move(path))
{
    auto fail = [&](const std::string& what, const std::string& entry = {}) {
        throw Error(ErrorCode::CorruptFile, "ZIP archive: " + what, m_path, entry);
    };
    auto need = [&](std::uint64_t offset, std::uint64_t bytes, const char* what) {
        if (offset > m_size || bytes > m_size - offset)
            fail(std::string(what) + " runs past the end of the file (truncated?)");
    };
    if (m_size < kEndRecordSize)
        fail("too short to hold an end-of-central-directory record (truncated?)");

    // The end record sits in the last 22 + up to 65535 (comment) bytes; search backwards for its signature.
    std::uint64_t end = m_size - kEndRecordSize;
    const std::uint64_t lowest = m_size - kEndRecordSize > kMaxComment ? m_size - kEndRecordSize - kMaxComment : 0;
    for (;; --end) {
        if (le(m_data + end, 4) == kEndRecord && end + kEndRecordSize + le(m_data + end + 20, 2) == m_size)
            break;
        if (end == lowest)
            fail("no end-of-central-directory record (not a ZIP archive, or truncated)");
    }
    std::uint64_t count = le(m_data + end + 10, 2);
    std::uint64_t dirSize = le(m_data + end + 12, 4);
    std::uint64_t dirOffset = le(m_data + end + 16, 4);
    if (end >= 20 && le(m_data + end - 20, 4) == kZip64Locator) {
        const std::uint64_t recordOffset = le(m_data + end - 20 + 8, 8);
        need(recordOffset, 56, "the ZIP64 end record");
        if (le(m_data + recordOffset, 4) != kZip64EndRecord)
            fail("the ZIP64 locator points at no ZIP64 end record");
        count = le(m_data + recordOffset + 32, 8);
        dirSize = le(m_data + recordOffset + 40, 8);
        dirOffset = le(m_data + recordOffset + 48, 8);
    }
    need(dirOffset, dirSize, "the central directory");
    if (count > kMaxEntries || count > dirSize / 46)
        fail(std::to_string(count) + " entries cannot fit in a central directory of " + std::to_string(dirSize) +
             " bytes");

    std::uint64_t pos = dirOffset;
    const std::uint64_t dirEnd = dirOffset + dirSize;
    m_entries.reserve(count);
    for (std::uint64_t i = 0; i < count; ++i) {
        if (pos + 46 > dirEnd || le(m_data + pos, 4) != kCentralHeader)
            fail("central directory entry " + std::to_string(i) + " is damaged");
        const std::uint8_t* h = m_data + pos;
        Entry e;
        e.method = static_cast<std::uint16_t>(le(h + 10, 2));
        std::uint64_t compressed = le(h + 20, 4), uncompressed = le(h + 24, 4), local = le(h + 42, 4);
        const std::uint64_t nameLen = le(h + 28, 2), extraLen = le(h + 30, 2), commentLen = le(h + 32, 2);
        if (pos + 46 + nameLen + extraLen + commentLen > dirEnd)
            fail("central directory entry " + std::to_string(i) + " runs past the directory");
        e.name.assign(reinterpret_cast<const char*>(h + 46), nameLen);
        // ZIP64 extended information: the 8-byte values of the fields that are 0xFFFFFFFF, in this order.
        for (std::uint64_t x = 0; x + 4 <= extraLen;) {
            const std::uint8_t* f = h + 46 + nameLen + x;
            const std::uint64_t id = le(f, 2), len = le(f + 2, 2);
            if (x + 4 + len > extraLen)
                fail("an extra field runs past its entry", e.name);
            if (id == 1) {
                std::uint64_t at = 4;
                for (std::uint64_t* field : {&uncompressed, &compressed, &local})
                    if (*field == 0xFFFFFFFFu) {
                        if (at + 8 > 4 + len)
                            fail("the ZIP64 extra field is too short", e.name);
                        *field = le(f + at, 8);
                        at += 8;
                    }
            }
            x += 4 + len;
        }
        need(local, 30, "a local file header");
        if (le(m_data + local, 4) != kLocalHeader)
            fail("the local header is missing", e.name);
        const std::uint64_t dataOffset = local + 30 + le(m_data + local + 26, 2) + le(m_data + local + 28, 2);
        e.size = e.method == 0 ? uncompressed : compressed;
        if (e.method == 0 && compressed != uncompressed)
            fail("a stored entry whose compressed and uncompressed sizes differ", e.name);
        need(dataOffset, e.size, "an entry's data");
        if (dataOffset < dirEnd && dataOffset + e.size > dirOffset && e.size > 0)
            fail("an entry's data overlaps the central directory", e.name);
        e.dataOffset = dataOffset;
        if (!m_index.emplace(e.name, m_entries.size()).second)
            fail("two entries share a name", e.name);
        m_entries.push_back(std::move(e));
        pos += 46 + nameLen + extraLen + commentLen;
    }
}

const ZipArchive::Entry* ZipArchive::find(const std::string& name) const
{
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_entries[it->second];
}

const std::uint8_t* ZipArchive::bytes(const Entry& e) const
{
    if (e.method != 0)
        throw Error(ErrorCode::CorruptFile,
                    "ZIP entry is compressed (method " + std::to_string(e.method) +
                        "); PyTorch stores every entry uncompressed, so this file was not written by torch.save. "
                        "Refused: attnscope maps entries, it never inflates them",
                    m_path, e.name);
    return m_data + e.dataOffset;
}

} // namespace attnscope::core
