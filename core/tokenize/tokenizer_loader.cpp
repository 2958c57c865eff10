// loadTokenizer: picks the tokenizer from what a folder holds, or from the file given.
#include "io/gguf.h"
#include "tokenize/id_tokenizer.h"
#include "tokenize/spm_tokenizer.h"
#include "tokenize/tokenizer_formats.h"
#include "tokenize/word_tokenizer.h"
#include "util/error.h"
#include "util/text_file.h"

#include <filesystem>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace attnscope::core {

std::vector<Token> Tokenizer::encode(std::string_view text) const
{
    auto tokens = encodeText(text);
    checkFitsModel(tokens);
    return tokens;
}

void Tokenizer::checkFitsModel(const std::vector<Token>& tokens) const
{
    if (m_modelVocabulary <= 0)
        return;
    for (std::size_t i = 0; i < tokens.size(); ++i)
        if (tokens[i].id >= m_modelVocabulary)
            throw Error(ErrorCode::BadInput,
                        "token " + std::to_string(i + 1) + " (\"" + pieceOf(tokens[i].id) + "\") has id " +
                            std::to_string(tokens[i].id) + ", but the model has only " +
                            std::to_string(m_modelVocabulary) + " tokens: this tokenizer (" +
                            std::to_string(vocabSize()) + " tokens) belongs to another model",
                        m_source);
}

std::vector<Token> Tokenizer::encodeWithSpecial(std::string_view text) const
{
    std::vector<Token> out = specialPrefix();
    for (auto& t : encodeText(text)) // checked once below, with the special tokens
        out.push_back(std::move(t));
    for (auto t : specialSuffix()) {
        t.begin = t.end = text.size();
        out.push_back(std::move(t));
    }
    checkFitsModel(out);
    return out;
}

std::vector<TemplateItem> Tokenizer::pairTemplate() const
{
    std::vector<TemplateItem> t;
    if (auto prefix = specialPrefix(); !prefix.empty())
        t.push_back({TemplateItem::Kind::Special, std::move(prefix), 0});
    t.push_back({TemplateItem::Kind::A, {}, 0});
    t.push_back({TemplateItem::Kind::B, {}, 1});
    if (auto suffix = specialSuffix(); !suffix.empty())
        t.push_back({TemplateItem::Kind::Special, std::move(suffix), 1});
    return t;
}

PairEncoding Tokenizer::encodePairWithSpecial(std::string_view a, std::string_view b, std::size_t bOffset) const
{
    PairEncoding out;
    std::size_t at = 0; // where the text placed last ends: special tokens sit there
    for (const auto& item : pairTemplate()) {
        std::vector<Token> tokens;
        if (item.kind == TemplateItem::Kind::Special) {
            tokens = item.special;
            for (auto& t : tokens)
                t.begin = t.end = at;
        } else if (item.kind == TemplateItem::Kind::A) {
            tokens = encodeText(a);
            at = a.size();
        } else {
            out.secondText = out.tokens.size();
            tokens = encodeText(b);
            for (auto& t : tokens) {
                t.begin += bOffset;
                t.end += bOffset;
            }
            at = bOffset + b.size();
        }
        for (auto& t : tokens) {
            out.tokens.push_back(std::move(t));
            out.typeIds.push_back(item.typeId);
        }
    }
    checkFitsModel(out.tokens); // both texts and the template's special tokens, once
    return out;
}

namespace {
// A tokenizer.json whose model is Unigram (T5's): read through libsentencepiece (tokenize/spm_tokenizer.h).
bool isUnigramJson(const std::string& path)
{
    try {
        // Parsed only when the word appears at all (a big BPE tokenizer.json is not parsed twice).
        if (readTextFile(path).find("\"Unigram\"") == std::string::npos)
            return false;
        const auto j = readJsonFile(path);
        return j.is_object() && j.contains("model") && j["model"].is_object() && j["model"].value("type", "") == "Unigram";
    } catch (const Error&) {
        return false; // the usual reader names the problem
    }
}

// The tokenizer_class a folder's tokenizer_config.json names ("Fast" dropped), empty when it names none.
std::string declaredTokenizerClass(const fs::path& folder)
{
    const fs::path config = folder / "tokenizer_config.json";
    std::error_code ec;
    if (!fs::is_regular_file(config, ec))
        return {};
    const auto j = readJsonFile(config.string()); // a broken file is named, not skipped
    const auto it = j.is_object() ? j.find("tokenizer_class") : j.end();
    std::string cls = it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    if (cls.size() > 4 && cls.compare(cls.size() - 4, 4, "Fast") == 0)
        cls.resize(cls.size() - 4);
    return cls;
}

// Whether a vocab.txt reads as BERT's WordPiece vocabulary by its content: its special tokens [CLS], [SEP] and [UNK]
// as lines and continuation pieces "##..." among the first lines. A Transformer-XL word list has neither.
bool looksLikeWordPieceVocab(const std::string& path)
{
    const std::string text = readTextFile(path);
    std::set<std::string> specials;
    std::size_t continuations = 0, lines = 0;
    for (std::size_t at = 0; at < text.size() && lines < 200'000; ++lines) {
        std::size_t end = text.find('\n', at);
        if (end == std::string::npos)
            end = text.size();
        std::string_view line(text.data() + at, end - at);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (line == "[CLS]" || line == "[SEP]" || line == "[UNK]")
            specials.insert(std::string(line));
        continuations += line.size() > 2 && line.substr(0, 2) == "##";
        at = end + 1;
    }
    return specials.size() == 3 && continuations > 0;
}

// What a vocab.txt is. tokenizer_config.json's class as the Hub writes it comes first (exact names: Bertweet's
// tokenizer, say, is BPE whatever its name begins with); a class named that is neither BERT's nor Transformer-XL's
// leaves it to `fallback` (config.json's model type through the family table, or the caller's family); with no class
// named at all, the content tells BERT's vocabulary from a word list (the Hub's bert-base-uncased ships
// {"do_lower_case": true} and nothing more), then `fallback`.
VocabTxt vocabTxtKind(const std::string& path, VocabTxt fallback)
{
    static const std::set<std::string> wordPieceClasses = {
        "BertTokenizer",        "DistilBertTokenizer",  "ElectraTokenizer",   "FunnelTokenizer",
        "LayoutLMTokenizer",    "LxmertTokenizer",      "MobileBertTokenizer", "SqueezeBertTokenizer",
        "ConvBertTokenizer",    "RetriBertTokenizer",   "DPRQuestionEncoderTokenizer",
        "DPRContextEncoderTokenizer", "DPRReaderTokenizer"};
    const std::string cls = declaredTokenizerClass(fs::path(path).parent_path());
    if (wordPieceClasses.count(cls))
        return VocabTxt::WordPiece;
    if (cls == "TransfoXLTokenizer")
        return VocabTxt::WordList;
    if (cls.empty() && looksLikeWordPieceVocab(path))
        return VocabTxt::WordPiece;
    return fallback;
}

// The tokenizer of a folder or file, and in `file` the file it was read from.
std::unique_ptr<Tokenizer> openTokenizer(const std::string& folderOrFile, VocabTxt vocabTxt, std::string& file)
{
    auto fromVocabTxt = [&](const std::string& path) -> std::unique_ptr<Tokenizer> {
        const auto kind = vocabTxtKind(path, vocabTxt);
        if (kind == VocabTxt::WordPiece)
            return tokenizerFromWordPieceVocab(path);
        return WordTokenizer::fromFile(path);
    };
    const fs::path p(folderOrFile);
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
        const std::string name = p.filename().string();
        file = folderOrFile;
        if (looksLikeGguf(folderOrFile) || p.extension() == ".gguf") {
            const GgufFile g(folderOrFile);
            if (g.stringOr("tokenizer.ggml.model") == std::optional<std::string>("t5"))
                return t5TokenizerFromGguf(g); // a SentencePiece Unigram vocabulary
            return tokenizerFromGguf(g);
        }
        if (name == "tokenizer.json")
            return isUnigramJson(folderOrFile) ? unigramFromTokenizerJson(folderOrFile) : tokenizerFromJson(folderOrFile);
        if (name == "spiece.model" || p.extension() == ".spm")
            return std::make_unique<SpmTokenizer>(folderOrFile); // T5's, a Marian side's own ids
        if (p.extension() == ".model")
            return tokenizerFromSentencePiece(folderOrFile);
        if (name == "vocab.txt")
            return fromVocabTxt(folderOrFile);
        if (p.extension() == ".pkl")
            return WordTokenizer::fromVocabPkl(folderOrFile);
        throw Error(ErrorCode::Io, "not a tokenizer file (expected tokenizer.json, tokenizer.model, vocab.txt, vocab.pkl or a .gguf file)",
                    folderOrFile);
    }
    if (!fs::is_directory(p, ec))
        throw Error(ErrorCode::Io, fs::exists(p, ec) ? "not a regular file" : "no such file or folder", folderOrFile);
    if (auto marian = marianTokenizer(folderOrFile, false)) { // OPUS-MT ships no tokenizer.json
        file = (p / "source.spm").string();
        return marian;
    }
    // T5: spiece.model with the model's own ids (its tokenizer.json's Unigram is the same model).
    if (fs::exists(p / "spiece.model"))
        return std::make_unique<SpmTokenizer>(file = (p / "spiece.model").string());
    if (fs::exists(p / "tokenizer.json")) {
        file = (p / "tokenizer.json").string();
        return isUnigramJson(file) ? unigramFromTokenizerJson(file) : tokenizerFromJson(file);
    }
    if (fs::exists(p / "tokenizer.model"))
        return tokenizerFromSentencePiece(file = (p / "tokenizer.model").string());
    if (fs::exists(p / "vocab.json") && fs::exists(p / "merges.txt"))
        return tokenizerFromGpt2Files(file = (p / "vocab.json").string(), (p / "merges.txt").string());
    if (fs::exists(p / "vocab.txt"))
        return fromVocabTxt(file = (p / "vocab.txt").string());
    if (fs::exists(p / "vocab.pkl")) // Hugging Face's Transformer-XL folders
        return WordTokenizer::fromVocabPkl(file = (p / "vocab.pkl").string());
    throw Error(ErrorCode::Io,
                "no tokenizer files in the folder (expected tokenizer.json, tokenizer.model, vocab.json + merges.txt, "
                "vocab.txt or vocab.pkl)",
                folderOrFile);
}
} // namespace

std::unique_ptr<Tokenizer> loadTokenizer(const std::string& folderOrFile, VocabTxt vocabTxt)
{
    std::string file;
    auto tokenizer = openTokenizer(folderOrFile, vocabTxt, file);
    tokenizer->setSource(file);
    return tokenizer;
}

std::vector<std::int32_t> controlTokenIds(const Tokenizer& tokenizer)
{
    auto control = [](const std::string& p) {
        if (p.size() < 3 || p.size() > 32)
            return false;
        if (p.front() == '[' && p.back() == ']')
            return std::all_of(p.begin() + 1, p.end() - 1, [](char c) { return (c >= 'A' && c <= 'Z') || c == '_'; });
        if (p.front() != '<' || p.back() != '>')
            return false;
        if (p.size() == 6 && p.compare(0, 3, "<0x") == 0)
            return false; // a byte piece
        const std::string inner = p.substr(1, p.size() - 2);
        // A name: a token-id tokenizer spells plain ids "<5>", which are text.
        const bool named = std::any_of(inner.begin(), inner.end(), [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); });
        return named && std::all_of(inner.begin(), inner.end(), [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '|' || c == '_' ||
                   c == '/' || c == '-';
        });
    };
    std::vector<std::int32_t> ids;
    for (int id = 0; id < tokenizer.vocabSize(); ++id)
        if (control(tokenizer.pieceOf(id)))
            ids.push_back(id);
    return ids;
}

} // namespace attnscope::core
