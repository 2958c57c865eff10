// Fuzz harness: the restricted unpickler on raw bytes (plain pickles such as vocab.pkl), then the vocabulary reader.
#include "fuzz_support.h"
#include "io/pickle.h"
#include "tokenize/word_tokenizer.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    try {
        core::PickleDocument doc;
        core::unpickle(doc, data, size, "fuzz.pkl");
    } catch (const core::Error&) {
    }
    const auto path = fuzz::writeInput(data, size, "vocab.pkl");
    try {
        const auto tok = core::WordTokenizer::fromVocabPkl(path);
        (void)tok->encode("state-of-the-art, 1,000 km. U.S. don't <unk>\nnext");
    } catch (const core::Error&) {
    }
    return 0;
}
