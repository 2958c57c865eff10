// What mixes a site's tokens, as a table: softmax attention, and the layers of hybrid models that mix tokens without
// a softmax but exactly linearly in their values, so that every kind has a token-to-token grid per head (softmax
// attention's probabilities; the others' implicit maps, signed, rows need not sum to 1). Adding a kind is a row here,
// its map in attention/implicit_maps.cpp and the forward that records its inputs (docs/architecture.md, "Adding a site
// kind").
#pragma once

#include <array>
#include <cstddef>

namespace attnscope::core {

enum class Mixer {
    Softmax,   // attention: softmax over scaled q.k (the scores' arithmetic is attention_scores.h)
    ShortConv, // a causal depthwise convolution gated on both sides (LFM2): y = C * conv(B * x), one map per channel
    DeltaRule, // a gated delta rule (Gated DeltaNet: Qwen3.5, Qwen3-Next): a decayed state written and erased along k
    StateSpace, // a Mamba-2 scan (Granite 4.0-H, Nemotron-H): a state decayed by exp(A dt) and written with dt x B^T
    None,       // no token mixing (Nemotron-H's MLP blocks): each token reads itself, the identity
};

// How one grid stands for several heads of the site (the "all heads" view).
enum class HeadAggregate {
    Mean,         // the heads' mean (probabilities stay probabilities)
    MeanMagnitude // the mean of |M| over the heads (channels): a signed map's heads would cancel in a plain mean
};

struct MixerRow {
    Mixer mixer;
    const char* key;     // one word for pages, Python and command lines: "attention", "conv"
    const char* name;    // as a label reads it: "attention", "short convolution"
    const char* headNoun; // what one of its grids is: "head", "channel"
    bool probabilities;  // its grid is a probability per row (colour from 0; rows sum to 1 with what they see)
    HeadAggregate aggregate;
    // What the map multiplies (the values whose weighted sum is the mixer's output), for the grid's caption.
    const char* values;
    // It has an approximate map beside the exact one (ScoreInputs::heuristicMap: the delta rule without erasure).
    bool heuristic = false;
};
inline constexpr std::array kMixerRows{
    MixerRow{Mixer::Softmax, "attention", "attention", "head", true, HeadAggregate::Mean, "the values v"},
    MixerRow{Mixer::ShortConv, "conv", "short convolution", "channel", false, HeadAggregate::MeanMagnitude,
             "in_proj's x"},
    MixerRow{Mixer::DeltaRule, "delta", "delta rule", "head", false, HeadAggregate::Mean,
             "v after the convolution", true},
    MixerRow{Mixer::StateSpace, "ssm", "state-space scan", "head", false, HeadAggregate::Mean,
             "x after the convolution"},
    MixerRow{Mixer::None, "mlp", "MLP block (no token mixing)", "head", true, HeadAggregate::Mean, "the token itself"},
};
inline const MixerRow& mixerRow(Mixer m) { return kMixerRows[static_cast<std::size_t>(m)]; }

} // namespace attnscope::core
