// Fuzz harness: Hugging Face tokenizer.json (normalizers, pre-tokenizers with their regexes, BPE models, added and
// special tokens, post-processor templates), then encoding a text with and without special tokens.
#include "fuzz_support.h"
#include "tokenize/tokenizer_formats.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const auto path = fuzz::writeInput(data, size, "tokenizer.json");
    try {
        const auto tok = core::tokenizerFromJson(path);
        (void)tok->encode("Hello world, it's 2024!  \n\t漢字 ☃ <|endoftext|>");
        (void)tok->encodeWithSpecial("a b");
    } catch (const core::Error&) {
    }
    return 0;
}
