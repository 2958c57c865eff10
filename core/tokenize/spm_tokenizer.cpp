// SpmTokenizer: libsentencepiece's encoding, ids named as Hugging Face's slow T5 and Marian tokenizers name them.
#include "tokenize/spm_tokenizer.h"

#include "io/gguf.h"
#include "util/error.h"
#include "util/text_file.h"

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
    const auto status = m_spm->Load(modelFile);
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
            if (static_cast<std::size_t>(n) >= m_pieces.size())
                m_pieces.resize(static_cast<std::size_t>(n) + 1);
            m_pieces[static_cast<std::size_t>(n)] = piece;
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
    std::string model;
    for (std::size_t i = 0; i < n; ++i) {
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
    const std::string rest(text.substr(offset));
    const auto spt = m_spm->EncodeAsImmutableProto(rest);
    for (std::size_t i = 0; i < spt.pieces_size(); ++i) {
        const auto& p = spt.pieces(static_cast<int>(i));
        Token t;
        t.id = idOf(p.piece(), static_cast<int>(p.id()));
        t.text = p.piece();
        t.begin = offset + p.begin();
        t.end = offset + p.end();
        out.push_back(std::move(t));
    }
    return out;
}

std::vector<Token> SpmTokenizer::specialSuffix() const
{
    if (m_eos < 0)
        return {};
    return {Token{m_eos, "</s>", 0, 0}};
}

std::string SpmTokenizer::kind() const { return m_mapped ? "SentencePiece (Marian vocab.json)" : "SentencePiece"; }

int SpmTokenizer::vocabSize() const { return m_mapped ? static_cast<int>(m_pieces.size()) : m_spm->GetPieceSize(); }

std::string SpmTokenizer::pieceOf(std::int32_t id) const
{
    if (m_mapped)
        return id >= 0 && static_cast<std::size_t>(id) < m_pieces.size() ? m_pieces[static_cast<std::size_t>(id)]
                                                                           : "<" + std::to_string(id) + ">";
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
