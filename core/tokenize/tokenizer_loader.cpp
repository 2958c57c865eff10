// loadTokenizer: picks the tokenizer from the files present in a model folder.
#include "tokenize/bpe_tokenizer.h"
#include "tokenize/word_tokenizer.h"
#include "util/error.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace attnscope::core {

std::unique_ptr<Tokenizer> loadTokenizer(const std::string& folder)
{
    const fs::path dir(folder);
    if (!fs::is_directory(dir))
        throw Error(ErrorCode::Io, "not a folder", folder);
    if (fs::exists(dir / "vocab.json") && fs::exists(dir / "merges.txt"))
        return BpeTokenizer::fromFiles((dir / "vocab.json").string(), (dir / "merges.txt").string());
    if (fs::exists(dir / "tokenizer.json"))
        return BpeTokenizer::fromTokenizerJson((dir / "tokenizer.json").string());
    if (fs::exists(dir / "vocab.txt"))
        return WordTokenizer::fromFile((dir / "vocab.txt").string());
    throw Error(ErrorCode::Io,
                "no tokenizer files in the folder (expected vocab.json + merges.txt, tokenizer.json, or vocab.txt)",
                folder);
}

} // namespace attnscope::core
