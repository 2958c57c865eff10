// Tokenizer formats -> TokenizerPipeline. Each reader checks every value it uses and names the file and the key.
#include "tokenize/tokenizer_formats.h"

#include "tokenize/bpe_model.h"
#include "tokenize/proto_reader.h"
#include "tokenize/wordpiece_model.h"

#include "io/gguf.h"
#include "util/error.h"
#include "util/text_file.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

namespace fs = std::filesystem;

namespace attnscope::core {

namespace {

constexpr int kMaxVocab = 16'000'000;
const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::u32string toU32(const std::string& s)
{
    std::u32string out;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t len;
        out.push_back(decodeUtf8(s, i, len));
        i += len;
    }
    return out;
}

// JSON access with messages that name the file and the key path.
class JsonAt {
public:
    JsonAt(const nlohmann::json& j, std::string file, std::string path)
        : m_j(j)
        , m_file(std::move(file))
        , m_path(std::move(path))
    {
    }
    const nlohmann::json& json() const { return m_j; }
    [[noreturn]] void fail(const std::string& msg, const std::string& sub = {}) const
    {
        throw Error(ErrorCode::BadJson, msg, m_file, sub.empty() ? m_path : join(sub));
    }
    std::string join(const std::string& sub) const { return m_path.empty() ? sub : m_path + "." + sub; }
    bool has(const char* key) const { return m_j.is_object() && m_j.contains(key) && !m_j.at(key).is_null(); }
    JsonAt at(const char* key) const
    {
        if (!m_j.is_object() || !m_j.contains(key))
            fail("required key is missing", key);
        return {m_j.at(key), m_file, join(key)};
    }
    JsonAt at(std::size_t i) const
    {
        // Checked here, so a short or non-list value is named with its file and key, not with a library exception.
        if (!m_j.is_array() || i >= m_j.size())
            fail("must be a list with at least " + std::to_string(i + 1) + " elements, got " + jsonPreview(m_j));
        return {m_j[i], m_file, m_path + "[" + std::to_string(i) + "]"};
    }
    std::string str() const
    {
        if (!m_j.is_string())
            fail("must be a string, got " + jsonPreview(m_j));
        return m_j.get<std::string>();
    }
    std::string strOr(const char* key, const std::string& fallback) const { return has(key) ? at(key).str() : fallback; }
    bool boolean() const
    {
        if (!m_j.is_boolean())
            fail("must be true or false, got " + jsonPreview(m_j));
        return m_j.get<bool>();
    }
    bool boolOr(const char* key, bool fallback) const { return has(key) ? at(key).boolean() : fallback; }
    int id() const
    {
        if (!m_j.is_number_integer() || m_j.get<std::int64_t>() < 0 || m_j.get<std::int64_t>() >= kMaxVocab)
            fail("must be a token id from 0 to " + std::to_string(kMaxVocab - 1) + ", got " + jsonPreview(m_j));
        return static_cast<int>(m_j.get<std::int64_t>());
    }
    const nlohmann::json& array() const
    {
        if (!m_j.is_array())
            fail("must be a list");
        return m_j;
    }
    const nlohmann::json& object() const
    {
        if (!m_j.is_object())
            fail("must be an object");
        return m_j;
    }
    const std::string& file() const { return m_file; }

private:
    const nlohmann::json& m_j;
    std::string m_file;
    std::string m_path;
};

// A pattern object {"String": ...} or {"Regex": ...}.
void readPattern(const JsonAt& p, std::shared_ptr<const UnicodeRegex>& regex, std::u32string& literal)
{
    if (p.has("Regex"))
        regex = std::make_shared<UnicodeRegex>(p.at("Regex").str(), p.file(), p.join("Regex"));
    else if (p.has("String"))
        literal = toU32(p.at("String").str());
    else
        p.fail("must be {\"String\": ...} or {\"Regex\": ...}");
}

SplitBehavior readBehavior(const JsonAt& b)
{
    const std::string s = b.str();
    if (s == "Isolated") return SplitBehavior::Isolated;
    if (s == "Removed") return SplitBehavior::Removed;
    if (s == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (s == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (s == "Contiguous") return SplitBehavior::Contiguous;
    b.fail("unknown split behavior \"" + s + "\"");
}

void readNormalizer(const JsonAt& n, std::vector<NormalizerStep>& out)
{
    const std::string type = n.at("type").str();
    NormalizerStep step;
    if (type == "Sequence") {
        const auto list = n.at("normalizers");
        for (std::size_t i = 0; i < list.array().size(); ++i)
            readNormalizer(list.at(i), out);
        return;
    }
    if (type == "Prepend") {
        step.kind = NormalizerStep::Kind::Prepend;
        step.text = toU32(n.at("prepend").str());
    } else if (type == "Replace") {
        step.kind = NormalizerStep::Kind::Replace;
        readPattern(n.at("pattern"), step.regex, step.text);
        step.content = toU32(n.at("content").str());
    } else if (type == "NFC") {
        step.kind = NormalizerStep::Kind::Nfc;
    } else if (type == "Lowercase") {
        step.kind = NormalizerStep::Kind::Lowercase;
    } else if (type == "Strip") {
        step.kind = NormalizerStep::Kind::Strip;
        step.left = n.boolOr("strip_left", true);
        step.right = n.boolOr("strip_right", true);
    } else if (type == "BertNormalizer") {
        step.kind = NormalizerStep::Kind::Bert;
        step.cleanText = n.boolOr("clean_text", true);
        step.chineseChars = n.boolOr("handle_chinese_chars", true);
        step.lowercase = n.boolOr("lowercase", true);
        step.stripAccents = n.boolOr("strip_accents", step.lowercase); // null: follow lowercase
    } else {
        n.fail("normalizer \"" + type + "\" is not supported (Sequence, Prepend, Replace, NFC, Lowercase, Strip, "
               "BertNormalizer are)", "type");
    }
    out.push_back(std::move(step));
}

void readPreTokenizer(const JsonAt& p, std::vector<PreTokenizerStep>& out)
{
    const std::string type = p.at("type").str();
    PreTokenizerStep step;
    if (type == "Sequence") {
        const auto list = p.at("pretokenizers");
        for (std::size_t i = 0; i < list.array().size(); ++i)
            readPreTokenizer(list.at(i), out);
        return;
    }
    if (type == "ByteLevel") {
        step.kind = PreTokenizerStep::Kind::ByteLevel;
        step.addPrefixSpace = p.boolOr("add_prefix_space", false);
        if (p.boolOr("use_regex", true)) // files older than the key split with the GPT-2 pattern
            step.regex = std::make_shared<UnicodeRegex>(PipelineTokenizer::gpt2Pattern());
    } else if (type == "Split") {
        step.kind = PreTokenizerStep::Kind::Split;
        readPattern(p.at("pattern"), step.regex, step.literal);
        step.behavior = readBehavior(p.at("behavior"));
        step.invert = p.boolOr("invert", false);
    } else if (type == "Metaspace") {
        step.kind = PreTokenizerStep::Kind::Metaspace;
        const auto rep = toU32(p.strOr("replacement", "\u2581"));
        if (rep.size() != 1)
            p.fail("must be one character", "replacement");
        step.replacement = rep.front();
        std::string scheme = p.strOr("prepend_scheme", p.boolOr("add_prefix_space", true) ? "always" : "never");
        if (scheme == "always") step.prepend = PreTokenizerStep::Prepend::Always;
        else if (scheme == "first") step.prepend = PreTokenizerStep::Prepend::First;
        else if (scheme == "never") step.prepend = PreTokenizerStep::Prepend::Never;
        else p.fail("unknown prepend scheme \"" + scheme + "\"", "prepend_scheme");
        step.split = p.boolOr("split", true);
    } else if (type == "Digits") {
        step.kind = PreTokenizerStep::Kind::Digits;
        step.individualDigits = p.boolOr("individual_digits", false);
    } else if (type == "Whitespace") {
        step.kind = PreTokenizerStep::Kind::Whitespace;
    } else if (type == "WhitespaceSplit") {
        step.kind = PreTokenizerStep::Kind::WhitespaceSplit;
    } else if (type == "Punctuation") {
        step.kind = PreTokenizerStep::Kind::Punctuation;
        if (p.has("behavior"))
            step.behavior = readBehavior(p.at("behavior"));
    } else if (type == "BertPreTokenizer") {
        step.kind = PreTokenizerStep::Kind::Bert;
    } else {
        p.fail("pre-tokenizer \"" + type + "\" is not supported (Sequence, ByteLevel, Split, Metaspace, Digits, "
               "Whitespace, WhitespaceSplit, Punctuation, BertPreTokenizer are)", "type");
    }
    out.push_back(std::move(step));
}

// A template's special tokens, all items together, at most this many ids: real templates hold a handful, and 20,000
// items each naming a token of 20,000 ids (a 1 MB file) expanded to 400 million at load.
constexpr std::size_t kMaxTemplateIds = 65536;

// The ids of a template item {"SpecialToken": {"id": NAME, ...}}, looked up in the processor's special_tokens;
// `used` counts the template's ids so far (refused past kMaxTemplateIds before they are copied).
std::vector<int> specialIds(const JsonAt& processor, const JsonAt& item, std::size_t& used)
{
    const std::string name = item.at("SpecialToken").at("id").str();
    const auto ids = processor.at("special_tokens").at(name.c_str()).at("ids");
    used += ids.array().size();
    if (used > kMaxTemplateIds)
        item.fail("the post-processor's template expands to more than " + std::to_string(kMaxTemplateIds) +
                  " special token ids (a real template has a few)");
    std::vector<int> out;
    for (std::size_t k = 0; k < ids.array().size(); ++k)
        out.push_back(ids.at(k).id());
    return out;
}

std::int32_t typeId(const JsonAt& item)
{
    if (!item.has("type_id"))
        return 0;
    const auto& v = item.at("type_id").json();
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 255)
        item.fail("must be a small non-negative integer, got " + jsonPreview(v), "type_id");
    return static_cast<std::int32_t>(v.get<std::int64_t>());
}

// The special tokens a post-processor puts before and after a single text, and around a pair.
void readPostProcessor(const JsonAt& p, TokenizerPipeline& t)
{
    const std::string type = p.at("type").str();
    if (type == "Sequence") {
        const auto list = p.at("processors");
        for (std::size_t i = 0; i < list.array().size(); ++i)
            readPostProcessor(list.at(i), t);
    } else if (type == "TemplateProcessing") {
        std::size_t used = 0;
        const auto single = p.at("single");
        bool afterText = false;
        for (std::size_t i = 0; i < single.array().size(); ++i) {
            const auto item = single.at(i);
            if (item.has("Sequence")) {
                afterText = true;
                continue;
            }
            for (const int id : specialIds(p, item, used))
                (afterText ? t.suffixIds : t.prefixIds).push_back(id);
        }
        if (p.has("pair")) {
            const auto pair = p.at("pair");
            for (std::size_t i = 0; i < pair.array().size(); ++i) {
                const auto item = pair.at(i);
                TokenizerPipeline::PairItem out;
                if (item.has("Sequence")) {
                    const auto seq = item.at("Sequence");
                    const std::string which = seq.at("id").str();
                    if (which != "A" && which != "B")
                        seq.fail("must be \"A\" or \"B\"", "id");
                    out.kind = which == "A" ? TemplateItem::Kind::A : TemplateItem::Kind::B;
                    out.typeId = typeId(seq);
                } else {
                    out.ids = specialIds(p, item, used);
                    out.typeId = typeId(item.at("SpecialToken"));
                }
                t.pair.push_back(std::move(out));
            }
        }
    } else if (type == "RobertaProcessing" || type == "BertProcessing") {
        const int cls = p.at("cls").at(std::size_t{1}).id(), sep = p.at("sep").at(std::size_t{1}).id();
        t.prefixIds.push_back(cls);
        t.suffixIds.push_back(sep);
        // BERT: [CLS] A [SEP] B [SEP], types 0 then 1; RoBERTa: <s> A </s></s> B </s>, all type 0.
        using K = TemplateItem::Kind;
        if (type == "BertProcessing")
            t.pair = {{K::Special, {cls}, 0}, {K::A, {}, 0}, {K::Special, {sep}, 0}, {K::B, {}, 1}, {K::Special, {sep}, 1}};
        else
            t.pair = {{K::Special, {cls}, 0}, {K::A, {}, 0}, {K::Special, {sep, sep}, 0}, {K::B, {}, 0},
                      {K::Special, {sep}, 0}};
    } else if (type != "ByteLevel") {
        p.fail("post-processor \"" + type + "\" is not supported", "type");
    }
}

std::vector<std::pair<std::string, std::string>> splitMerges(const JsonAt& merges)
{
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(merges.array().size());
    for (std::size_t i = 0; i < merges.array().size(); ++i) {
        const auto e = merges.at(i);
        if (e.json().is_string()) { // "left right"
            const std::string s = e.str();
            const auto sp = s.find(' ', 1);
            if (sp == std::string::npos || sp + 1 >= s.size())
                e.fail("merge \"" + s + "\" is not a pair \"left right\"");
            out.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        } else if (e.json().is_array() && e.json().size() == 2) { // ["left", "right"] (newer files)
            out.emplace_back(e.at(std::size_t{0}).str(), e.at(std::size_t{1}).str());
        } else {
            e.fail("a merge must be \"left right\" or [\"left\", \"right\"]");
        }
    }
    return out;
}

bool mapsBytes(const std::vector<PreTokenizerStep>& steps)
{
    for (const auto& s : steps)
        if (s.kind == PreTokenizerStep::Kind::ByteLevel)
            return true;
    return false;
}

std::vector<std::string> piecesFromVocab(const JsonAt& vocab)
{
    std::vector<std::string> pieces;
    for (auto it = vocab.object().begin(); it != vocab.object().end(); ++it) {
        const int id = JsonAt(it.value(), vocab.file(), vocab.join(it.key())).id();
        if (static_cast<std::size_t>(id) >= pieces.size())
            pieces.resize(static_cast<std::size_t>(id) + 1);
        pieces[static_cast<std::size_t>(id)] = it.key();
    }
    return pieces;
}

// tokenizer_config.json next to a SentencePiece model: whether BOS / EOS are added by default.
void readAddFlags(const fs::path& dir, bool& addBos, bool& addEos)
{
    const fs::path cfg = dir / "tokenizer_config.json";
    if (!fs::exists(cfg))
        return;
    const auto j = readJsonFile(cfg.string());
    const JsonAt c(j, cfg.string(), "");
    addBos = c.boolOr("add_bos_token", addBos);
    addEos = c.boolOr("add_eos_token", addEos);
}

// A slow tokenizer folder's added tokens past the SentencePiece model's pieces (added_tokens.json: {content: id};
// tokenizer_config.json's added_tokens_decoder: {id: {content, special}}), as pieces of their own: LLaVA's <image> and
// <pad>. Ids between are unused pieces; ids inside the model are the model's own pieces and stay as they are.
// id -> content, special.
std::map<long long, std::pair<std::string, bool>> slowAddedTokens(const fs::path& dir)
{
    std::map<long long, std::pair<std::string, bool>> extra;
    auto checkedId = [](long long id, const std::string& file, const std::string& key) {
        if (id < 0 || id >= kMaxVocab)
            throw Error(ErrorCode::BadConfig, "an added token's id must be 0 to " + std::to_string(kMaxVocab - 1), file,
                        key);
        return id;
    };
    if (const fs::path added = dir / "added_tokens.json"; fs::exists(added)) {
        const auto j = readJsonFile(added.string());
        if (!j.is_object())
            throw Error(ErrorCode::BadConfig, "must map each added token to its id", added.string());
        for (const auto& [content, id] : j.items()) {
            if (!id.is_number_integer())
                throw Error(ErrorCode::BadConfig, "must be an id", added.string(), content);
            extra[checkedId(id.get<long long>(), added.string(), content)] = {content, true};
        }
    }
    if (const fs::path cfg = dir / "tokenizer_config.json"; fs::exists(cfg)) {
        const auto j = readJsonFile(cfg.string());
        const auto decoder = j.is_object() ? j.find("added_tokens_decoder") : j.end();
        if (j.is_object() && decoder != j.end() && decoder->is_object())
            for (const auto& [key, token] : decoder->items()) {
                char* end = nullptr;
                const long long id = std::strtoll(key.c_str(), &end, 10);
                if (key.empty() || *end != '\0' || !token.is_object() || !token.contains("content") ||
                    !token["content"].is_string())
                    throw Error(ErrorCode::BadConfig, "must map ids to {\"content\": ...}", cfg.string(),
                                "added_tokens_decoder." + key);
                const auto special = token.find("special");
                extra[checkedId(id, cfg.string(), "added_tokens_decoder." + key)] = {
                    token["content"].get<std::string>(), special == token.end() || !special->is_boolean() || special->get<bool>()};
            }
    }
    return extra;
}

void readSlowAddedTokens(const fs::path& dir, std::vector<std::string>& pieces, std::vector<float>& scores,
                         std::vector<int>& types)
{
    enum { Control = 3, UserDefined = 4, Unused = 5 };
    for (const auto& [id, token] : slowAddedTokens(dir)) {
        if (id < static_cast<long long>(pieces.size()))
            continue;
        while (static_cast<long long>(pieces.size()) < id) {
            pieces.push_back("<unused" + std::to_string(pieces.size()) + ">");
            scores.push_back(0);
            types.push_back(Unused);
        }
        pieces.push_back(token.first);
        scores.push_back(0);
        types.push_back(token.second ? Control : UserDefined);
    }
}

// Whether a slow Llama tokenizer folder says legacy false: the text's first piece alone gets the "▁" prefix (none
// after a special token), as transformers' LlamaTokenizer(legacy=False) encodes. Only a folder without a
// tokenizer.json is read as the slow class: with one, Hugging Face uses that file's pipeline (the prefix before every
// piece, as written there), which the model file then reproduces.
bool slowTokenizerNotLegacy(const fs::path& dir)
{
    const fs::path cfg = dir / "tokenizer_config.json";
    if (!fs::exists(cfg) || fs::exists(dir / "tokenizer.json"))
        return false;
    const auto j = readJsonFile(cfg.string());
    const auto legacy = j.is_object() ? j.find("legacy") : j.end();
    return j.is_object() && legacy != j.end() && legacy->is_boolean() && !legacy->get<bool>();
}

// The SentencePiece-style pipeline (Llama 2, Mistral): control, unknown and user pieces are added tokens; each piece of
// text gets "▁" prepended and its spaces written as "▁"; BPE by score with byte fallback.
TokenizerPipeline sentencePiecePipeline(std::vector<std::string> pieces, const std::vector<float>& scores,
                                        const std::vector<int>& types, bool addDummyPrefix, bool escapeSpaces,
                                        bool removeExtraSpaces, bool byteFallback, std::optional<int> unkId,
                                        std::optional<int> bosId, std::optional<int> eosId, bool addBos, bool addEos,
                                        std::string source)
{
    enum { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };
    TokenizerPipeline t;
    std::vector<bool> mergeable(pieces.size());
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        mergeable[i] = types[i] == Normal;
        if (types[i] == Unknown && !unkId)
            unkId = static_cast<int>(i);
        if (types[i] == Unknown || types[i] == Control || types[i] == UserDefined)
            t.added.push_back({pieces[i], static_cast<int>(i), types[i] != UserDefined});
    }
    if (removeExtraSpaces) {
        NormalizerStep strip;
        strip.kind = NormalizerStep::Kind::Strip;
        t.normalizers.push_back(strip);
        NormalizerStep collapse;
        collapse.kind = NormalizerStep::Kind::Replace;
        collapse.regex = std::make_shared<UnicodeRegex>(" {2,}");
        collapse.content = U" ";
        t.normalizers.push_back(collapse);
    }
    if (addDummyPrefix) {
        NormalizerStep prepend;
        prepend.kind = NormalizerStep::Kind::Prepend;
        prepend.text = U"\u2581";
        t.normalizers.push_back(prepend);
    }
    if (escapeSpaces) {
        NormalizerStep replace;
        replace.kind = NormalizerStep::Kind::Replace;
        replace.text = U" ";
        replace.content = U"\u2581";
        t.normalizers.push_back(replace);
    }
    BpeModel::Options opt;
    opt.byteFallback = byteFallback;
    opt.unkId = unkId;
    opt.fuseUnk = true;
    t.model = std::make_shared<BpeModel>(BpeModel::fromScores(std::move(pieces), scores, mergeable, opt, source));
    if (addBos && bosId)
        t.prefixIds.push_back(*bosId);
    if (addEos && eosId)
        t.suffixIds.push_back(*eosId);
    t.kind = "SentencePiece BPE";
    t.source = std::move(source);
    return t;
}

// tokenizer.json's added_tokens into the pipeline; their contents name unused ids of the vocabulary.
void readAddedTokens(const JsonAt& root, std::vector<std::string>& pieces, TokenizerPipeline& t)
{
    if (!root.has("added_tokens"))
        return;
    const auto added = root.at("added_tokens");
    for (std::size_t i = 0; i < added.array().size(); ++i) {
        const auto a = added.at(i);
        AddedToken tok{a.at("content").str(), a.at("id").id(), a.boolOr("special", false), a.boolOr("lstrip", false),
                       a.boolOr("rstrip", false), a.boolOr("single_word", false)};
        if (static_cast<std::size_t>(tok.id) >= pieces.size())
            pieces.resize(static_cast<std::size_t>(tok.id) + 1);
        if (pieces[static_cast<std::size_t>(tok.id)].empty())
            pieces[static_cast<std::size_t>(tok.id)] = tok.content;
        t.added.push_back(std::move(tok));
    }
}

void readPipelineSteps(const JsonAt& root, TokenizerPipeline& t)
{
    if (root.has("normalizer"))
        readNormalizer(root.at("normalizer"), t.normalizers);
    if (root.has("pre_tokenizer"))
        readPreTokenizer(root.at("pre_tokenizer"), t.preTokenizers);
    if (root.has("post_processor"))
        readPostProcessor(root.at("post_processor"), t);
}

int maxCharsPerWord(const JsonAt& model)
{
    if (!model.has("max_input_chars_per_word"))
        return 100;
    const auto& v = model.at("max_input_chars_per_word").json();
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1)
        model.fail("must be a positive integer, got " + jsonPreview(v), "max_input_chars_per_word");
    return static_cast<int>(std::min<std::int64_t>(v.get<std::int64_t>(), 1'000'000));
}

std::unique_ptr<PipelineTokenizer> wordPieceFromJson(const JsonAt& root, const JsonAt& model, const std::string& path)
{
    TokenizerPipeline t;
    t.source = path;
    auto pieces = piecesFromVocab(model.at("vocab"));
    readAddedTokens(root, pieces, t);
    readPipelineSteps(root, t);
    const std::string unk = model.at("unk_token").str();
    t.kind = "WordPiece";
    t.model = std::make_shared<WordPieceModel>(std::move(pieces), unk, model.strOr("continuing_subword_prefix", "##"),
                                               maxCharsPerWord(model), path);
    return std::make_unique<PipelineTokenizer>(std::move(t));
}

} // namespace

std::unique_ptr<PipelineTokenizer> tokenizerFromJson(const std::string& path)
{
    const auto j = readJsonFile(path);
    const JsonAt root(j, path, "");
    root.object();
    TokenizerPipeline t;
    t.source = path;
    const auto model = root.at("model");
    model.object();
    // Files without "type" say which model they are by their keys (the Hub's bert-base-uncased has none).
    const bool looksWordPiece = !model.has("merges") && model.has("continuing_subword_prefix") && model.has("unk_token");
    const std::string type = model.strOr("type", model.has("merges") ? "BPE" : looksWordPiece ? "WordPiece" : "");
    if (type != "BPE" && type != "WordPiece") // a kind attnscope does not read yet: its own code, so callers can tell
        throw Error(ErrorCode::UnsupportedTokenizer,            // it from a broken file
                    "tokenizer model \"" + (type.empty() ? std::string("(unknown)") : type) +
                        "\" is not supported (BPE and WordPiece are; Unigram is not)",
                    path, model.join("type"));
    if (type == "WordPiece")
        return wordPieceFromJson(root, model, path);
    if (!model.strOr("continuing_subword_prefix", "").empty() || !model.strOr("end_of_word_suffix", "").empty())
        model.fail("continuing_subword_prefix / end_of_word_suffix are not supported");
    auto pieces = piecesFromVocab(model.at("vocab"));
    const auto merges = splitMerges(model.at("merges"));
    readAddedTokens(root, pieces, t);
    readPipelineSteps(root, t);
    BpeModel::Options opt;
    opt.byteFallback = model.boolOr("byte_fallback", false);
    opt.fuseUnk = model.boolOr("fuse_unk", false);
    opt.ignoreMerges = model.boolOr("ignore_merges", false);
    if (model.has("unk_token")) {
        const std::string unk = model.at("unk_token").str();
        for (std::size_t i = 0; i < pieces.size(); ++i)
            if (pieces[i] == unk)
                opt.unkId = static_cast<int>(i);
        if (!opt.unkId)
            model.fail("\"" + unk + "\" is not in the vocabulary", "unk_token");
    }
    t.kind = mapsBytes(t.preTokenizers) ? "byte-level BPE" : "BPE";
    t.model = std::make_shared<BpeModel>(BpeModel::fromMerges(std::move(pieces), merges, opt, path));
    return std::make_unique<PipelineTokenizer>(std::move(t));
}

std::unique_ptr<PipelineTokenizer> tokenizerFromGpt2Files(const std::string& vocabJson, const std::string& mergesTxt)
{
    const auto vj = readJsonFile(vocabJson);
    auto pieces = piecesFromVocab(JsonAt(vj, vocabJson, ""));
    std::vector<std::pair<std::string, std::string>> merges;
    std::istringstream in(readTextFile(mergesTxt));
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
        ++lineNo;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty() || (lineNo == 1 && line.rfind("#version", 0) == 0))
            continue;
        const auto sp = line.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 == line.size())
            throw Error(ErrorCode::CorruptFile, "line " + std::to_string(lineNo) + " is not a \"left right\" pair", mergesTxt);
        merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
    }
    TokenizerPipeline t;
    t.source = vocabJson;
    for (std::size_t i = 0; i < pieces.size(); ++i)
        if (pieces[i] == "<|endoftext|>") // GPT-2's one special token, recognised in text as Hugging Face does
            t.added.push_back({pieces[i], static_cast<int>(i), true});
    // A slow tokenizer folder's added tokens (Whisper's <|startoftranscript|> ... and timestamps, Qwen's <|im_start|>):
    // pieces of their own past the vocabulary, recognised in text.
    for (const auto& added : slowAddedTokens(fs::path(vocabJson).parent_path())) {
        const long long id = added.first; // (a copy, not a structured binding: clang 14 cannot capture those)
        const auto& token = added.second;
        if (id < static_cast<long long>(pieces.size()) && pieces[static_cast<std::size_t>(id)] != token.first)
            continue; // the vocabulary's own piece at that id stays
        while (static_cast<long long>(pieces.size()) < id)
            pieces.push_back("<unused" + std::to_string(pieces.size()) + ">");
        if (id == static_cast<long long>(pieces.size()))
            pieces.push_back(token.first);
        if (std::none_of(t.added.begin(), t.added.end(), [&](const auto& a) { return a.id == id; }))
            t.added.push_back({token.first, static_cast<int>(id), token.second});
    }
    PreTokenizerStep byteLevel;
    byteLevel.regex = std::make_shared<UnicodeRegex>(PipelineTokenizer::gpt2Pattern());
    t.preTokenizers.push_back(byteLevel);
    t.kind = "byte-level BPE";
    t.model = std::make_shared<BpeModel>(BpeModel::fromMerges(std::move(pieces), merges, {}, vocabJson));
    return std::make_unique<PipelineTokenizer>(std::move(t));
}

std::unique_ptr<PipelineTokenizer> tokenizerFromSentencePiece(const std::string& modelPath)
{
    const std::string bytes = readTextFile(modelPath);
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<int> types;
    int modelType = 1; // UNIGRAM unless trainer_spec says otherwise
    bool byteFallback = false, addDummyPrefix = true, removeExtra = true, escape = true;
    std::optional<int> unkId, bosId = 1, eosId = 2;
    std::string normalizerName;
    bool charsmap = false;
    ProtoReader top(bytes, modelPath, "ModelProto");
    while (top.more()) {
        const auto key = top.varint();
        const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
        if (field == 1 && wire == 2) { // SentencePiece piece
            ProtoReader p(top.bytes(), modelPath, "pieces[" + std::to_string(pieces.size()) + "]");
            std::string piece;
            float score = 0;
            int type = 1;
            while (p.more()) {
                const auto k = p.varint();
                const int f = static_cast<int>(k >> 3), w = static_cast<int>(k & 7);
                if (f == 1 && w == 2) piece = std::string(p.bytes());
                else if (f == 2 && w == 5) score = p.fixed32();
                else if (f == 3 && w == 0) type = static_cast<int>(p.varint());
                else p.skip(w);
            }
            if (pieces.size() >= static_cast<std::size_t>(kMaxVocab))
                top.fail("too many pieces");
            pieces.push_back(std::move(piece));
            scores.push_back(score);
            types.push_back(type);
        } else if (field == 2 && wire == 2) { // TrainerSpec
            ProtoReader s(top.bytes(), modelPath, "trainer_spec");
            while (s.more()) {
                const auto k = s.varint();
                const int f = static_cast<int>(k >> 3), w = static_cast<int>(k & 7);
                if (f == 3 && w == 0) modelType = static_cast<int>(s.varint());
                else if (f == 35 && w == 0) byteFallback = s.varint() != 0;
                else if (f == 40 && w == 0) unkId = static_cast<int>(s.varint());
                else if (f == 41 && w == 0) bosId = static_cast<int>(static_cast<std::int32_t>(s.varint()));
                else if (f == 42 && w == 0) eosId = static_cast<int>(static_cast<std::int32_t>(s.varint()));
                else s.skip(w);
            }
        } else if (field == 3 && wire == 2) { // NormalizerSpec
            ProtoReader n(top.bytes(), modelPath, "normalizer_spec");
            while (n.more()) {
                const auto k = n.varint();
                const int f = static_cast<int>(k >> 3), w = static_cast<int>(k & 7);
                if (f == 1 && w == 2) normalizerName = std::string(n.bytes());
                else if (f == 2 && w == 2) charsmap = !n.bytes().empty();
                else if (f == 3 && w == 0) addDummyPrefix = n.varint() != 0;
                else if (f == 4 && w == 0) removeExtra = n.varint() != 0;
                else if (f == 5 && w == 0) escape = n.varint() != 0;
                else n.skip(w);
            }
        } else {
            top.skip(wire);
        }
    }
    if (pieces.empty())
        throw Error(ErrorCode::CorruptFile, "no pieces (not a SentencePiece model?)", modelPath);
    if (modelType != 2)
        throw Error(ErrorCode::UnsupportedDtype,
                    "SentencePiece model type " + std::to_string(modelType) + " is not supported (only BPE, type 2, is)",
                    modelPath, "trainer_spec.model_type");
    if (charsmap && normalizerName != "identity")
        throw Error(ErrorCode::UnsupportedDtype, "normalizer \"" + normalizerName + "\" is not supported (identity is)",
                    modelPath, "normalizer_spec.name");
    for (auto* id : {&unkId, &bosId, &eosId})
        if (*id && (**id < 0 || static_cast<std::size_t>(**id) >= pieces.size()))
            id->reset();
    bool addBos = true, addEos = false;
    const fs::path dir = fs::path(modelPath).parent_path();
    readAddFlags(dir, addBos, addEos);
    readSlowAddedTokens(dir, pieces, scores, types);
    auto t = sentencePiecePipeline(std::move(pieces), scores, types, addDummyPrefix, escape, removeExtra, byteFallback,
                                   unkId, bosId, eosId, addBos, addEos, modelPath);
    if (slowTokenizerNotLegacy(dir))
        for (auto& step : t.normalizers)
            if (step.kind == NormalizerStep::Kind::Prepend)
                step.atTextStart = true;
    return std::make_unique<PipelineTokenizer>(std::move(t));
}

std::unique_ptr<PipelineTokenizer> tokenizerFromGguf(const GgufFile& g)
{
    const std::string model = g.string("tokenizer.ggml.model");
    const auto* tokensValue = g.value("tokenizer.ggml.tokens");
    if (!tokensValue || tokensValue->kind != GgufValue::Kind::Array || tokensValue->elementKind != GgufValue::Kind::String)
        throw Error(ErrorCode::BadConfig, "must be a list of strings", g.path(), "tokenizer.ggml.tokens");
    std::vector<std::string> pieces = tokensValue->strings;
    const std::size_t n = pieces.size();
    auto numbers = [&](const char* key, double fallback) {
        std::vector<double> v(n, fallback);
        if (const auto* a = g.value(key)) {
            if (a->kind != GgufValue::Kind::Array || a->numbers.size() != n)
                throw Error(ErrorCode::BadConfig, "must be a list of " + std::to_string(n) + " numbers (one per token)",
                            g.path(), key);
            v = a->numbers;
        }
        return v;
    };
    const auto typesD = numbers("tokenizer.ggml.token_type", 1);
    std::vector<int> types(typesD.begin(), typesD.end());
    auto optionalId = [&](const char* key) -> std::optional<int> {
        const auto v = g.uintOr(key);
        if (!v || *v >= n)
            return std::nullopt;
        return static_cast<int>(*v);
    };
    const auto bos = optionalId("tokenizer.ggml.bos_token_id"), eos = optionalId("tokenizer.ggml.eos_token_id");
    const auto unk = optionalId("tokenizer.ggml.unknown_token_id");
    if (model == "llama") {
        const auto scoresD = numbers("tokenizer.ggml.scores", 0);
        std::vector<float> scores(scoresD.begin(), scoresD.end());
        bool byteFallback = false;
        for (int t : types)
            byteFallback = byteFallback || t == 6;
        auto t = sentencePiecePipeline(std::move(pieces), scores, types, g.boolOr("tokenizer.ggml.add_space_prefix").value_or(true),
                                       true, false, byteFallback, unk, bos, eos,
                                       g.boolOr("tokenizer.ggml.add_bos_token").value_or(true),
                                       g.boolOr("tokenizer.ggml.add_eos_token").value_or(false), g.path());
        t.kind = "SentencePiece BPE (GGUF)";
        return std::make_unique<PipelineTokenizer>(std::move(t));
    }
    if (model != "gpt2")
        throw Error(ErrorCode::UnsupportedDtype, "tokenizer \"" + model + "\" is not supported (llama and gpt2 are)", g.path(),
                    "tokenizer.ggml.model");
    const auto* mergesValue = g.value("tokenizer.ggml.merges");
    if (!mergesValue || mergesValue->elementKind != GgufValue::Kind::String)
        throw Error(ErrorCode::BadConfig, "must be a list of \"left right\" strings", g.path(), "tokenizer.ggml.merges");
    std::vector<std::pair<std::string, std::string>> merges;
    for (const auto& m : mergesValue->strings) {
        const auto sp = m.find(' ', 1);
        if (sp == std::string::npos)
            throw Error(ErrorCode::BadConfig, "merge \"" + m + "\" is not a pair", g.path(), "tokenizer.ggml.merges");
        merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
    TokenizerPipeline t;
    t.source = g.path();
    for (std::size_t i = 0; i < n; ++i)
        if (types[i] == 3 || types[i] == 4) // control and user-defined tokens are matched in the text
            t.added.push_back({pieces[i], static_cast<int>(i), types[i] == 3});
    // The pre-tokenizer is named, not stored: the patterns of the names llama.cpp's converter writes.
    const std::string pre = g.stringOr("tokenizer.ggml.pre").value_or("default");
    PreTokenizerStep byteLevel;
    t.kind = "byte-level BPE (GGUF, pre-tokenizer " + pre + ")";
    if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "qwen2") {
        PreTokenizerStep split;
        split.kind = PreTokenizerStep::Kind::Split;
        split.regex = std::make_shared<UnicodeRegex>(pre == "qwen2" ? kQwen2Pattern : kLlama3Pattern);
        t.preTokenizers.push_back(split);
    } else {
        if (pre == "smollm") {
            PreTokenizerStep digits;
            digits.kind = PreTokenizerStep::Kind::Digits;
            digits.individualDigits = true;
            t.preTokenizers.push_back(digits);
        } else if (pre != "default" && pre != "gpt2" && pre != "gpt-2") {
            t.kind = "byte-level BPE (GGUF; pre-tokenizer \"" + pre + "\" unknown, GPT-2's pattern used)";
        }
        byteLevel.regex = std::make_shared<UnicodeRegex>(PipelineTokenizer::gpt2Pattern());
    }
    t.preTokenizers.push_back(byteLevel);
    BpeModel::Options opt;
    opt.unkId = unk;
    opt.ignoreMerges = pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3";
    if (g.boolOr("tokenizer.ggml.add_bos_token").value_or(false) && bos)
        t.prefixIds.push_back(*bos);
    if (g.boolOr("tokenizer.ggml.add_eos_token").value_or(false) && eos)
        t.suffixIds.push_back(*eos);
    t.model = std::make_shared<BpeModel>(BpeModel::fromMerges(std::move(pieces), merges, opt, g.path()));
    return std::make_unique<PipelineTokenizer>(std::move(t));
}

std::unique_ptr<PipelineTokenizer> tokenizerFromWordPieceVocab(const std::string& vocabTxt)
{
    const std::string text = readTextFile(vocabTxt);
    std::vector<std::string> pieces;
    std::size_t begin = 0;
    while (begin < text.size()) {
        std::size_t end = text.find('\n', begin);
        if (end == std::string::npos)
            end = text.size();
        std::string line = text.substr(begin, end - begin);
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        pieces.push_back(std::move(line));
        if (pieces.size() > static_cast<std::size_t>(kMaxVocab))
            throw Error(ErrorCode::BadJson, "more than " + std::to_string(kMaxVocab) + " lines: not a vocabulary", vocabTxt);
        begin = end + 1;
    }
    TokenizerPipeline t;
    t.source = vocabTxt;
    // tokenizer_config.json beside it (BertTokenizer's options); without one, bert-base-uncased's defaults.
    NormalizerStep norm;
    norm.kind = NormalizerStep::Kind::Bert;
    const fs::path cfg = fs::path(vocabTxt).parent_path() / "tokenizer_config.json";
    if (fs::exists(cfg)) {
        const auto j = readJsonFile(cfg.string());
        const JsonAt c(j, cfg.string(), "");
        norm.lowercase = c.boolOr("do_lower_case", true);
        norm.stripAccents = c.boolOr("strip_accents", norm.lowercase);
        norm.chineseChars = c.boolOr("tokenize_chinese_chars", true);
    }
    t.normalizers.push_back(norm);
    PreTokenizerStep pre;
    pre.kind = PreTokenizerStep::Kind::Bert;
    t.preTokenizers.push_back(pre);
    // BERT's special tokens are matched whole in the raw text, as the Hub's tokenizer.json files declare them.
    auto idOf = [&](const std::string& p) -> std::optional<int> {
        for (std::size_t i = 0; i < pieces.size(); ++i)
            if (pieces[i] == p)
                return static_cast<int>(i);
        return std::nullopt;
    };
    for (const char* special : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"})
        if (const auto id = idOf(special))
            t.added.push_back({special, *id, true, false, false, false});
    const auto cls = idOf("[CLS]"), sep = idOf("[SEP]");
    if (!cls || !sep || !idOf("[UNK]"))
        throw Error(ErrorCode::BadJson, "a WordPiece vocabulary needs [CLS], [SEP] and [UNK] entries", vocabTxt);
    t.prefixIds = {*cls};
    t.suffixIds = {*sep};
    using K = TemplateItem::Kind;
    t.pair = {{K::Special, {*cls}, 0}, {K::A, {}, 0}, {K::Special, {*sep}, 0}, {K::B, {}, 1}, {K::Special, {*sep}, 1}};
    t.kind = "WordPiece";
    t.model = std::make_shared<WordPieceModel>(std::move(pieces), "[UNK]", "##", 100, vocabTxt);
    return std::make_unique<PipelineTokenizer>(std::move(t));
}

} // namespace attnscope::core
