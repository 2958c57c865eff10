// PNG pictures read without a library (the command line has no Qt): zlib's deflate stream (RFC 1950/1951) inflated
// here, the scanline filters undone, any colour type made 8-bit RGB as Pillow's convert("RGB") does (alpha dropped,
// palettes expanded, 16-bit samples to their high byte). Interlaced (Adam7) files are refused by name.
#pragma once

#include "image/preprocess.h"

#include <cstdint>
#include <span>
#include <string>

namespace attnscope::core {

// Throws Error(Io) when the file cannot be read, Error(CorruptFile) naming it and the problem for a damaged or
// unsupported PNG.
Image8 readPng(const std::string& path);
Image8 decodePng(std::span<const std::uint8_t> bytes, const std::string& name);
// Inflates a zlib stream into at most `limit` bytes (CorruptFile beyond it, or for a broken stream).
std::vector<std::uint8_t> inflateZlib(std::span<const std::uint8_t> data, std::size_t limit, const std::string& name);

} // namespace attnscope::core
