// Files written whole or not at all: the data goes to a temporary file in the target's folder, every write is
// checked (a full disk is an error, not a short file), the file is flushed to disk and only then renamed over the
// target. A failed or interrupted write leaves the previous file as it was.
#pragma once

#include <cstddef>
#include <string>

namespace attnscope::core {

class AtomicFile {
public:
    // Creates the temporary file; throws Error(Io) naming `path` when it cannot.
    explicit AtomicFile(std::string path);
    ~AtomicFile(); // without commit(): the temporary file is removed, the target untouched
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    // Throws Error(Io) naming the target and the reason (e.g. "No space left on device").
    void write(const void* data, std::size_t bytes);
    void write(const std::string& text) { write(text.data(), text.size()); }
    // Flushes, closes and renames over the target; throws Error(Io) when any step fails.
    void commit();

private:
    std::string m_path, m_temp;
    int m_fd = -1;
};

// Writes `text` to `path` through an AtomicFile.
void writeFileAtomically(const std::string& path, const std::string& text);

} // namespace attnscope::core
