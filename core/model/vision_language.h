// A vision-language decoder (LLaVA-1.5, Gemma 3): pictures read beside the prompt. The vision tower (model/vision.h)
// runs on each of the run's pictures (RunOptions::image, then morePictures); the hidden state the config names
// (LLaVA: without its CLS row; Gemma 3: the normed output, averaged over cells of the patch grid) goes through the
// projector; and the decoder (model/llama.h) embeds each image placeholder of the prompt as the next of those rows
// (RunOptions::placed; Gemma 3's picture tokens see their whole picture). The model's sites are the decoder's layers over the text stream, whose image tokens are the
// picture's patches in row-major order; the tower's own attention is read through pictureRows' observer. Without a
// picture it is its text model (a prompt with a placeholder is then refused).
#pragma once

#include "image/pixels.h"
#include "model/attention_model.h"
#include "model/config.h"
#include "model/nn_ops.h"

#include <memory>
#include <mutex>
#include <string>

namespace attnscope::core {

class Checkpoint;
class LlamaModel;
class VisionModel;

class VisionLanguageModel final : public AttentionModel {
public:
    VisionLanguageModel(LlamaConfig config, std::shared_ptr<const Checkpoint> weights, std::string source);
    ~VisionLanguageModel() override;

    const ModelInfo& info() const override { return m_info; }
    const VisionLanguageConfig& picture() const { return *m_config.vision; }
    const VisionModel& tower() const { return *m_tower; }
    const LlamaModel& text() const { return *m_text; }

    std::unique_ptr<RunState> newState(const RunOptions& options) const override;
    void forwardSegment(RunState& state, std::span<const std::int32_t> ids, AttentionObserver& observer) const override;
    std::unique_ptr<RunState> resumeWithin(const RunState& segmentEnd, int keep) const override;
    bool readOut(const float* hidden, int rows, std::vector<float>& logits) const override;
    bool headParts(int layer, const float* headMixRow, std::vector<float>& out) const override;
    bool logitDirection(const float* residual, std::int32_t token, std::vector<float>& direction,
                        double& constant) const override;

    // What a picture becomes on the way into the decoder: the tower's chosen hidden state without the rows the
    // strategy drops (image_features) and the projector's output (image_embeds), [imageTokens, width] each. The
    // tower's layers go to `towerObserver`.
    struct PictureRows {
        RowMatrix features, embeds;
    };
    PictureRows pictureRows(const PixelValues& pixels, AttentionObserver& towerObserver) const;
    // How many placeholders one picture of height x width pixels fills (Error(BadInput) when the tower cannot take it).
    int imageTokens(int height, int width) const;
    // The grid those tokens fill, rows x columns, row-major (LLaVA's "full" strategy: the CLS then the patches, one
    // row short of a grid: counted as the patch grid).
    std::pair<int, int> imageGrid(int height, int width) const;
    // The prompt's ids with each placeholder expanded in place to a picture's imageTokens (a prompt whose placeholders
    // are already expanded is returned as it is).
    std::vector<std::int32_t> expandPlaceholders(const std::vector<std::int32_t>& ids, int height, int width) const;

private:
    struct Linear {
        WeightView w, b;
    };
    // The projector's rows for a picture, computed once per picture and shared by the runs that read it.
    std::shared_ptr<const RunOptions::PlacedRows>
    placedRowsOf(const std::vector<std::shared_ptr<const PixelValues>>& pictures) const;
    // LLaVA's projector: linear_2(gelu(linear_1(x))).
    RowMatrix projectMlp(const RowMatrix& features) const;
    // Gemma 3's: the patch grid averaged over poolKernel x poolKernel cells, the soft-token norm, x W.
    RowMatrix projectPooled(const RowMatrix& features, int gridRows, int gridCols) const;
    void describe(std::string source);

    LlamaConfig m_config;
    std::shared_ptr<const Checkpoint> m_weights;
    std::unique_ptr<LlamaModel> m_text;
    std::unique_ptr<VisionModel> m_tower;
    Linear m_project1, m_project2;
    WeightView m_softNorm, m_inputProjection; // Gemma 3: (1 + w) as floats, and [tower, text]
    std::vector<float> m_ownedNorm;
    ModelInfo m_info;
    mutable std::mutex m_cacheMutex;
    mutable std::vector<std::weak_ptr<const PixelValues>> m_cachedPictures;
    mutable std::shared_ptr<const RunOptions::PlacedRows> m_cachedRows;
};

} // namespace attnscope::core
