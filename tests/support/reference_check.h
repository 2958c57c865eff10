// Catch's side of test_support.h's referenceMismatches: every tensor's difference as a message, every problem a
// failed check.
#pragma once

#include "test_support.h"

#include <catch2/catch.hpp>

namespace attnscope::test {

inline void checkAgainstReference(const std::filesystem::path& expected, const std::vector<core::OutputTensor>& out)
{
    std::vector<std::string> report;
    const auto problems = referenceMismatches(expected.string(), out, &report);
    for (const auto& line : report)
        UNSCOPED_INFO(line);
    for (const auto& p : problems)
        FAIL_CHECK(p);
}

} // namespace attnscope::test
