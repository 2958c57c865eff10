// SentencePiece model checks (see spm_checks.h). The charsmap layout is SentencePiece's public one: a little-endian
// uint32 trie size, the trie as darts-clone's double array of 32-bit units, then the replacement strings, each ended
// by a NUL. A unit packs a label (its low byte, bit 31 marking a value unit), a has-leaf flag (bit 8) and the XOR
// offset to its children (bits 10-31, shifted by 8 more when bit 9 is set); a value unit keeps its value in bits 0-30.
#include "tokenize/spm_checks.h"

#include "tokenize/proto_reader.h"
#include "util/error.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace attnscope::core {

namespace {
std::uint32_t unitAt(std::string_view trie, std::size_t index)
{
    std::uint32_t u;
    std::memcpy(&u, trie.data() + index * 4, 4);
    return u; // little-endian, as the file is (this reader runs on little-endian machines only)
}
std::uint32_t offsetOf(std::uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
bool hasLeaf(std::uint32_t u) { return (u >> 8) & 1u; }
std::uint32_t labelOf(std::uint32_t u) { return u & ((1u << 31) | 0xFFu); }
std::uint32_t valueOf(std::uint32_t u) { return u & ((1u << 31) - 1); }

// Walks every node a prefix search can reach from the root. A search at a node reads the slot of every byte it may
// be given (base ^ byte), so the whole 256-slot block of each reached node's base must lie in the trie; a leaf reads
// its value at the base of the node it ends in.
void walkTrie(std::string_view trie, std::string_view strings, const std::string& file, const std::string& field)
{
    const std::size_t units = trie.size() / 4;
    auto fail = [&](const std::string& what) {
        throw Error(ErrorCode::CorruptFile, "the precompiled charsmap is damaged: " + what, file, field);
    };
    if (units == 0)
        fail("its trie is empty");
    // The last NUL of the strings: a value at or before it starts a string that ends inside the blob.
    const std::size_t lastNul = strings.rfind('\0');
    // A node's children's block must lie in the trie; a transition into a node with a leaf reads the value at that
    // node's base. Each node is checked once, the root (never a transition's end unless a child points back) first.
    auto baseOf = [&](std::size_t node) {
        const std::size_t base = node ^ offsetOf(unitAt(trie, node));
        if ((base | 0xFFu) >= units)
            fail("node " + std::to_string(node) + "'s children lie past the trie's " + std::to_string(units) + " units");
        return base;
    };
    std::vector<bool> reached(units, false), leafChecked(units, false);
    std::vector<std::size_t> pending{0};
    reached[0] = true;
    while (!pending.empty()) {
        const std::size_t base = baseOf(pending.back());
        pending.pop_back();
        for (std::uint32_t c = 0; c < 256; ++c) {
            const std::size_t child = base ^ c;
            const std::uint32_t unit = unitAt(trie, child);
            if (labelOf(unit) != c)
                continue;
            if (hasLeaf(unit) && !leafChecked[child]) {
                leafChecked[child] = true;
                const std::uint32_t value = valueOf(unitAt(trie, baseOf(child)));
                if (lastNul == std::string_view::npos || value > lastNul)
                    fail("a replacement starts at byte " + std::to_string(value) + ", past the last string's end");
            }
            if (!reached[child]) {
                reached[child] = true;
                pending.push_back(child);
            }
        }
    }
}
} // namespace

void checkPrecompiledCharsmap(std::string_view blob, const std::string& file, const std::string& field)
{
    if (blob.size() <= 4)
        throw Error(ErrorCode::CorruptFile, "the precompiled charsmap is damaged: " + std::to_string(blob.size()) +
                                                " bytes hold no trie", file, field);
    std::uint32_t trieBytes;
    std::memcpy(&trieBytes, blob.data(), 4);
    if (trieBytes > blob.size() - 4)
        throw Error(ErrorCode::CorruptFile, "the precompiled charsmap is damaged: its trie of " + std::to_string(trieBytes) +
                                                " bytes is longer than the " + std::to_string(blob.size() - 4) +
                                                " bytes after its size", file, field);
    walkTrie(blob.substr(4, trieBytes), blob.substr(4 + trieBytes), file, field);
}

void checkPieceLength(std::string_view piece, std::size_t index, const std::string& file)
{
    if (piece.size() > kMaxUnigramPieceBytes)
        throw Error(ErrorCode::CorruptFile, "piece " + std::to_string(index) + " is " + std::to_string(piece.size()) +
                                                " bytes long; a vocabulary's pieces are at most " +
                                                std::to_string(kMaxUnigramPieceBytes),
                    file);
}

void checkSentencePieceModel(std::string_view modelProto, const std::string& file)
{
    // ModelProto: pieces = 1 (SentencePiece: piece = 1), normalizer_spec = 3, denormalizer_spec = 5
    // (NormalizerSpec: precompiled_charsmap = 2).
    ProtoReader top(modelProto, file, "ModelProto");
    std::size_t index = 0;
    while (top.more()) {
        const auto key = top.varint();
        const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
        if (field == 1 && wire == 2) {
            ProtoReader p(top.bytes(), file, "pieces[" + std::to_string(index) + "]");
            while (p.more()) {
                const auto k = p.varint();
                if ((k >> 3) == 1 && (k & 7) == 2)
                    checkPieceLength(p.bytes(), index, file);
                else
                    p.skip(static_cast<int>(k & 7));
            }
            ++index;
        } else if ((field == 3 || field == 5) && wire == 2) {
            const std::string spec = field == 3 ? "normalizer_spec" : "denormalizer_spec";
            ProtoReader n(top.bytes(), file, spec);
            while (n.more()) {
                const auto k = n.varint();
                if ((k >> 3) == 2 && (k & 7) == 2) {
                    const auto blob = n.bytes();
                    if (!blob.empty())
                        checkPrecompiledCharsmap(blob, file, spec + ".precompiled_charsmap");
                } else {
                    n.skip(static_cast<int>(k & 7));
                }
            }
        } else {
            top.skip(wire);
        }
    }
}

std::string_view normalizerCharsmap(std::string_view modelProto, const std::string& file)
{
    ProtoReader top(modelProto, file, "ModelProto");
    while (top.more()) {
        const auto key = top.varint();
        if ((key >> 3) != 3 || (key & 7) != 2) {
            top.skip(static_cast<int>(key & 7));
            continue;
        }
        ProtoReader n(top.bytes(), file, "normalizer_spec");
        while (n.more()) {
            const auto k = n.varint();
            if ((k >> 3) == 2 && (k & 7) == 2)
                return n.bytes();
            n.skip(static_cast<int>(k & 7));
        }
    }
    return {};
}

} // namespace attnscope::core
