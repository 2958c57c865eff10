// Attention sites over token streams: the contract between a model and everything that shows its attention. A model
// reads one or more token streams (a decoder-only model: the text; an encoder-decoder model: the source and the
// target) and attends at sites: one self-attention per layer of a single stack, or in an encoder-decoder model the
// encoder's self-attention (source x source), the decoder's self-attention (target x target, causal) and its
// cross-attention (target rows x source columns). A view, an export or a dump names a site, never "layer 3" alone.
#pragma once

#include <string>
#include <vector>

namespace attnscope::core {

// Which stack of layers a site belongs to: the only one (decoder-only models, encoders), or one of an encoder-decoder
// model's two.
enum class Stack { Only, Encoder, Decoder };
// Self-attention (queries and keys from one stream) or cross-attention (queries from the target, keys from the source).
enum class SiteKind { Self, Cross };

// A token stream: its name as users read it ("text", "source", "target").
struct TokenStream {
    std::string name;
};

// One place where attention is computed. Layers are counted from 0 within their stack (from 1 where a person reads
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
};

// The sites of a model with one stream and one self-attention per layer: site l is layer l.
inline std::vector<AttentionSite> singleStreamSites(int layers, bool causal)
{
    std::vector<AttentionSite> sites(static_cast<std::size_t>(layers));
    for (int l = 0; l < layers; ++l)
        sites[static_cast<std::size_t>(l)] = AttentionSite{Stack::Only, l, SiteKind::Self, 0, 0, causal, false};
    return sites;
}

// A single-stream model's streams and sites, given its layer count and whether it is causal.
inline void describeSingleStream(int layers, bool causal, std::vector<TokenStream>& streams,
                                 std::vector<AttentionSite>& sites, const char* stream = "text")
{
    streams = {TokenStream{stream}};
    sites = singleStreamSites(layers, causal);
}

} // namespace attnscope::core
