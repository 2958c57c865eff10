// Fuzz harness: a word-level vocab.txt (the built-in models' tokenizer), then encoding a text with it.
#include "fuzz_support.h"
#include "tokenize/tokenizer.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "vocab.txt");
    try {
        (void)core::loadTokenizer(path)->encode("the lobster is blue\\n , only becoming red on cooking .");
    } catch (const core::Error&) {
    }
    return 0;
}
