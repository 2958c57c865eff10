// BpeModel: symbols in a doubly linked list; a min-heap of candidate pairs (priority, left position) validated
// against per-symbol versions when popped.
#include "tokenize/bpe_model.h"

#include "util/error.h"

#include <cstdio>
#include <queue>

namespace attnscope::core {

void BpeModel::index()
{
    m_ids.reserve(m_pieces.size());
    for (std::size_t i = 0; i < m_pieces.size(); ++i)
        if (!m_pieces[i].empty())
            m_ids.emplace(m_pieces[i], static_cast<int>(i)); // the first id of a duplicated piece wins
    for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        const auto it = m_ids.find(name);
        m_byteIds[b] = it == m_ids.end() ? -1 : it->second;
    }
}

BpeModel BpeModel::fromMerges(std::vector<std::string> pieces, const std::vector<std::pair<std::string, std::string>>& merges,
                              Options options, std::string source)
{
    BpeModel m;
    m.m_pieces = std::move(pieces);
    m.m_options = options;
    m.m_source = std::move(source);
    m.index();
    m.m_merges.reserve(merges.size());
    for (std::size_t r = 0; r < merges.size(); ++r) {
        const auto a = m.m_ids.find(merges[r].first), b = m.m_ids.find(merges[r].second);
        const auto ab = m.m_ids.find(merges[r].first + merges[r].second);
        if (a == m.m_ids.end() || b == m.m_ids.end() || ab == m.m_ids.end())
            continue; // a merge whose parts or result are not pieces can never apply
        m.m_merges.emplace(key(a->second, b->second), Merge{static_cast<float>(r), ab->second}); // first rank wins
    }
    return m;
}

BpeModel BpeModel::fromScores(std::vector<std::string> pieces, const std::vector<float>& scores,
                              const std::vector<bool>& mergeable, Options options, std::string source)
{
    BpeModel m;
    m.m_pieces = std::move(pieces);
    m.m_options = options;
    m.m_source = std::move(source);
    m.index();
    // Every split of a mergeable piece into two pieces is a pair that merges into it. Both halves are pieces, so no
    // half is longer than the longest other piece: only cuts within that reach are tried (a 256 kB piece among short
    // ones was cut 256,000 times, each cut copying both halves).
    std::size_t longest = 0, second = 0;
    for (const auto& p : m.m_pieces)
        if (p.size() >= longest) {
            second = longest;
            longest = p.size();
        } else if (p.size() > second) {
            second = p.size();
        }
    for (std::size_t id = 0; id < m.m_pieces.size(); ++id) {
        if (!mergeable[id])
            continue;
        const std::string_view p = m.m_pieces[id];
        const std::size_t reach = p.size() == longest ? second : longest; // the longest piece other than this one
        if (p.size() > 2 * reach)
            continue;
        const std::size_t first = p.size() > reach ? p.size() - reach : 1, last = std::min(p.size() - 1, reach);
        for (std::size_t cut = std::max<std::size_t>(first, 1); cut <= last && cut < p.size(); ++cut) {
            if ((static_cast<unsigned char>(p[cut]) & 0xC0) == 0x80)
                continue; // inside a UTF-8 character
            const auto a = m.m_ids.find(p.substr(0, cut)), b = m.m_ids.find(p.substr(cut));
            if (a == m.m_ids.end() || b == m.m_ids.end())
                continue;
            const Merge merge{-scores[id], static_cast<int>(id)};
            auto [it, inserted] = m.m_merges.emplace(key(a->second, b->second), merge);
            if (!inserted && merge.priority < it->second.priority)
                it->second = merge;
        }
    }
    return m;
}

std::optional<int> BpeModel::id(const std::string& piece) const
{
    const auto it = m_ids.find(piece);
    return it == m_ids.end() ? std::nullopt : std::optional<int>(it->second);
}

void BpeModel::encode(const std::vector<Unit>& units, std::vector<Token>& out) const
{
    if (units.empty())
        return;
    if (m_options.ignoreMerges) {
        std::string whole;
        for (const auto& u : units)
            whole += u.text;
        if (const auto it = m_ids.find(whole); it != m_ids.end()) {
            out.push_back({it->second, {}, units.front().begin, units.back().end});
            return;
        }
    }
    struct Sym {
        int id;
        int prev, next;
        std::uint32_t begin, end;
        int version = 0;
        bool alive = true;
        bool mergeable = true; // byte-fallback and unknown symbols never merge
    };
    std::vector<Sym> syms;
    syms.reserve(units.size());
    for (const auto& u : units) {
        if (const auto it = m_ids.find(u.text); it != m_ids.end()) {
            syms.push_back({it->second, 0, 0, u.begin, u.end});
            continue;
        }
        if (m_options.byteFallback) {
            bool all = true;
            for (unsigned char b : u.text)
                all = all && m_byteIds[b] >= 0;
            if (all) {
                for (unsigned char b : u.text)
                    syms.push_back({m_byteIds[b], 0, 0, u.begin, u.end, 0, true, false});
                continue;
            }
        }
        if (!m_options.unkId)
            throw Error(ErrorCode::CorruptFile, "the character \"" + u.text + "\" is not in the vocabulary and there is no unknown token",
                        m_source);
        if (m_options.fuseUnk && !syms.empty() && !syms.back().mergeable && syms.back().id == *m_options.unkId) {
            syms.back().end = u.end;
            continue;
        }
        syms.push_back({*m_options.unkId, 0, 0, u.begin, u.end, 0, true, false});
    }
    const int n = static_cast<int>(syms.size());
    for (int i = 0; i < n; ++i) {
        syms[static_cast<std::size_t>(i)].prev = i - 1;
        syms[static_cast<std::size_t>(i)].next = i + 1 < n ? i + 1 : -1;
    }

    struct Candidate {
        float priority;
        int left, right, leftVersion, rightVersion;
        bool operator>(const Candidate& o) const
        {
            return priority != o.priority ? priority > o.priority : left > o.left;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
    auto consider = [&](int l, int r) {
        if (l < 0 || r < 0)
            return;
        const Sym& a = syms[static_cast<std::size_t>(l)];
        const Sym& b = syms[static_cast<std::size_t>(r)];
        if (!a.mergeable || !b.mergeable)
            return;
        const auto it = m_merges.find(key(a.id, b.id));
        if (it != m_merges.end())
            heap.push({it->second.priority, l, r, a.version, b.version});
    };
    for (int i = 0; i + 1 < n; ++i)
        consider(i, i + 1);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        Sym& a = syms[static_cast<std::size_t>(c.left)];
        Sym& b = syms[static_cast<std::size_t>(c.right)];
        if (!a.alive || !b.alive || a.version != c.leftVersion || b.version != c.rightVersion || a.next != c.right)
            continue; // stale: one side has merged since
        a.id = m_merges.at(key(a.id, b.id)).result;
        a.end = b.end;
        ++a.version;
        b.alive = false;
        a.next = b.next;
        if (b.next >= 0)
            syms[static_cast<std::size_t>(b.next)].prev = c.left;
        consider(a.prev, c.left);
        consider(c.left, a.next);
    }
    for (int i = 0; i >= 0 && i < n; i = syms[static_cast<std::size_t>(i)].next)
        out.push_back({syms[static_cast<std::size_t>(i)].id, {}, syms[static_cast<std::size_t>(i)].begin,
                       syms[static_cast<std::size_t>(i)].end});
}

} // namespace attnscope::core
