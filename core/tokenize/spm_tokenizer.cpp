// SpmTokenizer: libsentencepiece's encoding, ids named as Hugging Face's slow T5 and Marian tokenizers name them.
#include "tokenize/spm_tokenizer.h"

#include "tokenize/spm_checks.h"

#include "io/gguf.h"
#include "util/error.h"
#include "util/text_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sentencepiece_processor.h>

namespace attnscope::core {

namespace {
const std::string kSpace = "\xE2\x96\x81"; // ▁, SentencePiece's word boundary

std::string spaced(std::string piece)
{
    for (std::size_t at = piece.find(kSpace); at != std::string::npos; at = piece.find(kSpace, at + 1))
        piece.replace(at, kSpace.size(), " ");
    return piece;
}
} // namespace

SpmTokenizer::SpmTokenizer(const std::string& modelFile, const std::string& vocabJson)
    : m_spm(std::make_unique<sentencepiece::SentencePieceProcessor>())
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(modelFile, ec))
        throw Error(ErrorCode::Io, "no such SentencePiece model file", modelFile);
    // Read and checked here, then handed over as bytes: the library trusts the file's charsmap and piece lengths.
    const std::string bytes = readTextFile(modelFile);
    checkSentencePieceModel(bytes, modelFile);
    const auto status = m_spm->LoadFromSerializedProto(bytes);
    if (!status.ok())
        throw Error(ErrorCode::CorruptFile, "not a SentencePiece model: " + status.ToString(), modelFile);
    if (!vocabJson.empty()) {
        const auto j = readJsonFile(vocabJson);
        if (!j.is_object() || j.empty())
            throw Error(ErrorCode::CorruptFile, "must be an object of pieces and their ids", vocabJson);
        for (const auto& [piece, id] : j.items()) {
            if (!id.is_number_integer() || id.get<std::int64_t>() < 0 || id.get<std::int64_t>() >= 10'000'000)
                throw Error(ErrorCode::CorruptFile, "the id of \"" + piece + "\" is not a whole number below 10,000,000",
                            vocabJson, piece);
            const auto n = static_cast<std::int32_t>(id.get<std::int64_t>());
            m_vocab[piece] = n;
            m_pieces[n] = piece; // by id, never a table sized by the largest id a file names
            m_idCount = std::max(m_idCount, n + 1);
        }
        const auto unk = m_vocab.find("<unk>");
        if (unk == m_vocab.end())
            throw Error(ErrorCode::CorruptFile, "has no \"<unk>\" entry", vocabJson, "<unk>");
        m_unk = unk->second;
        const auto eos = m_vocab.find("</s>");
        m_eos = eos == m_vocab.end() ? -1 : eos->second;
        m_mapped = true;
    } else {
        m_unk = m_spm->unk_id();
        m_eos = m_spm->eos_id();
    }
    setSource(modelFile);
}

SpmTokenizer::~SpmTokenizer() = default;

namespace {
// SentencePiece's model file is a protocol buffer (sentencepiece_model.proto, public): the few fields a Unigram model
// needs are written here by hand, in the wire format, rather than depending on protobuf's headers.
void varint(std::string& out, std::uint64_t v)
{
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
void key(std::string& out, int field, int wire) { varint(out, static_cast<std::uint64_t>(field) << 3 | static_cast<unsigned>(wire)); }
void bytesField(std::string& out, int field, const std::string& bytes)
{
    key(out, field, 2);
    varint(out, bytes.size());
    out += bytes;
}
void intField(std::string& out, int field, std::int64_t v)
{
    key(out, field, 0);
    varint(out, static_cast<std::uint64_t>(v));
}
void floatField(std::string& out, int field, float v)
{
    key(out, field, 5);
    char b[4];
    std::memcpy(b, &v, 4);
    out.append(b, 4);
}
} // namespace

std::unique_ptr<SpmTokenizer> SpmTokenizer::fromPieces(const Pieces& p, const std::string& source)
{
    const std::size_t n = p.pieces.size();
    if (n == 0 || p.scores.size() != n || p.types.size() != n)
        throw Error(ErrorCode::CorruptFile, "a Unigram vocabulary needs one score and one type per piece", source);
    if (!p.charsmap.empty())
        checkPrecompiledCharsmap(p.charsmap, source, p.charsmapField);
    std::string model;
    for (std::size_t i = 0; i < n; ++i) {
        checkPieceLength(p.pieces[i], i, source);
        if (p.types[i] < 1 || p.types[i] > 6)
            throw Error(ErrorCode::CorruptFile, "piece " + std::to_string(i) + " has type " + std::to_string(p.types[i]) +
                                                    " (SentencePiece's are 1 to 6)", source);
        std::string piece;
        bytesField(piece, 1, p.pieces[i]);
        floatField(piece, 2, p.scores[i]);
        intField(piece, 3, p.types[i]);
        bytesField(model, 1, piece); // ModelProto.pieces
    }
    std::string trainer;
    intField(trainer, 3, 1); // model_type UNIGRAM
    intField(trainer, 4, static_cast<std::int64_t>(n)); // vocab_size
    bytesField(model, 2, trainer);
    std::string normalizer;
    bytesField(normalizer, 1, p.charsmap.empty() ? "identity" : "nmt_nfkc");
    if (!p.charsmap.empty())
        bytesField(normalizer, 2, p.charsmap);
    intField(normalizer, 3, p.addDummyPrefix);
    intField(normalizer, 4, p.removeExtraWhitespaces);
    intField(normalizer, 5, 1); // escape_whitespaces
    bytesField(model, 3, normalizer);

    std::unique_ptr<SpmTokenizer> t(new SpmTokenizer());
    t->m_spm = std::make_unique<sentencepiece::SentencePieceProcessor>();
    const auto status = t->m_spm->LoadFromSerializedProto(model);
    if (!status.ok())
        throw Error(ErrorCode::CorruptFile, "not a usable Unigram vocabulary: " + status.ToString(), source);
    t->m_unk = t->m_spm->unk_id();
    t->m_eos = t->m_spm->eos_id();
    t->setSource(source);
    return t;
}

namespace {
std::string base64Decode(const std::string& in, const std::string& file)
{
    auto value = [&](char c) -> int {
        if (c >= 'A' && c <= 'Z')
            return c - 'A';
        if (c >= 'a' && c <= 'z')
            return c - 'a' + 26;
        if (c >= '0' && c <= '9')
            return c - '0' + 52;
        if (c == '+')
            return 62;
        if (c == '/')
            return 63;
        throw Error(ErrorCode::CorruptFile, "precompiled_charsmap is not base64", file, "precompiled_charsmap");
    };
    std::string out;
    int bits = 0, acc = 0;
    for (char c : in) {
        if (c == '=' || c == '\n' || c == '\r')
            continue;
        acc = (acc << 6) | value(c);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    return out;
}

// Walks a normaliser / pre-tokeniser (or a Sequence of them) for the settings a SentencePiece model carries.
void readSpmSettings(const nlohmann::json& j, SpmTokenizer::Pieces& p, const std::string& file)
{
    if (!j.is_object())
        return;
    const std::string type = j.value("type", "");
    for (const char* list : {"normalizers", "pretokenizers"})
        if (j.contains(list) && j[list].is_array())
            for (const auto& item : j[list])
                readSpmSettings(item, p, file);
    if (type == "Precompiled" && j.contains("precompiled_charsmap") && j["precompiled_charsmap"].is_string()) {
        p.charsmap = base64Decode(j["precompiled_charsmap"].get<std::string>(), file);
        p.charsmapField = "normalizer.precompiled_charsmap";
    }
    if (type == "Metaspace") {
        if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string())
            p.addDummyPrefix = j["prepend_scheme"].get<std::string>() != "never";
        else if (j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean())
            p.addDummyPrefix = j["add_prefix_space"].get<bool>();
    }
}
} // namespace

std::unique_ptr<Tokenizer> unigramFromTokenizerJson(const std::string& path)
{
    const auto j = readJsonFile(path);
    const auto& model = j.at("model");
    if (!model.contains("vocab") || !model["vocab"].is_array() || model["vocab"].empty())
        throw Error(ErrorCode::CorruptFile, "a Unigram model needs its vocab: a list of [piece, score]", path, "model.vocab");
    SpmTokenizer::Pieces p;
    for (const auto& entry : model["vocab"]) {
        if (!entry.is_array() || entry.size() != 2 || !entry[0].is_string() || !entry[1].is_number())
            throw Error(ErrorCode::CorruptFile, "a Unigram vocab entry must be [piece, score]", path, "model.vocab");
        p.pieces.push_back(entry[0].get<std::string>());
        p.scores.push_back(entry[1].get<float>());
        p.types.push_back(1);
    }
    const auto n = static_cast<std::int64_t>(p.pieces.size());
    if (model.contains("unk_id") && model["unk_id"].is_number_integer()) {
        const auto unk = model["unk_id"].get<std::int64_t>();
        if (unk < 0 || unk >= n)
            throw Error(ErrorCode::CorruptFile, "unk_id is outside the vocabulary", path, "model.unk_id");
        p.types[static_cast<std::size_t>(unk)] = 2;
    }
    if (j.contains("added_tokens") && j["added_tokens"].is_array())
        for (const auto& a : j["added_tokens"])
            if (a.is_object() && a.value("special", false) && a.contains("id") && a["id"].is_number_integer()) {
                const auto id = a["id"].get<std::int64_t>();
                if (id >= 0 && id < n && p.types[static_cast<std::size_t>(id)] != 2)
                    p.types[static_cast<std::size_t>(id)] = 3; // control: never produced from text
            }
    p.addDummyPrefix = true;
    p.removeExtraWhitespaces = true; // WhitespaceSplit / Replace(" {2,}") in T5's files: runs of spaces are one
    if (j.contains("normalizer"))
        readSpmSettings(j["normalizer"], p, path);
    if (j.contains("pre_tokenizer"))
        readSpmSettings(j["pre_tokenizer"], p, path);
    auto t = SpmTokenizer::fromPieces(p, path);
    // The post-processor's special tokens around a single text.
    std::vector<std::int32_t> prefix, suffix;
    if (j.contains("post_processor") && j["post_processor"].is_object() &&
        j["post_processor"].value("type", "") == "TemplateProcessing" && j["post_processor"].contains("single")) {
        const auto& pp = j["post_processor"];
        bool after = false;
        for (const auto& item : pp["single"]) {
            if (item.contains("Sequence")) {
                after = true;
                continue;
            }
            if (!item.contains("SpecialToken"))
                continue;
            const std::string name = item["SpecialToken"].value("id", "");
            if (pp.contains("special_tokens") && pp["special_tokens"].contains(name))
                for (const auto& id : pp["special_tokens"][name].value("ids", nlohmann::json::array()))
                    (after ? suffix : prefix).push_back(id.get<std::int32_t>());
        }
    }
    t->setSpecialIds(prefix, suffix);
    std::vector<std::pair<std::string, std::int32_t>> added;
    if (j.contains("added_tokens") && j["added_tokens"].is_array())
        for (const auto& a : j["added_tokens"])
            if (a.is_object() && a.contains("content") && a["content"].is_string() && a.contains("id") &&
                a["id"].is_number_integer() && a["id"].get<std::int64_t>() >= 0 && a["id"].get<std::int64_t>() < n)
                added.emplace_back(a["content"].get<std::string>(), a["id"].get<std::int32_t>());
    t->setAddedTokens(std::move(added));
    return t;
}

std::unique_ptr<Tokenizer> t5TokenizerFromGguf(const GgufFile& g)
{
    const auto* tokens = g.value("tokenizer.ggml.tokens");
    if (!tokens || tokens->kind != GgufValue::Kind::Array || tokens->elementKind != GgufValue::Kind::String)
        throw Error(ErrorCode::BadConfig, "must be a list of strings", g.path(), "tokenizer.ggml.tokens");
    SpmTokenizer::Pieces p;
    p.pieces = tokens->strings;
    const std::size_t n = p.pieces.size();
    auto numbers = [&](const char* key) {
        const auto* a = g.value(key);
        if (!a || a->kind != GgufValue::Kind::Array || a->numbers.size() != n)
            throw Error(ErrorCode::BadConfig, "must be a list of " + std::to_string(n) + " numbers (one per token)",
                        g.path(), key);
        return a->numbers;
    };
    for (double v : numbers("tokenizer.ggml.scores"))
        p.scores.push_back(static_cast<float>(v));
    for (double v : numbers("tokenizer.ggml.token_type"))
        p.types.push_back(static_cast<int>(v));
    if (const auto* cm = g.value("tokenizer.ggml.precompiled_charsmap")) {
        if (cm->kind != GgufValue::Kind::Array)
            throw Error(ErrorCode::BadConfig, "must be a list of bytes", g.path(), "tokenizer.ggml.precompiled_charsmap");
        for (const auto v : cm->ints)
            p.charsmap.push_back(static_cast<char>(v & 0xff));
        p.charsmapField = "tokenizer.ggml.precompiled_charsmap";
    }
    p.addDummyPrefix = g.boolOr("tokenizer.ggml.add_space_prefix").value_or(true);
    p.removeExtraWhitespaces = g.boolOr("tokenizer.ggml.remove_extra_whitespaces").value_or(true);
    return SpmTokenizer::fromPieces(p, g.path());
}

std::int32_t SpmTokenizer::idOf(const std::string& piece, int spmId) const
{
    if (!m_mapped)
        return spmId;
    const auto it = m_vocab.find(piece);
    return it == m_vocab.end() ? m_unk : it->second;
}

std::optional<std::int32_t> SpmTokenizer::idOfPiece(const std::string& piece) const
{
    if (m_mapped) {
        const auto it = m_vocab.find(piece);
        return it == m_vocab.end() ? std::nullopt : std::optional<std::int32_t>(it->second);
    }
    const int id = m_spm->PieceToId(piece);
    return id == m_spm->unk_id() && piece != m_spm->IdToPiece(id) ? std::nullopt : std::optional<std::int32_t>(id);
}

std::vector<Token> SpmTokenizer::encodeText(std::string_view text) const
{
    std::vector<Token> out;
    std::size_t offset = 0;
    // Marian: a leading language code (">>fra<<") is a token of its own, and every code is removed from the text.
    if (m_mapped && text.rfind(">>", 0) == 0) {
        const auto close = text.find("<<", 2);
        if (close != std::string_view::npos) {
            const std::string code(text.substr(0, close + 2));
            out.push_back(Token{idOf(code, 0), code, 0, code.size()});
            offset = close + 2;
        }
    }
    // Added tokens first (longest match at each place), SentencePiece on the text between them.
    std::size_t from = offset;
    std::vector<std::size_t> matches;
    for (std::size_t at = offset; at < text.size() && !m_addedTrie.empty();) {
        m_addedTrie.matchesAt(text, at, matches);
        if (matches.empty()) {
            ++at;
            continue;
        }
        const auto& [content, id] = m_added[matches.front()]; // the longest
        encodePiece(text.substr(from, at - from), from, out);
        out.push_back(Token{id, content, at, at + content.size()});
        at += content.size();
        from = at;
    }
    encodePiece(text.substr(from), from, out);
    return out;
}

void SpmTokenizer::encodePiece(std::string_view text, std::size_t offset, std::vector<Token>& out) const
{
    if (text.empty())
        return;
    const auto spt = m_spm->EncodeAsImmutableProto(std::string(text));
    for (std::size_t i = 0; i < spt.pieces_size(); ++i) {
        const auto& p = spt.pieces(static_cast<int>(i));
        Token t;
        t.id = idOf(p.piece(), static_cast<int>(p.id()));
        t.text = p.piece();
        t.begin = offset + p.begin();
        t.end = offset + p.end();
        out.push_back(std::move(t));
    }
}

void SpmTokenizer::setAddedTokens(std::vector<std::pair<std::string, std::int32_t>> tokens)
{
    m_added = std::move(tokens);
    m_addedTrie = AddedTokenTrie();
    for (std::size_t i = 0; i < m_added.size(); ++i)
        m_addedTrie.add(m_added[i].first, i);
}

void SpmTokenizer::setSpecialIds(std::vector<std::int32_t> prefix, std::vector<std::int32_t> suffix)
{
    m_prefix = std::move(prefix);
    m_suffix = std::move(suffix);
}

std::vector<Token> SpmTokenizer::specialPrefix() const
{
    std::vector<Token> out;
    if (m_prefix)
        for (const auto id : *m_prefix)
            out.push_back(Token{id, pieceOf(id), 0, 0});
    return out;
}

std::vector<Token> SpmTokenizer::specialSuffix() const
{
    if (m_suffix) {
        std::vector<Token> out;
        for (const auto id : *m_suffix)
            out.push_back(Token{id, pieceOf(id), 0, 0});
        return out;
    }
    if (m_eos < 0)
        return {};
    return {Token{m_eos, "</s>", 0, 0}};
}

std::string SpmTokenizer::kind() const { return m_mapped ? "SentencePiece (Marian vocab.json)" : "SentencePiece"; }

int SpmTokenizer::vocabSize() const { return m_mapped ? m_idCount : m_spm->GetPieceSize(); }

std::string SpmTokenizer::pieceOf(std::int32_t id) const
{
    if (m_mapped)
        return m_pieces.count(id) ? m_pieces.at(id) : "<" + std::to_string(id) + ">";
    return id >= 0 && id < m_spm->GetPieceSize() ? m_spm->IdToPiece(id) : "<" + std::to_string(id) + ">";
}

std::string SpmTokenizer::textOf(std::int32_t id) const { return spaced(pieceOf(id)); }

std::unique_ptr<Tokenizer> marianTokenizer(const std::string& folder, bool target)
{
    namespace fs = std::filesystem;
    const fs::path d(folder);
    std::error_code ec;
    if (!fs::is_regular_file(d / "source.spm", ec) || !fs::is_regular_file(d / "vocab.json", ec))
        return nullptr;
    const fs::path spm = target && fs::is_regular_file(d / "target.spm", ec) ? d / "target.spm" : d / "source.spm";
    return std::make_unique<SpmTokenizer>(spm.string(), (d / "vocab.json").string());
}

} // namespace attnscope::core
