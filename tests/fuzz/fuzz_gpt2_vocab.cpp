// Fuzz harness: a GPT-2 vocabulary given as vocab.json and merges.txt (the input holds both, split at the first
// NUL byte), then encoding a text with it.
#include "fuzz_support.h"
#include "tokenize/tokenizer_formats.h"
#include "util/error.h"

#include <algorithm>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto* cut = std::find(data, data + size, std::uint8_t{0});
    const auto vocab = fuzz::writeInput(data, static_cast<std::size_t>(cut - data), "vocab.json");
    const std::uint8_t* rest = cut == data + size ? cut : cut + 1;
    const auto merges = fuzz::writeInput(rest, static_cast<std::size_t>(data + size - rest), "merges.txt");
    try {
        (void)core::tokenizerFromGpt2Files(vocab, merges)->encode("Hello world, it's 2024! 漢字 ☃");
    } catch (const core::Error&) {
    }
    return 0;
}
