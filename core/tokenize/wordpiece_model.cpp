// WordPiece: greedy longest match from the left over the word's characters.
#include "tokenize/wordpiece_model.h"

#include "util/error.h"

#include <algorithm>

namespace attnscope::core {

WordPieceModel::WordPieceModel(std::vector<std::string> pieces, const std::string& unk, std::string continuationPrefix,
                               int maxCharsPerWord, std::string source)
    : m_pieces(std::move(pieces))
    , m_prefix(std::move(continuationPrefix))
    , m_maxChars(maxCharsPerWord)
{
    for (std::size_t i = 0; i < m_pieces.size(); ++i)
        if (!m_pieces[i].empty()) {
            m_ids.emplace(m_pieces[i], static_cast<int>(i)); // the first id of a piece listed twice wins
            m_longest = std::max(m_longest, m_pieces[i].size());
        }
    const auto it = m_ids.find(unk);
    if (it == m_ids.end())
        throw Error(ErrorCode::BadJson, "the unknown token \"" + unk + "\" is not in the vocabulary", source);
    m_unk = it->second;
}

std::optional<int> WordPieceModel::id(const std::string& piece) const
{
    const auto it = m_ids.find(piece);
    return it == m_ids.end() ? std::nullopt : std::optional<int>(it->second);
}

void WordPieceModel::encode(const std::vector<Unit>& units, std::vector<Token>& out) const
{
    if (units.empty())
        return;
    const auto n = units.size();
    if (static_cast<int>(n) > m_maxChars) {
        out.push_back({m_unk, {}, units.front().begin, units.back().end});
        return;
    }
    const std::size_t first = out.size();
    std::string candidate;
    for (std::size_t start = 0; start < n;) {
        // The longest piece starting here: try the whole rest, then one character less each time.
        std::optional<int> found;
        // No piece is longer than the vocabulary's longest: longer candidates are never built (a word of many
        // characters costs its length times the longest piece, not its length squared).
        std::size_t end = start, bytes = start > 0 ? m_prefix.size() : 0;
        while (end < n && bytes + units[end].text.size() <= m_longest)
            bytes += units[end++].text.size();
        for (; end > start; --end) {
            candidate = start > 0 ? m_prefix : std::string();
            for (std::size_t i = start; i < end; ++i)
                candidate += units[i].text;
            if ((found = id(candidate)))
                break;
        }
        if (!found) { // some position has no piece: the whole word is unknown
            out.resize(first);
            out.push_back({m_unk, {}, units.front().begin, units.back().end});
            return;
        }
        out.push_back({*found, {}, units[start].begin, units[end - 1].end});
        start = end;
    }
}

} // namespace attnscope::core
