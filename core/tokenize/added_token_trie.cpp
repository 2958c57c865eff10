// AddedTokenTrie: children kept sorted by byte and found by binary search.
#include "tokenize/added_token_trie.h"

#include <algorithm>

namespace attnscope::core {

namespace {
auto byByte = [](const std::pair<unsigned char, int>& a, const std::pair<unsigned char, int>& b) { return a.first < b.first; };
}

AddedTokenTrie::AddedTokenTrie()
    : m_nodes(1)
{
}

void AddedTokenTrie::add(std::string_view content, std::size_t index)
{
    if (content.empty())
        return;
    int node = 0;
    for (const char ch : content) {
        const auto byte = static_cast<unsigned char>(ch);
        auto& next = m_nodes[static_cast<std::size_t>(node)].next;
        const auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(byte, 0), byByte);
        if (it != next.end() && it->first == byte) {
            node = it->second;
        } else {
            const int child = static_cast<int>(m_nodes.size());
            next.insert(it, {byte, child});
            m_nodes.emplace_back();
            node = child;
        }
    }
    m_nodes[static_cast<std::size_t>(node)].tokens.push_back(index);
}

void AddedTokenTrie::matchesAt(std::string_view text, std::size_t pos, std::vector<std::size_t>& out) const
{
    out.clear();
    int node = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
        const auto& next = m_nodes[static_cast<std::size_t>(node)].next;
        const auto byte = static_cast<unsigned char>(text[i]);
        const auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(byte, 0), byByte);
        if (it == next.end() || it->first != byte)
            break;
        node = it->second;
        const auto& ending = m_nodes[static_cast<std::size_t>(node)].tokens;
        out.insert(out.begin(), ending.begin(), ending.end()); // longer matches go first
    }
}

} // namespace attnscope::core
