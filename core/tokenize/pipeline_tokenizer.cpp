// PipelineTokenizer: the pipeline over text units that remember their source bytes.
#include "tokenize/pipeline_tokenizer.h"

#include "util/error.h"
#include "util/message_text.h"

#include <algorithm>

namespace attnscope::core {

namespace {

using Piece = std::vector<TextUnit>;

std::u32string codepoints(const Piece& p)
{
    std::u32string s;
    s.reserve(p.size());
    for (const auto& u : p)
        s.push_back(u.cp);
    return s;
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the others to 256, 257, ...
const char32_t* byteToUnicode()
{
    static const auto table = [] {
        static char32_t t[256];
        int next = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
            t[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
        }
        return t;
    }();
    return table;
}

// [begin, end) unit ranges of `piece` that `find` reports, turned into pieces by `behavior`.
std::vector<Piece> splitPiece(const Piece& piece, const std::vector<std::pair<int, int>>& matches, SplitBehavior behavior,
                              bool invert)
{
    const int n = static_cast<int>(piece.size());
    // Alternating segments: (range, isMatch). With invert the pattern describes the parts to keep as they are: each of
    // its matches is a segment of its own (adjacent ones stay apart) and the gaps between them are what `behavior` acts on.
    std::vector<std::pair<std::pair<int, int>, bool>> segs;
    int at = 0;
    for (const auto& m : matches) {
        if (m.first > at)
            segs.push_back({{at, m.first}, invert});
        segs.push_back({m, !invert});
        at = m.second;
    }
    if (at < n)
        segs.push_back({{at, n}, invert});
    if (behavior == SplitBehavior::Contiguous) { // adjacent matches become one
        std::vector<std::pair<std::pair<int, int>, bool>> merged;
        for (const auto& s : segs)
            if (!merged.empty() && merged.back().second && s.second)
                merged.back().first.second = s.first.second;
            else
                merged.push_back(s);
        segs = std::move(merged);
    }
    std::vector<std::pair<int, int>> ranges;
    for (std::size_t i = 0; i < segs.size(); ++i) {
        const auto [range, isMatch] = segs[i];
        if (!isMatch) {
            ranges.push_back(range);
            continue;
        }
        switch (behavior) {
        case SplitBehavior::Removed: break;
        case SplitBehavior::MergedWithPrevious:
            if (!ranges.empty() && ranges.back().second == range.first)
                ranges.back().second = range.second;
            else
                ranges.push_back(range);
            break;
        case SplitBehavior::MergedWithNext:
            if (i + 1 < segs.size() && !segs[i + 1].second) {
                segs[i + 1].first.first = range.first;
            } else {
                ranges.push_back(range);
            }
            break;
        default: ranges.push_back(range); break;
        }
    }
    std::vector<Piece> out;
    for (const auto& [b, e] : ranges)
        if (e > b)
            out.emplace_back(piece.begin() + b, piece.begin() + e);
    return out;
}

std::vector<std::pair<int, int>> literalMatches(const std::u32string& s, const std::u32string& lit)
{
    std::vector<std::pair<int, int>> out;
    if (lit.empty())
        return out;
    for (std::size_t at = s.find(lit); at != std::u32string::npos; at = s.find(lit, at + lit.size()))
        out.emplace_back(static_cast<int>(at), static_cast<int>(at + lit.size()));
    return out;
}

// CJK Unified Ideographs and their extensions and compatibility blocks, as BERT isolates them (not kana or Hangul).
bool isCjkIdeograph(char32_t c)
{
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// BERT's punctuation: ASCII's non-alphanumeric printable characters (including $ + < = > ^ ` | ~) and Unicode's P*.
bool isBertPunctuation(char32_t c)
{
    if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126))
        return true;
    return (categoryGroupMask('P') & categoryBit(generalCategory(c))) != 0;
}

// BertNormalizer, in the order of Hugging Face's: clean text (drop NUL, U+FFFD and control/format characters other
// than tab and line ends; white space becomes a space), isolate CJK ideographs, strip accents (NFD, then drop Mn),
// lower-case.
Piece bertNormalized(const Piece& in, const NormalizerStep& step)
{
    Piece out;
    out.reserve(in.size());
    for (const auto& u : in) {
        if (step.cleanText) {
            const bool control = u.cp != '\t' && u.cp != '\n' && u.cp != '\r' &&
                                 (categoryGroupMask('C') & categoryBit(generalCategory(u.cp))) != 0;
            if (u.cp == 0 || u.cp == 0xFFFD || control)
                continue;
            if (isWhiteSpace(u.cp)) {
                out.push_back({' ', u.begin, u.end});
                continue;
            }
        }
        if (step.chineseChars && isCjkIdeograph(u.cp)) {
            out.push_back({' ', u.begin, u.begin});
            out.push_back(u);
            out.push_back({' ', u.end, u.end});
            continue;
        }
        out.push_back(u);
    }
    if (step.stripAccents) {
        out = toNfd(out);
        std::erase_if(out, [](const TextUnit& u) { return generalCategory(u.cp) == GeneralCategory::Mn; });
    }
    if (step.lowercase)
        out = toLower(out);
    return out;
}

bool isWordChar(char32_t c)
{
    return c == '_' || isLetter(c) || isNumber(c);
}

} // namespace

const char* PipelineTokenizer::gpt2Pattern()
{
    return R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
}

PipelineTokenizer::PipelineTokenizer(TokenizerPipeline pipeline)
    : m_p(std::move(pipeline))
{
    for (std::size_t i = 0; i < m_p.added.size(); ++i)
        m_addedTrie.add(m_p.added[i].content, i);
}

void PipelineTokenizer::addedAt(std::string_view text, std::size_t pos, std::vector<std::size_t>& out) const
{
    m_addedTrie.matchesAt(text, pos, out);
}

int PipelineTokenizer::vocabSize() const
{
    int n = m_p.model->vocabSize();
    for (const auto& a : m_p.added)
        n = std::max(n, a.id + 1);
    return n;
}

void PipelineTokenizer::normalize(Piece& piece) const
{
    const std::size_t original = piece.size();
    for (const auto& step : m_p.normalizers) {
        switch (step.kind) {
        case NormalizerStep::Kind::Prepend: {
            if (piece.empty() || (step.atTextStart && piece.front().begin != 0))
                break; // nothing to prepend to (an empty text stays empty), or not the text's first piece
            Piece added;
            for (char32_t c : step.text)
                added.push_back({c, piece.front().begin, piece.front().begin});
            piece.insert(piece.begin(), added.begin(), added.end());
            break;
        }
        case NormalizerStep::Kind::Replace: {
            const std::u32string s = codepoints(piece);
            const auto matches = step.regex ? step.regex->findAll(s) : literalMatches(s, step.text);
            if (matches.empty())
                break;
            // Replacements that grow the text (a -> aa, chained) would double it per step: a normalised text may be
            // at most 16 times its input plus 4096 characters, far beyond any real normalizer's effect. The size is
            // known before the step builds anything (one match replaced by 60,000 characters asked for gigabytes).
            std::size_t removed = 0;
            for (const auto& [b, e] : matches)
                removed += static_cast<std::size_t>(e - b);
            const std::size_t limit = original * 16 + 4096;
            const std::size_t kept = piece.size() - removed, per = step.content.size();
            if (per > 0 && matches.size() > (limit - std::min(limit, kept)) / per)
                throw Error(ErrorCode::BadInput,
                            "the tokenizer's normalizers would grow a text of " + std::to_string(original) +
                                " characters beyond " + std::to_string(limit) + "; a Replace step expands without bound",
                            m_p.source);
            Piece out;
            out.reserve(kept + matches.size() * per);
            int at = 0;
            for (const auto& [b, e] : matches) {
                out.insert(out.end(), piece.begin() + at, piece.begin() + b);
                const std::uint32_t from = piece[static_cast<std::size_t>(b)].begin;
                const std::uint32_t to = piece[static_cast<std::size_t>(e - 1)].end;
                for (char32_t c : step.content)
                    out.push_back({c, from, to});
                at = e;
            }
            out.insert(out.end(), piece.begin() + at, piece.end());
            piece = std::move(out);
            break;
        }
        case NormalizerStep::Kind::Nfc: piece = toNfc(piece); break;
        case NormalizerStep::Kind::Lowercase: piece = toLower(piece); break;
        case NormalizerStep::Kind::Bert: piece = bertNormalized(piece, step); break;
        case NormalizerStep::Kind::Strip: {
            std::size_t b = 0, e = piece.size();
            while (step.left && b < e && isWhiteSpace(piece[b].cp))
                ++b;
            while (step.right && e > b && isWhiteSpace(piece[e - 1].cp))
                --e;
            piece = Piece(piece.begin() + static_cast<std::ptrdiff_t>(b), piece.begin() + static_cast<std::ptrdiff_t>(e));
            break;
        }
        }
    }
}

std::vector<PipelineTokenizer::Piece> PipelineTokenizer::preTokenize(Piece piece, bool first) const
{
    std::vector<Piece> pieces{std::move(piece)};
    for (const auto& step : m_p.preTokenizers) {
        std::vector<Piece> next;
        for (auto& p : pieces) {
            switch (step.kind) {
            case PreTokenizerStep::Kind::ByteLevel: {
                if (step.addPrefixSpace && !p.empty() && p.front().cp != ' ')
                    p.insert(p.begin(), TextUnit{' ', p.front().begin, p.front().begin});
                std::vector<Piece> parts = step.regex ? splitPiece(p, step.regex->findAll(codepoints(p)), SplitBehavior::Isolated, false)
                                                      : std::vector<Piece>{p};
                if (step.mapBytes) {
                    const char32_t* map = byteToUnicode();
                    for (auto& part : parts) {
                        Piece bytes;
                        for (const auto& u : part) {
                            const std::string utf8 = toUtf8(u.cp);
                            const bool exact = u.end - u.begin == utf8.size();
                            for (std::size_t i = 0; i < utf8.size(); ++i) {
                                const auto b = static_cast<unsigned char>(utf8[i]);
                                if (exact)
                                    bytes.push_back({map[b], u.begin + static_cast<std::uint32_t>(i), u.begin + static_cast<std::uint32_t>(i) + 1});
                                else
                                    bytes.push_back({map[b], u.begin, u.end});
                            }
                        }
                        part = std::move(bytes);
                    }
                }
                for (auto& part : parts)
                    next.push_back(std::move(part));
                break;
            }
            case PreTokenizerStep::Kind::Split: {
                const std::u32string s = codepoints(p);
                auto parts = splitPiece(p, step.regex ? step.regex->findAll(s) : literalMatches(s, step.literal), step.behavior,
                                        step.invert);
                for (auto& part : parts)
                    next.push_back(std::move(part));
                break;
            }
            case PreTokenizerStep::Kind::Metaspace: {
                for (auto& u : p)
                    if (u.cp == ' ')
                        u.cp = step.replacement;
                const bool prepend = step.prepend == PreTokenizerStep::Prepend::Always ||
                                     (step.prepend == PreTokenizerStep::Prepend::First && first);
                if (prepend && !p.empty() && p.front().cp != step.replacement)
                    p.insert(p.begin(), TextUnit{step.replacement, p.front().begin, p.front().begin});
                if (!step.split) {
                    next.push_back(std::move(p));
                    break;
                }
                auto parts = splitPiece(p, literalMatches(codepoints(p), std::u32string(1, step.replacement)),
                                        SplitBehavior::MergedWithNext, false);
                for (auto& part : parts)
                    next.push_back(std::move(part));
                break;
            }
            case PreTokenizerStep::Kind::Bert: {
                // Words between white space; every punctuation character a word of its own.
                Piece word;
                auto flush = [&] {
                    if (!word.empty())
                        next.push_back(std::move(word));
                    word.clear();
                };
                for (const auto& u : p) {
                    if (isWhiteSpace(u.cp)) {
                        flush();
                    } else if (isBertPunctuation(u.cp)) {
                        flush();
                        next.push_back(Piece{u});
                    } else {
                        word.push_back(u);
                    }
                }
                flush();
                break;
            }
            case PreTokenizerStep::Kind::Digits:
            case PreTokenizerStep::Kind::Punctuation:
            case PreTokenizerStep::Kind::WhitespaceSplit:
            case PreTokenizerStep::Kind::Whitespace: {
                // Runs of the class (or single characters) as matches.
                std::vector<std::pair<int, int>> matches;
                auto inClass = [&](char32_t c) {
                    switch (step.kind) {
                    case PreTokenizerStep::Kind::Digits: return generalCategory(c) == GeneralCategory::Nd;
                    case PreTokenizerStep::Kind::Punctuation:
                        return (categoryGroupMask('P') & categoryBit(generalCategory(c))) != 0 ||
                               (c < 0x80 && std::ispunct(static_cast<int>(c)));
                    default: return isWhiteSpace(c);
                    }
                };
                const bool single = (step.kind == PreTokenizerStep::Kind::Digits && step.individualDigits) ||
                                    step.kind == PreTokenizerStep::Kind::Punctuation;
                for (int i = 0, n = static_cast<int>(p.size()); i < n;) {
                    if (!inClass(p[static_cast<std::size_t>(i)].cp)) {
                        ++i;
                        continue;
                    }
                    int j = i + 1;
                    while (!single && j < n && inClass(p[static_cast<std::size_t>(j)].cp))
                        ++j;
                    matches.emplace_back(i, j);
                    i = j;
                }
                SplitBehavior b = step.behavior;
                if (step.kind == PreTokenizerStep::Kind::WhitespaceSplit || step.kind == PreTokenizerStep::Kind::Whitespace)
                    b = SplitBehavior::Removed;
                auto parts = splitPiece(p, matches, b, false);
                if (step.kind == PreTokenizerStep::Kind::Whitespace) { // also split words from punctuation (\w+|[^\w\s]+)
                    std::vector<Piece> finer;
                    for (auto& part : parts) {
                        std::vector<std::pair<int, int>> words;
                        for (int i = 0, n = static_cast<int>(part.size()); i < n;) {
                            const bool w = isWordChar(part[static_cast<std::size_t>(i)].cp);
                            int j = i + 1;
                            while (j < n && isWordChar(part[static_cast<std::size_t>(j)].cp) == w)
                                ++j;
                            words.emplace_back(i, j);
                            i = j;
                        }
                        for (auto& f : splitPiece(part, words, SplitBehavior::Isolated, false))
                            finer.push_back(std::move(f));
                    }
                    parts = std::move(finer);
                }
                for (auto& part : parts)
                    next.push_back(std::move(part));
                break;
            }
            }
        }
        pieces = std::move(next);
    }
    return pieces;
}

void PipelineTokenizer::encodePiece(Piece piece, bool first, std::vector<Token>& out) const
{
    normalize(piece);
    for (const auto& part : preTokenize(std::move(piece), first)) {
        std::vector<SubwordModel::Unit> units;
        units.reserve(part.size());
        for (const auto& u : part)
            units.push_back({toUtf8(u.cp), u.begin, u.end});
        m_p.model->encode(units, out);
    }
}

std::string PipelineTokenizer::display(const Token& t, std::string_view text) const
{
    const std::string& piece = t.id < m_p.model->vocabSize() ? m_p.model->piece(t.id) : std::string();
    const bool byteToken = piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece.back() == '>';
    if (t.end <= t.begin || (byteToken && t.end - t.begin != 1))
        return piece.empty() ? "<" + std::to_string(t.id) + ">" : piece;
    // The token's own characters from the text; bytes that are not whole characters shown as <0xNN>.
    return bytesSpelled(text.substr(t.begin, t.end - t.begin));
}

std::vector<Token> PipelineTokenizer::encodeText(std::string_view text) const
{
    std::vector<Token> out;
    const auto n = text.size();
    // Added tokens first: the text between them is tokenized piece by piece.
    auto pieceOf = [&](std::size_t b, std::size_t e) {
        Piece p;
        for (std::size_t i = b; i < e;) {
            std::size_t len;
            const char32_t cp = decodeUtf8(text, i, len);
            p.push_back({cp, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(i + len)});
            i += len;
        }
        return p;
    };
    auto isSpaceByte = [&](std::size_t i) { return text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r'; };
    std::size_t textStart = 0;
    std::vector<std::size_t> candidates;
    for (std::size_t pos = 0; pos < n;) {
        const AddedToken* hit = nullptr;
        addedAt(text, pos, candidates);
        for (std::size_t k : candidates) {
            const auto& a = m_p.added[k];
            if (a.singleWord) {
                std::size_t len;
                const bool before = pos > 0 && isWordChar(decodeUtf8(text, pos - 1, len));
                const bool after = pos + a.content.size() < n && isWordChar(decodeUtf8(text, pos + a.content.size(), len));
                if (before || after)
                    continue;
            }
            hit = &a;
            break;
        }
        if (!hit) {
            ++pos;
            continue;
        }
        std::size_t begin = pos, end = pos + hit->content.size();
        if (hit->lstrip)
            while (begin > textStart && isSpaceByte(begin - 1))
                --begin;
        if (hit->rstrip)
            while (end < n && isSpaceByte(end))
                ++end;
        if (begin > textStart)
            encodePiece(pieceOf(textStart, begin), textStart == 0, out);
        out.push_back({hit->id, {}, begin, end});
        pos = textStart = end;
    }
    if (textStart < n)
        encodePiece(pieceOf(textStart, n), textStart == 0, out);
    for (auto& t : out)
        t.text = display(t, text);
    return out;
}

Token PipelineTokenizer::specialToken(int id, std::uint32_t at) const
{
    Token t{id, {}, at, at};
    for (const auto& a : m_p.added)
        if (a.id == id)
            t.text = a.content;
    if (t.text.empty() && id >= 0 && id < m_p.model->vocabSize())
        t.text = m_p.model->piece(id);
    return t;
}

std::vector<Token> PipelineTokenizer::specialPrefix() const
{
    std::vector<Token> out;
    for (int id : m_p.prefixIds)
        out.push_back(specialToken(id, 0));
    return out;
}

std::string PipelineTokenizer::pieceOf(std::int32_t id) const
{
    return bytesSpelled(pieceBytes(id)); // a byte-level piece may be part of a character
}

std::string PipelineTokenizer::pieceBytes(std::int32_t id) const
{
    if (id < 0)
        return Tokenizer::pieceOf(id);
    const Token t = specialToken(id, 0);
    if (t.text.empty())
        return Tokenizer::pieceOf(id);
    const bool byteLevel = std::any_of(m_p.preTokenizers.begin(), m_p.preTokenizers.end(), [](const PreTokenizerStep& s) {
        return s.kind == PreTokenizerStep::Kind::ByteLevel && s.mapBytes;
    });
    if (!byteLevel || std::any_of(m_p.added.begin(), m_p.added.end(), [&](const AddedToken& a) { return a.id == id; }))
        return t.text;
    // A byte-level piece spells bytes as GPT-2's printable characters ("Ġthe"): map them back (" the").
    const char32_t* map = byteToUnicode();
    std::string bytes;
    for (std::size_t i = 0; i < t.text.size();) {
        std::size_t len;
        const char32_t c = decodeUtf8(t.text, i, len);
        const auto* at = std::find(map, map + 256, c);
        bytes += at != map + 256 ? static_cast<char>(at - map) : '?';
        i += len;
    }
    return bytes;
}

std::string PipelineTokenizer::textOf(std::int32_t id) const
{
    std::string piece = pieceBytes(id); // byte-level pieces come back as their bytes
    if (m_p.kind == "WordPiece")
        return piece.rfind("##", 0) == 0 ? piece.substr(2) : " " + piece;
    if (piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece.back() == '>') // SentencePiece byte fallback
        return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
    static const std::string bar = "\u2581"; // SentencePiece's space
    for (std::size_t at = piece.find(bar); at != std::string::npos; at = piece.find(bar, at + 1))
        piece.replace(at, bar.size(), " ");
    return piece;
}

std::vector<TemplateItem> PipelineTokenizer::pairTemplate() const
{
    if (m_p.pair.empty())
        return Tokenizer::pairTemplate();
    std::vector<TemplateItem> out;
    for (const auto& item : m_p.pair) {
        TemplateItem t{item.kind, {}, item.typeId};
        for (int id : item.ids)
            t.special.push_back(specialToken(id, 0));
        out.push_back(std::move(t));
    }
    return out;
}

std::vector<Token> PipelineTokenizer::specialSuffix() const
{
    std::vector<Token> out;
    for (int id : m_p.suffixIds)
        out.push_back(specialToken(id, 0)); // the caller moves them to the end of the text
    return out;
}

} // namespace attnscope::core
