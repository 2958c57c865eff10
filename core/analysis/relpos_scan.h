// Corpus scan for the Transformer-XL paper's Figs. 5 and 7: the attention paid at each relative distance,
// per (layer, head), averaged over every query of a long text, and attention sinks. Only running sums and counts
// are kept (a ScanResult, scan_result.h), so memory does not grow with the text.
#pragma once

#include "analysis/scan_result.h"
#include "attention/rotary_bands.h"
#include "model/attention_model.h"
#include "tokenize/tokenizer.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnscope::core {

// How a scan runs the token stream (figures.md, "Causal models over a corpus"):
//  - Transformer-XL: segments of segmentLen with a memory of memLen (>= 1) tokens;
//  - causal models, memLen 0 ("chunks"): chunks of segmentLen tokens, each from an empty cache;
//  - rotary models, memLen W > 0 ("sliding"): a cache of the last W tokens' keys and values carried from chunk to
//    chunk. GPT-2 cannot (absolute positions) and says so.
struct ScanOptions {
    int memLen = 0;
    int segmentLen = 0;             // must be >= 1 and <= the model's maximum
    std::optional<bool> sameLength;
    std::optional<int> clampLen;
    std::int64_t maxTokens = -1;    // -1: no limit
    std::string terms;              // extra profiles: "" or terms "a,b,c,d" / "a+b", or bands "1,2,3" / "1+2"
    std::optional<BandSplit> bands; // band profiles: the split (default: three equal bands)
    const StopToken* stop = nullptr;
    // Called after every segment (done, estimated total tokens). Any thread-safety is the caller's business.
    std::function<void(std::int64_t, std::int64_t)> progress;
    // Called after every segment with the sums so far (for views that fill in while the scan runs).
    std::function<void(const class ScanResult&)> partial;
};

// The scan settings a model gets when none are given: Transformer-XL its own memory and segment; causal models
// chunks of their context length, at most 1024 tokens.
int defaultScanSegmentLen(const ModelInfo& info);
int defaultScanMemLen(const ModelInfo& info);
// Throws Error(BadInput) saying what is wrong with `options` for this model (the scanner checks them too).
void checkScanOptions(const ModelInfo& info, const ScanOptions& options);
// "memory", "chunks" or "sliding" (see ScanOptions).
std::string scanModeName(const ModelInfo& info, int memLen);


class RelposAccumulator;

// The same profiles for a text already captured for the interactive views (no model run).
// Recomputed from the capture's records; `stop` is checked between layers (Error(Cancelled)). Band profiles use
// `bands` (default: three equal bands).
ScanResult relposFromCapture(const struct TextCapture& capture, const std::string& terms = "", const StopToken* stop = nullptr,
                             const BandSplit* bands = nullptr);
// The bands a scan or a capture of this model uses: the model's fixed terms (DeepSeek's rotary and content), else
// `chosen`, else three equal bands of a rotary head. Throws Error(BadInput) for a model without rotary embeddings.
BandSplit bandsFor(const ModelInfo& info, const std::optional<BandSplit>& chosen = {});
// bandsFor with nothing chosen, or none for a model without rotary embeddings.
std::optional<BandSplit> defaultBands(const ModelInfo& info);

// The incremental engine: feed tokens in any chunk sizes; segments run as soon as they are full.
class RelposScanner {
public:
    RelposScanner(const AttentionModel& model, const ScanOptions& options);
    ~RelposScanner();
    // Returns false once maxTokens is reached (further tokens are ignored).
    bool feed(std::span<const std::int32_t> ids);
    // Runs the last, shorter segment. Cancellation (Error Cancelled) leaves partial = true and the sums kept. A scan
    // fed no token is refused (Error(BadInput)) unless `mayBeEmpty`: a shard of a file that owns no segment start.
    ScanResult finish(bool mayBeEmpty = false);
    std::int64_t tokensDone() const;
    // Total used in progress reports (streaming readers only know an estimate).
    void setTotalEstimate(std::int64_t total) { m_totalEstimate = total; }
    // A reader that stopped feeding because the scan was cancelled says so: the result is partial even when the
    // tokens fed so far filled whole segments (finish() then has no pending segment that would notice).
    void stoppedEarly();

private:
    void runSegment(std::span<const std::int32_t> ids);

    const AttentionModel& m_model;
    ScanOptions m_options;
    std::unique_ptr<RunState> m_state;
    std::unique_ptr<RelposAccumulator> m_acc;
    std::vector<std::int32_t> m_pending;
    std::int64_t m_fed = 0;
    std::int64_t m_totalEstimate = 0;
    bool m_cancelled = false;
};

// Byte range [begin, end) of shard I of N of a file: the byte fractions (I-1)/N and I/N, each moved forward to
// the next line start, so shards are contiguous, disjoint, line-aligned and cover the file.
std::pair<std::int64_t, std::int64_t> shardByteRange(const std::string& path, int shardIndex, int shardCount);

// Scans a text file by streaming it line by line, tokenized by `tokenizer`. `shardIndex` / `shardCount` (1-based I
// of N) scan the segments that start in the I-th contiguous, line-aligned part of the file, counted in tokens over the
// whole file, so the shards of a file run exactly the segments of one scan (chunks of causal models merge to that
// scan's result; with a memory, each shard starts its first segment without one). The result's metadata names the
// corpus (file name, size, a digest of its ends) and the shard.
ScanResult scanTextFile(const AttentionModel& model, const Tokenizer& tokenizer, const std::string& path,
                        const ScanOptions& options, int shardIndex = 1, int shardCount = 1);
// Loads scan results and merges them. Shards must be all N of one corpus (the same file, size and digest), each
// once; missing or repeated shards are named. Results that are not shards merge freely (scans of different texts).
ScanResult mergeScanFiles(const std::vector<std::string>& paths);
// Scans an in-memory text.
ScanResult scanText(const AttentionModel& model, const Tokenizer& tokenizer, const std::string& text,
                    const ScanOptions& options);

} // namespace attnscope::core
