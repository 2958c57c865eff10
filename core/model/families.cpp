// The family table's rows.
#include "model/families.h"

#include "model/decoder_families.h"

#include "io/checkpoint.h"
#include "io/gguf.h"
#include "model/encoder.h"
#include "model/gpt2.h"
#include "model/llama.h"
#include "model/seq2seq.h"
#include "model/transfo_xl.h"
#include "model/vision.h"
#include "model/vision_language.h"
#include "util/error.h"

#include <nlohmann/json.hpp>

namespace attnscope::core {

namespace {

std::shared_ptr<AttentionModel> buildTransfoXL(const ModelConfig& c, std::shared_ptr<const Checkpoint> w, std::string source)
{
    return std::make_shared<TransfoXLModel>(std::get<TransfoXLConfig>(c), std::move(w), std::move(source));
}

std::shared_ptr<AttentionModel> buildGPT2(const ModelConfig& c, std::shared_ptr<const Checkpoint> w, std::string source)
{
    return std::make_shared<GPT2Model>(std::get<GPT2Config>(c), std::move(w), std::move(source));
}

// Rotary decoders share one forward (model/llama.cpp); their quirks are fields of the configuration.
// A decoder with a vision tower (LLaVA) reads a picture beside its prompt (model/vision_language.h).
std::shared_ptr<AttentionModel> buildDecoder(const ModelConfig& c, std::shared_ptr<const Checkpoint> w, std::string source)
{
    const auto& config = std::get<LlamaConfig>(c);
    if (config.vision)
        return std::make_shared<VisionLanguageModel>(config, std::move(w), std::move(source));
    return std::make_shared<LlamaModel>(config, std::move(w), std::move(source));
}

std::shared_ptr<AttentionModel> buildEncoder(const ModelConfig& c, std::shared_ptr<const Checkpoint> w, std::string source)
{
    return std::make_shared<EncoderModel>(std::get<EncoderConfig>(c), std::move(w), std::move(source));
}

std::shared_ptr<AttentionModel> buildSeq2Seq(const ModelConfig& c, std::shared_ptr<const Checkpoint> w, std::string source)
{
    return std::make_shared<EncoderDecoderModel>(std::get<Seq2SeqConfig>(c), std::move(w), std::move(source));
}

ModelConfig transfoXLJson(const nlohmann::json& j, const std::string& file, const std::string&)
{
    return parseTransfoXLConfig(j, file);
}
ModelConfig gpt2Json(const nlohmann::json& j, const std::string& file, const std::string&) { return parseGPT2Config(j, file); }
ModelConfig decoderJson(const nlohmann::json& j, const std::string& file, const std::string& type)
{
    return parseDecoderConfig(j, file, type);
}
ModelConfig encoderJson(const nlohmann::json& j, const std::string& file, const std::string& type)
{
    return parseEncoderConfig(j, file, type);
}
ModelConfig gptNeoXJson(const nlohmann::json& j, const std::string& file, const std::string& type)
{
    return parseGptNeoXConfig(j, file, type);
}
ModelConfig gemma3Json(const nlohmann::json& j, const std::string& file, const std::string& type)
{
    return parseGemma3Config(j, file, type);
}
ModelConfig qwen35Json(const nlohmann::json& j, const std::string& file, const std::string& type)
{
    return parseQwen35Config(j, file, type);
}
ModelConfig llavaJson(const nlohmann::json& j, const std::string& file, const std::string& type)
{
    return parseLlavaConfig(j, file, type);
}
ModelConfig decoderGguf(const GgufFile& g) { return ggufDecoderConfig(g); }
ModelConfig seq2seqJson(const nlohmann::json& j, const std::string& file, const std::string& type)
{
    return parseSeq2SeqConfig(j, file, type);
}
ModelConfig seq2seqGguf(const GgufFile& g) { return ggufSeq2SeqConfig(g); }
ModelConfig visionJson(const nlohmann::json& j, const std::string& file, const std::string& type)
{
    return parseVisionConfig(j, file, type);
}
std::shared_ptr<AttentionModel> buildVision(const ModelConfig& c, std::shared_ptr<const Checkpoint> w, std::string source)
{
    return std::make_shared<VisionModel>(std::get<VisionConfig>(c), std::move(w), std::move(source));
}

std::string joined(const std::vector<std::string> FamilyRow::*field)
{
    std::string s;
    for (const auto& row : familyTable())
        for (const auto& v : row.*field)
            s += (s.empty() ? "" : ", ") + v;
    return s;
}

} // namespace

const std::vector<FamilyRow>& familyTable()
{
    static const std::vector<FamilyRow> rows = {
        {ModelFamily::TransfoXL, "Transformer-XL", {"transfo-xl"}, {}, transfoXLJson, nullptr, buildTransfoXL},
        {ModelFamily::GPT2, "GPT-2", {"gpt2"}, {}, gpt2Json, nullptr, buildGPT2},
        {ModelFamily::Llama, "Llama", {"llama", "mistral", "qwen2"}, {"llama", "qwen2"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kLlamaFamily},
        {ModelFamily::Qwen3, "Qwen3", {"qwen3"}, {"qwen3"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kQwen3Family},
        {ModelFamily::Qwen3Moe, "Qwen3-MoE", {"qwen3_moe"}, {"qwen3moe"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kQwen3MoeFamily},
        {ModelFamily::Olmoe, "OLMoE", {"olmoe"}, {"olmoe"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kOlmoeFamily},
        {ModelFamily::SmolLM3, "SmolLM3", {"smollm3"}, {"smollm3"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kSmolLM3Family},
        {ModelFamily::GptOss, "gpt-oss", {"gpt_oss"}, {"gpt-oss"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kGptOssFamily},
        {ModelFamily::Mixtral, "Mixtral", {"mixtral"}, {}, decoderJson, nullptr, buildDecoder, VocabTxt::WordList, &kMixtralFamily}, // GGUF: llama with experts
        {ModelFamily::Granite, "Granite", {"granite", "granitemoe", "granitemoeshared"}, {"granite", "granitemoe"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kGraniteFamily},
        {ModelFamily::DeepseekV2, "DeepSeek-V2", {"deepseek_v2"}, {"deepseek2"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kDeepseekFamily},
        {ModelFamily::Olmo2, "OLMo 2", {"olmo2"}, {"olmo2"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kOlmo2Family},
        {ModelFamily::Gemma2, "Gemma 2", {"gemma2"}, {"gemma2"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kGemma2Family},
        {ModelFamily::Gemma3, "Gemma 3", {"gemma3_text", "gemma3"}, {"gemma3"}, gemma3Json, decoderGguf, buildDecoder, VocabTxt::WordList, &kGemma3Family},
        {ModelFamily::Phi3, "Phi-3", {"phi3"}, {"phi3"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kPhi3Family},
        {ModelFamily::Qwen35, "Qwen3.5", {"qwen3_5_text", "qwen3_5"}, {"qwen35"}, qwen35Json, decoderGguf, buildDecoder, VocabTxt::WordList, &kQwen35Family},
        {ModelFamily::Qwen3Next, "Qwen3-Next", {"qwen3_next"}, {"qwen3next"}, qwen35Json, decoderGguf, buildDecoder, VocabTxt::WordList, &kQwen3NextFamily},
        {ModelFamily::NemotronH, "Nemotron-H", {"nemotron_h"}, {"nemotron_h"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kNemotronHFamily},
        {ModelFamily::GraniteHybrid, "Granite 4.0-H", {"granitemoehybrid"}, {"granitehybrid"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kGraniteHybridFamily},
        {ModelFamily::Lfm2, "LFM2", {"lfm2"}, {"lfm2"}, decoderJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kLfm2Family},
        {ModelFamily::Llava, "LLaVA", {"llava"}, {}, llavaJson, nullptr, buildDecoder, VocabTxt::WordList, &kLlamaFamily},
        {ModelFamily::GptNeoX, "GPT-NeoX", {"gpt_neox"}, {"gptneox"}, gptNeoXJson, decoderGguf, buildDecoder, VocabTxt::WordList, &kGptNeoXFamily},
        {ModelFamily::Bert, "BERT", {"bert"}, {}, encoderJson, nullptr, buildEncoder, VocabTxt::WordPiece},
        {ModelFamily::Roberta, "RoBERTa", {"roberta"}, {}, encoderJson, nullptr, buildEncoder},
        {ModelFamily::DistilBert, "DistilBERT", {"distilbert"}, {}, encoderJson, nullptr, buildEncoder, VocabTxt::WordPiece},
        {ModelFamily::T5, "T5", {"t5"}, {"t5"}, seq2seqJson, seq2seqGguf, buildSeq2Seq},
        {ModelFamily::Bart, "BART", {"bart", "mbart"}, {}, seq2seqJson, nullptr, buildSeq2Seq},
        {ModelFamily::Marian, "Marian", {"marian"}, {}, seq2seqJson, nullptr, buildSeq2Seq},
        {ModelFamily::Whisper, "Whisper", {"whisper"}, {}, seq2seqJson, nullptr, buildSeq2Seq},
        {ModelFamily::Vit, "ViT", {"vit"}, {}, visionJson, nullptr, buildVision},
        {ModelFamily::Deit, "DeiT", {"deit"}, {}, visionJson, nullptr, buildVision},
        {ModelFamily::Dinov2, "DINOv2", {"dinov2"}, {}, visionJson, nullptr, buildVision},
        {ModelFamily::Dinov2Registers, "DINOv2 with registers", {"dinov2_with_registers"}, {}, visionJson, nullptr, buildVision},
        {ModelFamily::ClipVision, "CLIP vision", {"clip_vision_model", "clip"}, {}, visionJson, nullptr, buildVision},
        {ModelFamily::SiglipVision, "SigLIP vision", {"siglip_vision_model"}, {}, visionJson, nullptr, buildVision},
    };
    return rows;
}

const FamilyRow& familyOfModelType(const std::string& modelType, const std::string& file)
{
    for (const auto& row : familyTable())
        for (const auto& t : row.modelTypes)
            if (t == modelType)
                return row;
    throw Error(ErrorCode::UnknownModelType,
                "model type \"" + modelType + "\" is not supported; supported model types: " + supportedModelTypes(), file,
                "model_type");
}

const FamilyRow& familyOfGgufArchitecture(const std::string& architecture, const std::string& file)
{
    for (const auto& row : familyTable())
        for (const auto& a : row.ggufArchitectures)
            if (a == architecture)
                return row;
    throw Error(ErrorCode::UnknownModelType,
                "GGUF architecture \"" + architecture + "\" is not supported (" + supportedGgufArchitectures() + " are)",
                file, "general.architecture");
}

const FamilyRow& familyRow(ModelFamily id)
{
    for (const auto& row : familyTable())
        if (row.id == id)
            return row;
    throw Error(ErrorCode::UnknownModelType, "no family row for this model");
}

std::string supportedModelTypes() { return joined(&FamilyRow::modelTypes); }
std::string supportedGgufArchitectures() { return joined(&FamilyRow::ggufArchitectures); }

const char* familyName(ModelFamily f) { return familyRow(f).name; }

} // namespace attnscope::core
