// MappedFile: POSIX mmap, and the SIGBUS handler that survives files truncated while mapped.
#include "util/mapped_file.h"

#include "util/error.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attnscope::core {

namespace {

// The handler's table: lock-free reads (a signal handler may not lock), registration under a mutex.
struct Slot {
    std::atomic<std::uintptr_t> begin{0}, end{0};
    std::atomic<bool> damaged{false};
};
constexpr int kSlots = 4096;
Slot g_slots[kSlots];
std::mutex g_register;
struct sigaction g_previous {};
bool g_installed = false;

void onBusError(int sig, siginfo_t* info, void* context)
{
    const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (auto& s : g_slots) {
        const auto b = s.begin.load(std::memory_order_acquire), e = s.end.load(std::memory_order_acquire);
        if (addr < b || addr >= e)
            continue;
        const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
        void* at = reinterpret_cast<void*>(addr & ~(page - 1));
        // A zero page in place of the lost one: the faulting read is retried and reads zeros.
        if (::mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
            s.damaged.store(true, std::memory_order_release);
            return;
        }
        break;
    }
    // Not one of ours (or no page could be put there): whatever handled SIGBUS before, else the default (a crash).
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) {
            g_previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
        return;
    }
    ::signal(SIGBUS, SIG_DFL); // the faulting instruction runs again and ends the process as it would have
}

int registerRange(const std::uint8_t* data, std::size_t size)
{
    std::lock_guard lock(g_register);
    if (!g_installed) {
        struct sigaction sa {};
        sa.sa_sigaction = onBusError;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        g_installed = ::sigaction(SIGBUS, &sa, &g_previous) == 0;
    }
    for (int i = 0; i < kSlots; ++i)
        if (g_slots[i].end.load(std::memory_order_relaxed) == 0) {
            g_slots[i].damaged.store(false, std::memory_order_relaxed);
            g_slots[i].begin.store(reinterpret_cast<std::uintptr_t>(data), std::memory_order_release);
            g_slots[i].end.store(reinterpret_cast<std::uintptr_t>(data) + size, std::memory_order_release);
            return i;
        }
    return -1; // more maps than slots: this one keeps the default SIGBUS behaviour
}

void unregisterRange(int slot)
{
    std::lock_guard lock(g_register);
    g_slots[slot].end.store(0, std::memory_order_release);
    g_slots[slot].begin.store(0, std::memory_order_release);
}

} // namespace

MappedFile::MappedFile(const std::string& path)
    : m_path(path)
{
    // stat before open: opening a FIFO for reading would block until a writer came.
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        throw Error(ErrorCode::Io, std::string("cannot open: ") + std::strerror(errno), path);
    if (!S_ISREG(st.st_mode))
        throw Error(ErrorCode::Io, "not a regular file", path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        throw Error(ErrorCode::Io, std::string("cannot open: ") + std::strerror(errno), path);
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(ErrorCode::Io, "not a regular file", path);
    }
    m_size = static_cast<std::size_t>(st.st_size);
    if (m_size > 0) {
        void* p = ::mmap(nullptr, m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw Error(ErrorCode::Io, std::string("cannot memory-map: ") + std::strerror(err), path);
        }
        m_data = static_cast<const std::uint8_t*>(p);
        m_slot = registerRange(m_data, m_size);
    }
    // Kept open to notice a write in place: the map shows the new bytes (a rename leaves this inode alone).
    m_fd = fd;
    m_modified = st.st_mtim;
    m_changed = st.st_ctim;
    m_links = static_cast<unsigned long>(st.st_nlink);
}

MappedFile::~MappedFile()
{
    if (m_fd >= 0)
        ::close(m_fd);
    if (m_slot >= 0)
        unregisterRange(m_slot);
    if (m_data)
        ::munmap(const_cast<std::uint8_t*>(m_data), m_size);
}

bool MappedFile::damaged() const noexcept
{
    if (m_slot >= 0 && g_slots[m_slot].damaged.load(std::memory_order_acquire))
        return true;
    struct stat st {};
    if (m_fd < 0 || ::fstat(m_fd, &st) != 0)
        return false;
    // The change time too: a write in place with its modification time put back (touch -d) still moves it. A rename
    // over the file (or a new hard link) moves it as well but changes the link count, and leaves the bytes alone.
    auto differs = [](const struct timespec& a, const struct timespec& b) { return a.tv_sec != b.tv_sec || a.tv_nsec != b.tv_nsec; };
    const bool relinked = static_cast<unsigned long>(st.st_nlink) != m_links;
    return static_cast<std::size_t>(st.st_size) != m_size || differs(st.st_mtim, m_modified) ||
           (!relinked && differs(st.st_ctim, m_changed));
}

} // namespace attnscope::core
