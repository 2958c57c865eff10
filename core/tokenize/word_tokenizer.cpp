// WordTokenizer implementation.
#include "tokenize/word_tokenizer.h"

#include "io/pytorch_file.h"
#include "tokenize/unicode_class.h"
#include "tokenize/wikitext_words.h"
#include "util/error.h"
#include "util/message_text.h"
#include "util/text_file.h"

#include <filesystem>
#include <sstream>

namespace attnscope::core {

std::unique_ptr<WordTokenizer> WordTokenizer::fromFile(const std::string& vocabTxt)
{
    std::istringstream in(readTextFile(vocabTxt));
    std::vector<std::string> words;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        words.push_back(line);
    }
    if (words.empty())
        throw Error(ErrorCode::CorruptFile, "vocabulary is empty", vocabTxt);
    return std::make_unique<WordTokenizer>(std::move(words), vocabTxt);
}

std::unique_ptr<WordTokenizer> WordTokenizer::fromVocabPkl(const std::string& vocabPkl)
{
    using Kind = PickleNode::Kind;
    const PytorchFile file(vocabPkl);
    const PickleNode& root = file.root();
    auto refuse = [&](const std::string& why) { throw Error(ErrorCode::CorruptFile, why, vocabPkl); };
    if (root.kind != Kind::Dict)
        refuse("not a Transformer-XL vocabulary (expected a dict with idx2sym; the file holds " + root.describe() + ")");
    const PickleNode* idx2sym = root.get("idx2sym");
    if (!idx2sym || idx2sym->kind != Kind::List || idx2sym->items.empty())
        refuse("not a Transformer-XL vocabulary: no idx2sym list of words");
    // A pickle may name one memoised string many times: the words' total size is checked before any is copied (one
    // 128 kB word listed 65,536 times asked for 8.6 GB from 262 kB). A real vocabulary stores each word once, so its
    // words take about the file's size.
    std::uint64_t total = 0;
    for (const auto* w : idx2sym->items)
        total += w->isStr() ? w->text.size() + 1 : 0;
    const std::uint64_t limit = 4 * static_cast<std::uint64_t>(std::filesystem::file_size(vocabPkl)) + (1u << 20);
    if (total > limit)
        refuse("its words would take " + std::to_string(total) + " bytes, more than " + std::to_string(limit) +
               " for a file of this size: one word is listed over and over");
    std::vector<std::string> words;
    words.reserve(idx2sym->items.size());
    for (const auto* w : idx2sym->items) {
        if (!w->isStr())
            refuse("idx2sym holds " + w->describe() + " at position " + std::to_string(words.size()));
        words.push_back(w->text);
    }
    // sym2idx must agree with idx2sym where it is present: the model's ids are sym2idx's.
    if (const PickleNode* sym2idx = root.get("sym2idx"); sym2idx && sym2idx->kind == Kind::Dict)
        for (std::size_t i = 0; i + 1 < sym2idx->items.size(); i += 2) {
            const auto* k = sym2idx->items[i];
            const auto* v = sym2idx->items[i + 1];
            if (!k->isStr() || v->kind != Kind::Int || v->integer < 0 ||
                v->integer >= static_cast<std::int64_t>(words.size()) || words[static_cast<std::size_t>(v->integer)] != k->text)
                refuse("sym2idx disagrees with idx2sym at \"" + (k->isStr() ? excerpt(k->text, 40) : std::string("?")) + "\"");
        }
    bool lower = false;
    if (const PickleNode* l = root.get("lower_case"); l && l->kind == Kind::Bool)
        lower = l->integer != 0;
    Split split = Split::WikiText;
    if (const PickleNode* d = root.get("delimiter"); d && d->kind != Kind::None) {
        if (!d->isStr() || d->text.empty())
            throw Error(ErrorCode::UnsupportedTokenizer,
                        "a character-level vocabulary (delimiter \"\"): attnscope reads word-level ones", vocabPkl);
        split = Split::WhiteSpace; // an explicit delimiter: the text is split there, nothing else
    }
    auto tok = std::make_unique<WordTokenizer>(std::move(words), vocabPkl, split, lower);
    if (const PickleNode* unk = root.get("unk_idx"); unk && unk->kind == Kind::Int && unk->integer >= 0 &&
                                                      unk->integer < tok->vocabSize())
        tok->m_unk = static_cast<std::int32_t>(unk->integer);
    return tok;
}

WordTokenizer::WordTokenizer(std::vector<std::string> words, std::string source, Split split, bool lowerCase)
    : m_words(std::move(words))
    , m_source(std::move(source))
    , m_split(split)
    , m_lowerCase(lowerCase)
{
    for (std::size_t i = 0; i < m_words.size(); ++i)
        m_ids.emplace(m_words[i], static_cast<std::int32_t>(i)); // first occurrence wins
    for (const char* unk : {"<unk>", "<UNK>"})
        if (const auto it = m_ids.find(unk); m_unk < 0 && it != m_ids.end())
            m_unk = it->second;
    if (const auto it = m_ids.find("<eos>"); it != m_ids.end())
        m_eos = it->second;
}

std::vector<Token> WordTokenizer::encodeText(std::string_view text) const
{
    std::vector<Token> out;
    auto emit = [&](std::string word, std::size_t begin, std::size_t end) {
        if (m_lowerCase) {
            std::vector<TextUnit> units;
            for (std::size_t i = 0; i < word.size();) {
                std::size_t len = 0;
                units.push_back({decodeUtf8(word, i, len), 0, 0});
                i += len;
            }
            word.clear();
            for (const auto& u : toLower(units))
                appendUtf8(word, u.cp);
        }
        const auto it = m_ids.find(word);
        if (it != m_ids.end()) {
            out.push_back({it->second, word, begin, end});
            return;
        }
        if (m_unk < 0)
            throw Error(ErrorCode::BadInput, "word \"" + excerpt(word, 80) + "\" is not in the vocabulary, which has no <unk> token",
                        m_source);
        out.push_back({m_unk, word, begin, end}); // display the real word; its id is <unk>
    };
    auto isSpace = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; };
    std::size_t lineStart = 0;
    while (lineStart <= text.size()) {
        const std::size_t nl = text.find('\n', lineStart);
        const std::size_t lineEnd = nl == std::string_view::npos ? text.size() : nl;
        const std::string_view line = text.substr(lineStart, lineEnd - lineStart);
        if (m_split == Split::WikiText) {
            for (auto& w : wikiTextWords(line, lineStart))
                emit(std::move(w.text), w.begin, w.end);
        } else {
            for (std::size_t i = 0; i < line.size();) {
                if (isSpace(line[i])) {
                    ++i;
                    continue;
                }
                std::size_t e = i;
                while (e < line.size() && !isSpace(line[e]))
                    ++e;
                emit(std::string(line.substr(i, e - i)), lineStart + i, lineStart + e);
                i = e;
            }
        }
        if (nl == std::string_view::npos)
            break;
        if (m_eos < 0)
            throw Error(ErrorCode::CorruptFile, "the vocabulary has no <eos> token for line ends", m_source);
        out.push_back({m_eos, "<eos>", nl, nl + 1});
        lineStart = nl + 1;
    }
    return out;
}

} // namespace attnscope::core
