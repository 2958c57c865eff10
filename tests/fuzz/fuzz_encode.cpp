// Fuzz harness: any text through real tokenizers (GPT-2's byte-level BPE with its regex, Llama 3's, and Llama 2's
// SentencePiece-style BPE): every token's span lies inside the text, in order.
#include "fuzz_support.h"
#include "tokenize/tokenizer.h"
#include "util/error.h"

#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    static const std::vector<std::unique_ptr<core::Tokenizer>> tokenizers = [] {
        std::vector<std::unique_ptr<core::Tokenizer>> t;
        for (const char* name : {"gpt2", "llama3", "llama2"})
            t.push_back(core::loadTokenizer(ATTNSCOPE_SOURCE_DIR "/../shared/testdata/tokenizers/" + std::string(name)));
        return t;
    }();
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    for (const auto& tok : tokenizers) {
        std::size_t last = 0;
        for (const auto& t : tok->encode(text)) {
            if (t.begin < last || t.end < t.begin || t.end > text.size())
                std::abort(); // a span outside the text or out of order
            last = t.begin;
        }
    }
    return 0;
}
