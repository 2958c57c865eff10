// Helpers shared by the tests: reference data location, temp folders, tolerance comparisons.
#pragma once

#include "io/safetensors.h"
#include "util/error.h"

#include <filesystem>
#include <string>
#include <vector>

namespace attnscope::test {

// ../shared/testdata relative to the source tree (or $ATTNSCOPE_TESTDATA).
std::filesystem::path testdataDir();
// tests/data in the source tree: data the project's own tests ship (made by reference implementations, see its READMEs).
std::filesystem::path projectDataDir();
// Case folders (those with input.json and expected.safetensors) whose name starts with `prefix` and whose model
// family the core supports, from ../shared/testdata and tests/data/reference (the project's own: families the shared
// data lacks), sorted by name. Cases of other families are left out and named on stderr, once per run.
std::vector<std::filesystem::path> referenceCases(const std::string& prefix = "");
// The vision cases (their inputs are pixel values; tests/core/test_vision.cpp runs them).
std::vector<std::filesystem::path> imageReferenceCases(const std::string& prefix = "");
// The vision-language cases (a picture and a prompt; tests/core/test_vision_language.cpp runs them).
std::vector<std::filesystem::path> pictureReferenceCases(const std::string& prefix = "");
// The encoder-decoder reference cases (T5, BART, Marian), likewise.
std::vector<std::filesystem::path> seq2seqReferenceCases(const std::string& prefix = "");
// The speech cases (Whisper: a recording and a transcript; tests/core/test_whisper.cpp runs them).
std::vector<std::filesystem::path> speechReferenceCases(const std::string& prefix = "");

// A fresh empty folder under the system temp dir, removed on destruction.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return m_path; }
    std::filesystem::path operator/(const std::string& name) const { return m_path / name; }

private:
    std::filesystem::path m_path;
};

// Loads every tensor of a safetensors file as float32.
std::vector<core::OutputTensor> loadAll(const std::string& path);

// Result of comparing `actual` to `expected` under |a - e| <= abs + rel * |e| over entries where
// `visible` is null or visible[i] != 0.
struct Comparison {
    bool shapeOk = true;
    bool ok = true;
    double maxAbsDiff = 0;
    std::size_t worstIndex = 0;
    std::string describe(const std::string& name) const;
};
Comparison compare(const core::OutputTensor& expected, const core::OutputTensor& actual, double absTol, double relTol,
                   const std::vector<float>* visibleMask = nullptr);

// Tolerances from the test data README for a reference tensor name (by its last component).
struct Tolerance {
    double abs, rel;
};
Tolerance toleranceFor(const std::string& name);

// A file size limit for this process while it lives, standing in for a full disk: writes past `bytes` fail with EFBIG
// (SIGXFSZ ignored) instead of being written.
class FileSizeLimit {
public:
    explicit FileSizeLimit(unsigned long long bytes);
    ~FileSizeLimit();
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
    unsigned long long m_cur = 0, m_max = 0;
};

// The message of the core::Error `fn` throws, or "(no error)": for checks on what a refusal says.
template <typename Fn>
std::string errorOf(Fn&& fn)
{
    try {
        fn();
    } catch (const core::Error& e) {
        return e.what();
    }
    return "(no error)";
}

// Writes a file from raw bytes (for corrupt-file tests).
void writeBytes(const std::filesystem::path& p, const std::string& bytes);
std::string readBytes(const std::filesystem::path& p);

} // namespace attnscope::test

namespace attnscope::test {
// Compares `actual` with every tensor of the reference file under the README's tolerances (terms only where
// the segment's mask is 0). Returns one line per problem (missing tensor, wrong shape, out of tolerance);
// `report` receives one line per tensor with its max difference.
std::vector<std::string> referenceMismatches(const std::string& expectedPath,
                                             const std::vector<core::OutputTensor>& actual,
                                             std::vector<std::string>* report = nullptr);
} // namespace attnscope::test
