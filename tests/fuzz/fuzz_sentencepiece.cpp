// Fuzz harness: SentencePiece model files through both readers: the own protobuf reader behind tokenizer.model (a
// BPE or Unigram pipeline, Llama 2's) and libsentencepiece behind spiece.model and a Marian side's .spm, each
// encoding a text.
#include "fuzz_support.h"
#include "tokenize/spm_tokenizer.h"
#include "tokenize/tokenizer_formats.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const char* text = "Hello world, 123! \xC3\xBCn\xC3\xAF" "code\n\ttabs";
    try {
        (void)core::tokenizerFromSentencePiece(fuzz::writeInput(data, size, "tokenizer.model"))->encode(text);
    } catch (const core::Error&) {
    }
    try {
        (void)core::SpmTokenizer(fuzz::writeInput(data, size, "source.spm")).encode(text);
    } catch (const core::Error&) {
    }
    return 0;
}
