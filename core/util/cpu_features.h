// Checks that this CPU has the vector instructions the build was compiled for (x86-64-v3 by default), so an
// older machine gets a clear message instead of an illegal-instruction crash.
#pragma once

#include <string>

namespace attnscope::core {

// Empty when everything the build needs is present; else the missing features, e.g. "AVX2, FMA".
std::string missingCpuFeatures();
// For a program's main(): false (after printing why on stderr, naming `program`) when this CPU cannot run the build.
bool cpuCanRunThisBuild(const char* program);
// The instruction-set level of the core in use, e.g. "x86-64-v3 (AVX2, FMA)": with the AVX-512 build beside the
// portable one (core/CMakeLists.txt), the loader's choice for this CPU.
std::string compiledCpuLevel();

} // namespace attnscope::core
