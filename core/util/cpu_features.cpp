// CPU feature check, compiled for the x86-64 baseline so it runs before anything that needs newer instructions.
#include "util/cpu_features.h"

#include <cstdio>

namespace attnscope::core {

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("arch=x86-64"))) std::string missingCpuFeatures()
{
    std::string missing;
    auto need = [&missing](bool ok, const char* name) {
        if (!ok)
            missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    __builtin_cpu_init();
#ifdef __SSE4_2__
    need(__builtin_cpu_supports("sse4.2"), "SSE4.2");
#endif
#ifdef __AVX__
    need(__builtin_cpu_supports("avx"), "AVX");
#endif
#ifdef __AVX2__
    need(__builtin_cpu_supports("avx2"), "AVX2");
#endif
#ifdef __FMA__
    need(__builtin_cpu_supports("fma"), "FMA");
#endif
#ifdef __AVX512F__
    need(__builtin_cpu_supports("avx512f"), "AVX-512F");
#endif
    return missing;
}
#else
std::string missingCpuFeatures()
{
    return {};
}
#endif

bool cpuCanRunThisBuild(const char* program)
{
    const std::string missing = missingCpuFeatures();
    if (missing.empty())
        return true;
    std::fprintf(stderr, "%s: this build needs a CPU with %s (configure with -DATTNSCOPE_X86_LEVEL=v2 for older "
                         "processors)\n", program, missing.c_str());
    return false;
}

std::string compiledCpuLevel()
{
#if defined(__AVX512F__)
    return "x86-64-v4 (AVX-512)";
#elif defined(__AVX2__) && defined(__FMA__)
    return "x86-64-v3 (AVX2, FMA)";
#elif defined(__SSE4_2__)
    return "x86-64-v2 (SSE4.2)";
#elif defined(__x86_64__)
    return "x86-64 (SSE2)";
#else
    return "generic";
#endif
}

} // namespace attnscope::core
