// Vision transformers (ViT, DeiT, DINOv2 with or without registers, CLIP's vision tower): an image as a token stream,
// its special tokens (CLS, DeiT's distillation token, DINOv2's registers) then its patches row-major, through pre-norm
// encoder blocks with every token seeing every other. The image comes with the run (RunOptions::image); the ids a
// segment is given only count its tokens (0 .. N-1), so captures, grids, rollout and the atlas work as for text.
#pragma once

#include "image/pixels.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "model/attention_model.h"
#include "model/config.h"
#include "model/nn_ops.h"
#include "model/tensor_names.h"

#include <memory>
#include <string>
#include <vector>

namespace attnscope::core {

class VisionModel final : public AttentionModel {
public:
    VisionModel(VisionConfig config, std::shared_ptr<const Checkpoint> weights, std::string source);

    const ModelInfo& info() const override { return m_info; }
    const VisionConfig& config() const { return m_config; }
    std::unique_ptr<RunState> newState(const RunOptions& options) const override;
    // `ids` must number the image's tokens (tokenCount of the run's image); their values are not read.
    void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const override;

    // The patch grid and token count of an image of this many pixels (Error(BadInput) when the model cannot take it:
    // not a whole number of patches, or another size than a fixed position table allows).
    struct Grid {
        int rows = 0, cols = 0;
    };
    Grid gridOf(int height, int width) const;
    int tokenCount(int height, int width) const;
    // "CLS", "DIST", "REG1".., then "r1c1", "r1c2", ... (1-based, as people read them).
    std::vector<std::string> tokenLabels(int height, int width) const;

    // The tensors the reference data names that are not a layer's (patch_embeds, pos_embed, embedding,
    // pre_layrnorm, last_hidden_state, pooler_output, logits, image_embeds), from one run on `pixels`.
    std::vector<OutputTensor> outputs(const PixelValues& pixels, AttentionObserver& observer) const;
    // An image classifier's class probabilities for the picture (ViTForImageClassification, DeiT's two heads'
    // mean), one forward pass; empty when the file has no classifier.
    std::vector<float> classify(const PixelValues& pixels) const;
    bool hasClassifier() const { return static_cast<bool>(m_classifier.w) || static_cast<bool>(m_clsHead.w); }

private:
    struct Norm {
        WeightView w, b;
    };
    struct Linear {
        WeightView w, b;
    };
    struct Layer {
        Norm norm1, norm2;
        Linear q, k, v, o, fc1, fc2;
        WeightView scale1, scale2; // DINOv2's LayerScale (empty otherwise)
    };
    class State;
    // A layer's rows the layer view points into until it is handed on.
    struct LayerRows {
        RowMatrix q, k, v, heads, attnOut;
    };
    Layer loadLayer(const VisionNames& names, int layer) const;
    void loadReadOuts(const VisionNames& names); // the pooler, projection and classifiers a file may have
    void describe(std::string source);
    // Runs the image as one segment (`counters` advance); `extra` (may be null) receives the non-layer tensors.
    void run(const PixelValues& pixels, AttentionObserver& observer, std::vector<OutputTensor>* extra,
             RunState& counters) const;
    // The special tokens and the patches with their positions, [tokens, hidden] (CLIP: after its pre-norm).
    RowMatrix embedPatches(const PixelValues& pixels, const Grid& grid, std::vector<OutputTensor>* extra) const;
    // One pre-norm block over every token, `x` replaced by its output.
    void encoderBlock(int l, const std::vector<VisibleSpan>& spans, const AttentionCapture& kept, RowMatrix& x,
                      LayerRows& rows, LayerView& view) const;
    // The final norm and the read-outs the file has (pooler, projection, classifiers), into `extra`.
    void readOuts(const RowMatrix& x, std::vector<OutputTensor>& extra) const;
    // The position table for a grid, [1 + rows * cols, hidden] (class row first; DeiT: 2 + ...).
    RowMatrix positionTable(const Grid& grid) const;
    std::string name(const std::string& relative) const; // the checkpoint's name of a tensor of this family

    VisionConfig m_config;
    std::shared_ptr<const Checkpoint> m_weights;
    std::string m_prefix; // "vit.", "deit.", "vision_model.", ... where the file has it
    ModelInfo m_info;
    WeightView m_cls, m_dist, m_registers, m_pos, m_patchW, m_patchB;
    Norm m_preNorm, m_finalNorm;
    std::vector<Layer> m_layers;
    Linear m_pooler;               // ViT's tanh pooler (when the file has it)
    WeightView m_projection;       // CLIP's visual_projection (when the file has it)
    Linear m_clsHead, m_distHead;  // DeiT's two classifiers (when the file has them)
    Linear m_classifier;           // ViT's classifier on the CLS row (when the file has it)
    int m_gridSide = 0;            // the position table's patch grid (image_size / patch)
};

// The model as a vision model; Error(BadInput) naming it when it reads text.
const VisionModel& asVision(const AttentionModel& model);

} // namespace attnscope::core
