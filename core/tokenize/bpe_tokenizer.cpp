// Byte-level BPE as GPT-2 defines it. Pre-tokenisation implements the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// by hand over code points (std::regex has no Unicode classes).
#include "tokenize/bpe_tokenizer.h"

#include "tokenize/unicode_class.h"
#include "util/error.h"
#include "util/text_file.h"

#include <climits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace attnscope::core {

namespace {
std::string displayText(std::string_view bytes)
{
    std::string out;
    for (std::size_t i = 0; i < bytes.size();) {
        std::size_t len;
        const char32_t cp = decodeUtf8(bytes, i, len);
        if (cp == 0xFFFD && len == 1) {
            static const char* hex = "0123456789ABCDEF";
            const auto b = static_cast<unsigned char>(bytes[i]);
            out += std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
        } else {
            out.append(bytes.substr(i, len));
        }
        i += len;
    }
    return out;
}
} // namespace

BpeTokenizer::BpeTokenizer(std::unordered_map<std::string, std::int32_t> vocab,
                           const std::vector<std::pair<std::string, std::string>>& merges, std::string source)
    : m_vocab(std::move(vocab))
    , m_source(std::move(source))
{
    for (std::size_t r = 0; r < merges.size(); ++r)
        m_mergeRank.emplace(merges[r].first + " " + merges[r].second, static_cast<int>(r));
    // GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to 256, 257, ...
    int next = 0;
    for (int b = 0; b < 256; ++b) {
        const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
        appendUtf8(m_byteToSymbol[b], printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++));
    }
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::fromFiles(const std::string& vocabJson, const std::string& mergesTxt)
{
    const auto vj = readJsonFile(vocabJson);
    if (!vj.is_object())
        throw Error(ErrorCode::BadJson, "expected an object of token -> id", vocabJson);
    std::unordered_map<std::string, std::int32_t> vocab;
    for (auto it = vj.begin(); it != vj.end(); ++it) {
        if (!it->is_number_integer())
            throw Error(ErrorCode::BadJson, "token id is not an integer", vocabJson, it.key());
        vocab.emplace(it.key(), it->get<std::int32_t>());
    }
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
            throw Error(ErrorCode::CorruptFile, "line " + std::to_string(lineNo) + " is not a \"left right\" pair",
                        mergesTxt);
        merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
    }
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges, vocabJson);
}

std::unique_ptr<BpeTokenizer> BpeTokenizer::fromTokenizerJson(const std::string& path)
{
    const auto j = readJsonFile(path);
    const auto model = j.find("model");
    if (model == j.end() || !model->is_object())
        throw Error(ErrorCode::BadJson, "no \"model\" object", path);
    const std::string type = model->value("type", "");
    if (type != "BPE")
        throw Error(ErrorCode::BadJson, "tokenizer model type \"" + type + "\" is not supported (BPE only)", path,
                    "model.type");
    std::unordered_map<std::string, std::int32_t> vocab;
    const auto v = model->find("vocab");
    if (v == model->end() || !v->is_object())
        throw Error(ErrorCode::BadJson, "no vocab object", path, "model.vocab");
    for (auto it = v->begin(); it != v->end(); ++it)
        vocab.emplace(it.key(), it->get<std::int32_t>());
    std::vector<std::pair<std::string, std::string>> merges;
    const auto m = model->find("merges");
    if (m == model->end() || !m->is_array())
        throw Error(ErrorCode::BadJson, "no merges list", path, "model.merges");
    for (const auto& e : *m) {
        if (e.is_string()) { // "left right"
            const auto s = e.get<std::string>();
            const auto sp = s.find(' ');
            if (sp == std::string::npos)
                throw Error(ErrorCode::BadJson, "merge \"" + s + "\" is not a pair", path, "model.merges");
            merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        } else if (e.is_array() && e.size() == 2) { // ["left", "right"] (newer tokenizers)
            merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
        } else {
            throw Error(ErrorCode::BadJson, "merge entry " + e.dump() + " is not a pair", path, "model.merges");
        }
    }
    return std::make_unique<BpeTokenizer>(std::move(vocab), merges, path);
}

std::vector<std::pair<std::size_t, std::size_t>> BpeTokenizer::preTokenize(std::string_view text)
{
    std::vector<char32_t> cps;
    std::vector<std::size_t> at; // byte offset of each code point, plus the end
    for (std::size_t i = 0; i < text.size();) {
        std::size_t len;
        cps.push_back(decodeUtf8(text, i, len));
        at.push_back(i);
        i += len;
    }
    at.push_back(text.size());
    const std::size_t n = cps.size();
    auto cls = [&](std::size_t i) { return classify(cps[i]); };

    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t i = 0;
    while (i < n) {
        std::size_t end = i + 1;
        const char32_t c = cps[i];
        if (c == U'\'' && i + 1 < n) { // contractions: 's 't 'm 'd 're 've 'll
            const char32_t a = cps[i + 1];
            const char32_t b = i + 2 < n ? cps[i + 2] : 0;
            if (a == U's' || a == U't' || a == U'm' || a == U'd')
                end = i + 2;
            else if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l'))
                end = i + 3;
        }
        const bool contraction = end > i + 1;
        if (!contraction) {
            // ` ?X+` for X in letters, numbers, other: an optional single space, then a run of one class.
            const std::size_t s = (c == U' ' && i + 1 < n && cls(i + 1) != CharClass::Space) ? i + 1 : i;
            const CharClass k = cls(s);
            if (k != CharClass::Space) {
                end = s + 1;
                while (end < n && cls(end) == k)
                    ++end;
            } else {
                // White space: all of a run that reaches the end; otherwise leave its last character to
                // start the next piece (\s+(?!\S)), or take a single one (\s+).
                std::size_t r = i;
                while (r < n && cls(r) == CharClass::Space)
                    ++r;
                end = r == n ? n : (r - i >= 2 ? r - 1 : i + 1);
            }
        }
        out.emplace_back(at[i], at[end]);
        i = end;
    }
    return out;
}

void BpeTokenizer::bpe(std::string_view piece, std::size_t offset, std::vector<Token>& out) const
{
    struct Sym {
        std::string s;
        std::size_t begin, end;
    };
    std::vector<Sym> syms;
    for (std::size_t b = 0; b < piece.size(); ++b)
        syms.push_back({m_byteToSymbol[static_cast<unsigned char>(piece[b])], offset + b, offset + b + 1});
    while (syms.size() > 1) {
        int best = INT_MAX;
        std::size_t bi = 0;
        for (std::size_t i = 0; i + 1 < syms.size(); ++i) {
            const auto it = m_mergeRank.find(syms[i].s + " " + syms[i + 1].s);
            if (it != m_mergeRank.end() && it->second < best) {
                best = it->second;
                bi = i;
            }
        }
        if (best == INT_MAX)
            break;
        const std::string first = syms[bi].s, second = syms[bi + 1].s;
        std::vector<Sym> merged;
        for (std::size_t i = 0; i < syms.size();) {
            if (i + 1 < syms.size() && syms[i].s == first && syms[i + 1].s == second) {
                merged.push_back({first + second, syms[i].begin, syms[i + 1].end});
                i += 2;
            } else {
                merged.push_back(std::move(syms[i]));
                ++i;
            }
        }
        syms = std::move(merged);
    }
    for (const auto& s : syms) {
        const auto it = m_vocab.find(s.s);
        if (it == m_vocab.end())
            throw Error(ErrorCode::CorruptFile, "BPE symbol \"" + s.s + "\" is not in the vocabulary", m_source);
        out.push_back({it->second, {}, s.begin, s.end});
    }
}

std::vector<Token> BpeTokenizer::encode(std::string_view text) const
{
    std::vector<Token> out;
    for (const auto& [b, e] : preTokenize(text))
        bpe(text.substr(b, e - b), b, out);
    for (auto& t : out)
        t.text = displayText(text.substr(t.begin, t.end - t.begin));
    return out;
}

} // namespace attnscope::core
