// What every fuzz harness shares: the input as a file (the parsers read files, as the app does), and the one rule a
// harness checks: a bad input may only end in core::Error (a clear message); anything else is a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace attnscope::fuzz {

// Writes the input to a scratch file of this process (under /dev/shm when it exists) and returns its path; the
// same path is reused by the next input. `suffix` keeps the extension parsers look at ("config.json").
std::string writeInput(const std::uint8_t* data, std::size_t size, const std::string& suffix);
// The scratch folder of this process (for harnesses that write several files).
std::string scratchFolder();

} // namespace attnscope::fuzz

// Every harness defines this (libFuzzer's entry point).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
