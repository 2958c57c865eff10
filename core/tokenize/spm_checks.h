// Checks on what a SentencePiece model hands libsentencepiece, made before the library sees it. The library follows
// a normaliser's precompiled charsmap (a double-array trie and the strings its leaves point into) exactly as the file
// says, and builds its piece trie by recursion one level per byte of a piece: a damaged charsmap or one huge piece is
// a crash there, so both are refused here with the file and the field named.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace attnscope::core {

// The longest piece a Unigram model may have (SentencePiece's trainer makes pieces of at most 16 characters; a
// user-defined symbol may be longer, never kilobytes).
constexpr std::size_t kMaxUnigramPieceBytes = 4096;

// Throws CorruptFile naming `file` and `field` unless `blob` (non-empty) is a charsmap every lookup stays inside:
// a 4-byte trie size within the blob, every node a lookup can reach with its 256 children's slots in the trie, and
// every leaf's value the start of a NUL-terminated string in the blob's strings.
void checkPrecompiledCharsmap(std::string_view blob, const std::string& file, const std::string& field);
// Throws CorruptFile unless piece `index` is at most kMaxUnigramPieceBytes long.
void checkPieceLength(std::string_view piece, std::size_t index, const std::string& file);
// A serialized ModelProto (a .model / .spm file's bytes): every piece's length, and the normaliser's and the
// denormaliser's charsmaps.
void checkSentencePieceModel(std::string_view modelProto, const std::string& file);
// normalizer_spec.precompiled_charsmap of a serialized ModelProto, a view into it (empty when it has none).
std::string_view normalizerCharsmap(std::string_view modelProto, const std::string& file);

} // namespace attnscope::core
