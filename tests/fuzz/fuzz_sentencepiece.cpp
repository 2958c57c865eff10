// Fuzz harness: SentencePiece model files through both readers: the own protobuf reader behind tokenizer.model (a
// BPE or Unigram pipeline, Llama 2's) and libsentencepiece behind spiece.model and a Marian side's .spm, each
// encoding a text; and the file's normaliser charsmap as a tokenizer.json's or a T5 GGUF's (SpmTokenizer::fromPieces),
// so byte flips inside a real charsmap (a .spm seed) reach the charsmap check and the library behind it.
#include "fuzz_support.h"
#include "tokenize/proto_reader.h"
#include "tokenize/spm_tokenizer.h"
#include "tokenize/tokenizer_formats.h"
#include "util/error.h"

using namespace attnscope;

namespace {
// normalizer_spec.precompiled_charsmap of a ModelProto, or empty.
std::string charsmapOf(std::string_view model)
{
    core::ProtoReader top(model, "input", "ModelProto");
    while (top.more()) {
        const auto key = top.varint();
        if ((key >> 3) != 3 || (key & 7) != 2) {
            top.skip(static_cast<int>(key & 7));
            continue;
        }
        core::ProtoReader n(top.bytes(), "input", "normalizer_spec");
        while (n.more()) {
            const auto k = n.varint();
            if ((k >> 3) == 2 && (k & 7) == 2)
                return std::string(n.bytes());
            n.skip(static_cast<int>(k & 7));
        }
    }
    return {};
}
} // namespace

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
        p.charsmap = charsmapOf(std::string_view(reinterpret_cast<const char*>(data), size));
        if (!p.charsmap.empty())
            (void)core::SpmTokenizer::fromPieces(p, "charsmap")->encode(text);
    } catch (const core::Error&) {
    }
    return 0;
}
