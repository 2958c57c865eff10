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

// A folder of results written whole or not at all: files go into a fresh staging folder beside `path`, which
// commit() swaps into place in one rename (the earlier folder is removed after). Without commit() the staging folder
// is removed and an earlier folder stays as it was; one a killed process left is removed by the next writer.
class AtomicFolder {
public:
    // Throws Error(Io) naming `path` when it is a file, or a folder that `replaceable` does not accept (a folder of
    // the user's own is never swapped away).
    AtomicFolder(std::string path, bool (*replaceable)(const std::string& folder));
    ~AtomicFolder();
    AtomicFolder(const AtomicFolder&) = delete;
    AtomicFolder& operator=(const AtomicFolder&) = delete;

    const std::string& staging() const { return m_staging; } // where the files are written
    void commit();

private:
    std::string m_path, m_staging;
    bool m_done = false;
};

} // namespace attnscope::core
