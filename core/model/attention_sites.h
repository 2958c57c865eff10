// Attention sites over token streams: the contract between a model and everything that shows its attention. A model
// reads one or more token streams (a decoder-only model: the text; an encoder-decoder model: the source and the
// target) and mixes tokens at sites: one per layer of a single stack, or in an encoder-decoder model the encoder's
// self-attention (source x source), the decoder's self-attention (target x target, causal) and its cross-attention
// (target rows x source columns). A view, an export or a dump names a site, never "layer 3" alone.
//
// Two tables make a model's description, so a new kind of input or of token mixing is a row, not a branch:
// - the stream roles (kStreamRoles): how a stream reaches the run (typed and cut into segments; read whole beside the
//   segments, as a source sentence or a picture is) and what one of its tokens is;
// - the mixer rows (attention/mixer.h): what mixes a site's tokens and what its grid is.
#pragma once

#include "attention/mixer.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace attnscope::core {

// Which stack of layers a site belongs to: the only one (decoder-only models, encoders), or one of an encoder-decoder
// model's two.
enum class Stack { Only, Encoder, Decoder };
// Self-attention (queries and keys from one stream) or cross-attention (queries from the target, keys from the source).
enum class SiteKind { Self, Cross };


// How a stream reaches a run: its tokens are the run's segments (the text, a decoder's target), or it is read whole
// beside them through RunOptions (a source sentence, a picture's patches), the same for every segment.
enum class StreamRole { Segments, Read };

// A token stream: its name as users read it ("text", "source", "target", "image"), its role, and the token a model puts
// before the typed text when the tokenizer's own special tokens are not what it reads (a decoder's start token).
struct TokenStream {
    std::string name;
    StreamRole role = StreamRole::Segments;
    std::int32_t startToken = -1; // -1: the tokenizer's special tokens (Llama's BOS, T5's </s>) as it adds them
    std::int32_t endToken = -1;   // generation of the stream ends when it writes this token (-1: none)
    bool typed = true;            // a person types it (a text, a source); false: a picture
};

// One place where tokens read other tokens. Layers are counted from 0 within their stack (from 1 where a person reads
// them). The score rule (scale, soft-cap, window) is the model's LayerRule for the site; positionBias says a learned
// bias by offset is added (T5's relative buckets).
struct AttentionSite {
    Stack stack = Stack::Only;
    int layer = 0;
    SiteKind kind = SiteKind::Self;
    int queryStream = 0; // index into ModelInfo::streams
    int keyStream = 0;
    bool causal = true;
    bool positionBias = false;
    Mixer mixer = Mixer::Softmax;
    int heads = 0; // the site's heads (its grids per head); ModelInfo::heads unless its mixer has other heads
    // The width of the rows its map is computed from, where they are not the model's attention heads (0: ModelInfo's
    // kvHeads and dHead): a short convolution's channels are its heads, each one number wide.
    int kvHeads = 0, headDim = 0;

    // Queries and keys from one stream and keys at distances from their query (what relative-position profiles, the
    // previous-token score and rollout read).
    bool sameStream() const { return queryStream == keyStream; }

    // The kind of site as one word, for pages, Python and command lines: "self" (a model with one stack), "encoder",
    // "decoder" (its self-attention) or "cross".
    const char* key() const
    {
        return kind == SiteKind::Cross ? "cross" : stack == Stack::Decoder ? "decoder" : stack == Stack::Encoder ? "encoder" : "self";
    }
    // "layer 3", "encoder layer 2", "decoder layer 1 cross-attention": for labels, counted from 1.
    std::string label() const
    {
        std::string s = stack == Stack::Encoder ? "encoder layer " : stack == Stack::Decoder ? "decoder layer " : "layer ";
        s += std::to_string(layer + 1);
        if (stack == Stack::Decoder)
            s += kind == SiteKind::Cross ? " cross-attention" : " self-attention";
        return s;
    }
    // "E2", "D1 self", "D1 cross", "L3": where room is short (thumbnail rows, the head selector).
    std::string shortLabel() const
    {
        if (stack == Stack::Encoder)
            return "E" + std::to_string(layer + 1);
        if (stack == Stack::Decoder)
            return "D" + std::to_string(layer + 1) + (kind == SiteKind::Cross ? " cross" : " self");
        return "L" + std::to_string(layer + 1);
    }
};

// The sites of a model with one stream and one self-attention per layer: site l is layer l.
inline std::vector<AttentionSite> singleStreamSites(int layers, bool causal, int heads)
{
    std::vector<AttentionSite> sites(static_cast<std::size_t>(layers));
    for (int l = 0; l < layers; ++l)
        sites[static_cast<std::size_t>(l)] =
            AttentionSite{Stack::Only, l, SiteKind::Self, 0, 0, causal, false, Mixer::Softmax, heads};
    return sites;
}

// A single-stream model's streams and sites, given its layer count, whether it is causal and its heads.
inline void describeSingleStream(int layers, bool causal, int heads, std::vector<TokenStream>& streams,
                                 std::vector<AttentionSite>& sites, const char* stream = "text", bool typed = true)
{
    streams = {TokenStream{stream, StreamRole::Segments, -1, -1, typed}};
    sites = singleStreamSites(layers, causal, heads);
}

} // namespace attnscope::core
