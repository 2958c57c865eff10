// Regrouping a grid's rows and columns: dropping special tokens, merging subword pieces into words.
#include "analysis/grid_regroup.h"

#include "analysis/head_atlas.h"
#include "tokenize/unicode_class.h"

#include <cmath>
#include <limits>

namespace attnscope::core {

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

bool startsWithSpace(const std::string& text)
{
    if (text.empty())
        return false;
    std::size_t len;
    const char32_t c = decodeUtf8(text, 0, len);
    return isWhiteSpace(c) || c == U'\u0120' || c == U'\u2581'; // Ġ, ▁: byte-level and SentencePiece spaces
}

// Rows (or columns) kept, as a list of groups of old indices.
AttentionGrid regroup(const AttentionGrid& g, const std::vector<std::vector<int>>& rowGroups,
                      const std::vector<std::vector<int>>& colGroups, bool sumKeys)
{
    AttentionGrid out;
    out.rows = static_cast<int>(rowGroups.size());
    out.cols = static_cast<int>(colGroups.size());
    out.values.assign(static_cast<std::size_t>(out.rows) * out.cols, kNaN);
    for (int r = 0; r < out.rows; ++r) {
        const auto& rg = rowGroups[static_cast<std::size_t>(r)];
        out.rowTokens.push_back(g.rowTokens[static_cast<std::size_t>(rg.front())]);
        for (int c = 0; c < out.cols; ++c) {
            const auto& cg = colGroups[static_cast<std::size_t>(c)];
            double total = 0;
            int seen = 0;
            for (int i : rg) {
                double cell = 0;
                int visible = 0;
                for (int j : cg) {
                    const float v = g.at(i, j);
                    if (!std::isnan(v)) {
                        cell += v;
                        ++visible;
                    }
                }
                if (visible == 0)
                    continue;
                total += sumKeys ? cell : cell / visible;
                ++seen;
            }
            if (seen > 0)
                out.values[static_cast<std::size_t>(r) * out.cols + c] = static_cast<float>(total / seen);
        }
    }
    for (const auto& cg : colGroups)
        out.colTokens.push_back(g.colTokens[static_cast<std::size_t>(cg.front())]);
    // Memory columns stay in front: a group is memory when its first piece is.
    for (const auto& cg : colGroups)
        out.memoryCols += cg.front() < g.memoryCols ? 1 : 0;
    return out;
}

// The grid's rows (or columns) grouped into runs of the same unit (word, sentence): unitOf is per token, tokenOf
// gives each row's token.
std::vector<std::vector<int>> runsOf(const std::vector<int>& unitOf, const std::vector<int>& tokenOf)
{
    std::vector<std::vector<int>> out;
    int last = -1;
    for (int i = 0; i < static_cast<int>(tokenOf.size()); ++i) {
        const int unit = unitOf[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(i)])];
        if (out.empty() || unit != last)
            out.emplace_back();
        out.back().push_back(i);
        last = unit;
    }
    return out;
}

} // namespace

bool isSpecialToken(const Token& token)
{
    return token.begin == token.end;
}

std::vector<int> wordOfTokens(const std::vector<Token>& tokens)
{
    std::vector<int> word(tokens.size(), 0);
    int w = -1;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const auto& tok = tokens[t];
        bool fresh = t == 0;
        if (!fresh) {
            const auto& prev = tokens[t - 1];
            fresh = isSpecialToken(tok) || isSpecialToken(prev) || tok.begin > prev.end || startsWithSpace(tok.text) ||
                    isPunctuationToken(tok.text) || isPunctuationToken(prev.text);
        }
        w += fresh ? 1 : 0;
        word[t] = w;
    }
    return word;
}

AttentionGrid withoutSpecialTokens(const AttentionGrid& g, const GridAxis& rowAxis, const GridAxis& colAxis,
                                   bool renormalise, double topFraction)
{
    std::vector<std::vector<int>> rows, cols;
    for (int r = 0; r < g.rows; ++r)
        if (!isSpecialToken(rowAxis.tokens[static_cast<std::size_t>(g.rowTokens[static_cast<std::size_t>(r)])]))
            rows.push_back({r});
    for (int c = 0; c < g.cols; ++c)
        if (!isSpecialToken(colAxis.tokens[static_cast<std::size_t>(g.colTokens[static_cast<std::size_t>(c)])]))
            cols.push_back({c});
    if (rows.empty() || cols.empty())
        return g; // nothing but special tokens: nothing to show without them
    AttentionGrid out = regroup(g, rows, cols, true);
    if (!g.rowLabels.empty())
        for (const auto& r : rows)
            out.rowLabels.push_back(g.rowLabels[static_cast<std::size_t>(r.front())]);
    if (!g.colLabels.empty())
        for (const auto& c : cols)
            out.colLabels.push_back(g.colLabels[static_cast<std::size_t>(c.front())]);
    if (renormalise)
        for (int r = 0; r < out.rows; ++r) {
            double sum = 0;
            for (int c = 0; c < out.cols; ++c)
                if (!std::isnan(out.at(r, c)))
                    sum += out.at(r, c);
            if (sum > 0)
                for (int c = 0; c < out.cols; ++c)
                    out.values[static_cast<std::size_t>(r) * out.cols + c] =
                        static_cast<float>(out.at(r, c) / sum);
        }
    out.highlight = topFractionMask(out.values, out.rows, out.cols, topFraction, renormalise);
    return out;
}

AttentionGrid wordLevelGrid(const AttentionGrid& g, const GridAxis& rowAxis, const GridAxis& colAxis, bool sumKeys,
                            double topFraction)
{
    const auto rowWord = wordOfTokens(rowAxis.tokens);
    const auto colWord = &rowAxis.tokens == &colAxis.tokens ? rowWord : wordOfTokens(colAxis.tokens);
    const auto rows = runsOf(rowWord, g.rowTokens), cols = runsOf(colWord, g.colTokens);
    AttentionGrid out = regroup(g, rows, cols, sumKeys);
    // A word's text from the stream's text (its pieces' spans); a piece without one (generated, special) by its text.
    auto label = [&](const GridAxis& axis, const std::vector<int>& group, const std::vector<int>& tokenOf) {
        std::string s;
        for (int member : group) {
            const auto& t = axis.tokens[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(member)])];
            if (group.size() > 1 && isSpecialToken(t))
                continue;
            s += t.text;
        }
        const auto& first = axis.tokens[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(group.front())])];
        const auto& last = axis.tokens[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(group.back())])];
        if (group.size() == 1 || isSpecialToken(first) || last.end > axis.text.size() || last.end <= first.begin)
            return group.size() == 1 ? first.text : s;
        s = std::string(axis.text.substr(first.begin, last.end - first.begin));
        while (!s.empty() && (s.front() == ' ' || s.front() == '\n' || s.front() == '\t'))
            s.erase(s.begin());
        return s;
    };
    for (const auto& r : rows)
        out.rowLabels.push_back(label(rowAxis, r, g.rowTokens));
    for (const auto& c : cols)
        out.colLabels.push_back(label(colAxis, c, g.colTokens));
    out.highlight = topFractionMask(out.values, out.rows, out.cols, topFraction, sumKeys);
    return out;
}

std::vector<int> sentenceOfTokens(const std::vector<Token>& tokens)
{
    std::vector<int> sentence(tokens.size(), 0);
    int current = 0;
    bool ended = false; // the sentence ended at the previous token (a closing mark may still follow)
    auto ends = [](const std::string& t) {
        std::string s = t;
        while (!s.empty() && (s.back() == ' ' || s.back() == '"' || s.back() == '\'' || s.back() == ')' || s.back() == ']'))
            s.pop_back();
        return s.find('\n') != std::string::npos || (!s.empty() && (s.back() == '.' || s.back() == '!' || s.back() == '?')) ||
               (s.size() >= 3 && s.compare(s.size() - 3, 3, "\xE2\x80\xA6") == 0);
    };
    auto closing = [](const std::string& t) {
        return !t.empty() && t.find_first_not_of("\"')] ") == std::string::npos;
    };
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const auto& tok = tokens[t];
        if (ended && !closing(tok.text) && !(isSpecialToken(tok) && t + 1 == tokens.size())) {
            ++current;
            ended = false;
        }
        sentence[t] = current;
        if (!isSpecialToken(tok) && ends(tok.text))
            ended = true;
    }
    return sentence;
}

AttentionGrid sentenceLevelGrid(const AttentionGrid& g, const std::vector<Token>& tokens, std::string_view text,
                                double topFraction)
{
    const auto sentence = sentenceOfTokens(tokens);
    const auto rows = runsOf(sentence, g.rowTokens), cols = runsOf(sentence, g.colTokens);
    AttentionGrid out = regroup(g, rows, cols, true);
    auto label = [&](const std::vector<int>& group, const std::vector<int>& tokenOf) {
        const int s = sentence[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(group.front())])];
        std::string words;
        for (int i : group) {
            const auto& tok = tokens[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(i)])];
            if (isSpecialToken(tok) || tok.end > text.size())
                continue;
            words = std::string(text.substr(tokens[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(i)])].begin,
                                            tokens[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(group.back())])].end -
                                                tokens[static_cast<std::size_t>(tokenOf[static_cast<std::size_t>(i)])].begin));
            break;
        }
        while (!words.empty() && (words.front() == ' ' || words.front() == '\n'))
            words.erase(words.begin());
        for (char& c : words)
            if (c == '\n')
                c = ' ';
        if (words.size() > 24) {
            std::size_t cut = 24;
            while (cut > 0 && (static_cast<unsigned char>(words[cut]) & 0xC0) == 0x80)
                --cut; // not inside a UTF-8 character
            words = words.substr(0, cut) + "\xE2\x80\xA6";
        }
        return "S" + std::to_string(s + 1) + (words.empty() ? "" : ": " + words);
    };
    for (const auto& r : rows)
        out.rowLabels.push_back(label(r, g.rowTokens));
    for (const auto& c : cols)
        out.colLabels.push_back(label(c, g.colTokens));
    out.highlight = topFractionMask(out.values, out.rows, out.cols, topFraction, true);
    return out;
}

} // namespace attnscope::core
