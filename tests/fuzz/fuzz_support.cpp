// Scratch files for the fuzz harnesses.
#include "fuzz_support.h"

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace attnscope::fuzz {

std::string scratchFolder()
{
    static const std::string folder = [] {
        const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
        const auto dir = base / ("attnscope-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        return dir.string();
    }();
    return folder;
}

std::string writeInput(const std::uint8_t* data, std::size_t size, const std::string& suffix)
{
    const std::string path = scratchFolder() + "/" + suffix;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return path;
}

} // namespace attnscope::fuzz
