// Fuzz harness: a pre-tokenizer pattern and a text together (the first line is the pattern, the rest the text), so
// the fuzzer can grow nesting, repeats and metacharacters on both sides. Only core::Error may come out.
#include "fuzz_support.h"
#include "tokenize/unicode_class.h"
#include "tokenize/unicode_regex.h"
#include "util/error.h"

#include <string>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string input(reinterpret_cast<const char*>(data), size);
    const auto nl = input.find('\n');
    const std::string pattern = input.substr(0, nl), rest = nl == std::string::npos ? std::string() : input.substr(nl + 1);
    std::u32string text;
    for (std::size_t at = 0; at < rest.size();) {
        std::size_t len = 1;
        text.push_back(core::decodeUtf8(rest, at, len));
        at += len;
    }
    try {
        const core::UnicodeRegex regex(pattern);
        (void)regex.findAll(text);
        if (!text.empty())
            (void)regex.matchAt(text, static_cast<int>(text.size() / 2));
    } catch (const core::Error&) {
    }
    return 0;
}
