// Fuzz harness: SentencePiece model files through both readers: the own protobuf reader behind tokenizer.model (a
// BPE or Unigram pipeline, Llama 2's) and libsentencepiece behind spiece.model and a Marian side's .spm, each
// encoding a text; and the file's normaliser charsmap as a tokenizer.json's or a T5 GGUF's (SpmTokenizer::fromPieces),
// so byte flips inside a real charsmap (a .spm seed) reach the charsmap check and the library behind it.
#include "fuzz_support.h"
#include "tokenize/spm_checks.h"
#include "tokenize/spm_tokenizer.h"
#include "tokenize/tokenizer_formats.h"
#include "util/error.h"

using namespace attnscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const char* text = "Hello world, 123! \xC3\xBCn\xC3\xAF" "code\n\ttabs \xEF\xBC\xA1\xE2\x80\x8B\xF0\x9F\x98\x80";
    try {
        (void)core::tokenizerFromSentencePiece(fuzz::writeInput(data, size, "tokenizer.model"))->encode(text);
    } catch (const core::Error&) {
    }
    try {
        (void)core::SpmTokenizer(fuzz::writeInput(data, size, "source.spm")).encode(text);
    } catch (const core::Error&) {
    }
    try {
        core::SpmTokenizer::Pieces p;
        p.pieces = {"<unk>", "\xE2\x96\x81" "a", "b", "\xE2\x96\x81"};
        p.scores = {0, -1, -2, -3};
        p.types = {2, 1, 1, 1};
        p.charsmap = std::string(core::normalizerCharsmap(std::string_view(reinterpret_cast<const char*>(data), size), "input"));
        if (!p.charsmap.empty())
            (void)core::SpmTokenizer::fromPieces(p, "charsmap")->encode(text);
    } catch (const core::Error&) {
    }
    return 0;
}
