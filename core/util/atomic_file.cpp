// AtomicFile: POSIX open / write / fsync / rename, every result checked.
#include "util/atomic_file.h"

#include "util/error.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace attnscope::core {

namespace {
std::string reason()
{
    return std::strerror(errno);
}

// Removes temporary files an earlier process left beside `target` when it was killed mid-write: names
// "<target>.tmp-<pid>-<n>" whose process no longer exists.
void removeStaleTemporaries(const std::string& target)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path t(target);
    const fs::path dir = t.parent_path().empty() ? fs::path(".") : t.parent_path();
    const std::string prefix = t.filename().string() + ".tmp-";
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) != 0)
            continue;
        const std::string rest = name.substr(prefix.size());
        const auto dash = rest.find('-');
        if (dash == std::string::npos || dash == 0 || rest.find_first_not_of("0123456789-") != std::string::npos)
            continue;
        const long pid = std::strtol(rest.substr(0, dash).c_str(), nullptr, 10);
        if (pid > 0 && pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
            fs::remove_all(e.path(), ec); // a file, or an AtomicFolder's staging folder
    }
}

std::string temporaryName(const std::string& target)
{
    static std::atomic<unsigned> counter{0};
    return target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}
} // namespace

AtomicFile::AtomicFile(std::string path)
    : m_path(std::move(path))
{
    // A symbolic link is followed: the file it names is replaced and the link stays a link.
    if (char* resolved = ::realpath(m_path.c_str(), nullptr)) {
        struct stat st {};
        if (::lstat(m_path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
            m_path = resolved;
        std::free(resolved);
    }
    // Only a regular file is replaced: a rename over a device node or a FIFO (--out /dev/null as root) would put a
    // regular file in its place and report success.
    if (struct stat st {}; ::stat(m_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        throw Error(ErrorCode::Io,
                    S_ISDIR(st.st_mode) ? "is a folder: give a file name to write"
                                        : "is not a regular file (a device, a FIFO or a socket): results are written to "
                                          "regular files only",
                    m_path);
    // The replacement keeps the permissions of the file it replaces (a private 0600 result stays private).
    mode_t mode = 0644;
    if (struct stat st {}; ::stat(m_path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
        mode = st.st_mode & 07777;
    removeStaleTemporaries(m_path);
    m_temp = temporaryName(m_path);
    m_fd = ::open(m_temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (m_fd < 0)
        throw Error(ErrorCode::Io, "cannot create the file (" + reason() + ")", m_path);
    ::fchmod(m_fd, mode); // exactly the old mode, whatever the umask
}

AtomicFile::~AtomicFile()
{
    if (m_fd >= 0) {
        ::close(m_fd);
        ::unlink(m_temp.c_str());
    }
}

void AtomicFile::write(const void* data, std::size_t bytes)
{
    const auto* p = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t n = ::write(m_fd, p, bytes);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            throw Error(ErrorCode::Io, "could not write (" + reason() + "); the previous file is unchanged", m_path);
        }
        p += n;
        bytes -= static_cast<std::size_t>(n);
    }
}

void AtomicFile::commit()
{
    if (::fsync(m_fd) != 0)
        throw Error(ErrorCode::Io, "could not write (" + reason() + "); the previous file is unchanged", m_path);
    const int fd = m_fd;
    m_fd = -1;
    if (::close(fd) != 0) {
        ::unlink(m_temp.c_str());
        throw Error(ErrorCode::Io, "could not write (" + reason() + "); the previous file is unchanged", m_path);
    }
    if (std::rename(m_temp.c_str(), m_path.c_str()) != 0) {
        const std::string why = reason();
        ::unlink(m_temp.c_str());
        throw Error(ErrorCode::Io, "could not replace the file (" + why + ")", m_path);
    }
}

void writeFileAtomically(const std::string& path, const std::string& text)
{
    AtomicFile f(path);
    f.write(text);
    f.commit();
}

AtomicFolder::AtomicFolder(std::string path, bool (*replaceable)(const std::string& folder))
    : m_path(std::move(path))
{
    namespace fs = std::filesystem;
    while (m_path.size() > 1 && m_path.back() == '/')
        m_path.pop_back(); // "out/" names the folder "out", and its staging folder "out.tmp-..." beside it
    std::error_code ec;
    if (fs::is_symlink(fs::symlink_status(m_path, ec)))
        m_path = fs::canonical(m_path, ec).string(); // the folder a link names is replaced, the link stays
    const auto st = fs::status(m_path, ec);
    if (fs::exists(st) && !fs::is_directory(st))
        throw Error(ErrorCode::Io, "is not a folder: give a folder to write the results into", m_path);
    if (fs::is_directory(st) && !fs::is_empty(m_path, ec) && !replaceable(m_path))
        throw Error(ErrorCode::Io, "is a folder of other files: give a new folder, or one an earlier run wrote", m_path);
    removeStaleTemporaries(m_path);
    m_staging = temporaryName(m_path);
    if (!fs::create_directories(m_staging, ec) || ec)
        throw Error(ErrorCode::Io, "cannot create the folder (" + ec.message() + ")", m_staging);
}

AtomicFolder::~AtomicFolder()
{
    if (!m_done) {
        std::error_code ec;
        std::filesystem::remove_all(m_staging, ec);
    }
}

void AtomicFolder::commit()
{
    namespace fs = std::filesystem;
    std::error_code ec;
    // The new folder takes the old one's name in one step where the system can swap two names (Linux's
    // RENAME_EXCHANGE); elsewhere the old one is moved aside first, so a reader sees the old folder, none, or the new.
    if (fs::is_directory(m_path, ec)) {
        if (::renameat2(AT_FDCWD, m_staging.c_str(), AT_FDCWD, m_path.c_str(), RENAME_EXCHANGE) == 0) {
            m_done = true;
            fs::remove_all(m_staging, ec); // the staging name now holds the earlier folder
            return;
        }
        const std::string old = temporaryName(m_path);
        if (std::rename(m_path.c_str(), old.c_str()) != 0 || std::rename(m_staging.c_str(), m_path.c_str()) != 0) {
            const std::string why = reason();
            std::rename(old.c_str(), m_path.c_str()); // back, if it had been moved
            throw Error(ErrorCode::Io, "could not replace the folder (" + why + "); the previous folder is unchanged", m_path);
        }
        m_done = true;
        fs::remove_all(old, ec);
        return;
    }
    if (std::rename(m_staging.c_str(), m_path.c_str()) != 0)
        throw Error(ErrorCode::Io, "could not create the folder (" + reason() + ")", m_path);
    m_done = true;
}

} // namespace attnscope::core
