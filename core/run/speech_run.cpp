// Running a speech model on a recording.
#include "run/speech_run.h"

#include "audio/audio_file.h"
#include "io/safetensors.h"
#include "model/seq2seq.h"
#include "run/generation.h"
#include "tokenize/tokenizer.h"
#include "util/error.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace attnscope::core {

std::shared_ptr<const AudioFeatures> audioFeaturesOfFile(const AttentionModel& model, const std::string& folder,
                                                         const std::string& audioPath)
{
    if (!model.info().can.audio)
        throw Error(ErrorCode::BadInput, "this model reads text, not audio", audioPath);
    const auto* speech = dynamic_cast<const EncoderDecoderModel*>(&model);
    const MelSettings settings = readMelSettings(folder, speech ? speech->config().audioMels : 80);
    const AudioSamples audio = readAudioFile(audioPath, settings.sampleRate, settings.windowSeconds());
    auto features = std::make_shared<AudioFeatures>(logMelFeatures(audio.samples, settings));
    features->seconds = audio.fileSeconds;
    return features;
}

std::shared_ptr<const AudioFeatures> readAudioFeatures(const std::string& path)
{
    const SafetensorsFile file(path);
    const TensorInfo* t = file.find("input_features");
    if (!t)
        throw Error(ErrorCode::MissingTensor, "has no input_features tensor", path, "input_features");
    std::vector<std::int64_t> shape(t->shape.begin(), t->shape.end());
    if (shape.size() == 3 && shape[0] == 1)
        shape.erase(shape.begin());
    if (shape.size() != 2 || shape[0] < 1 || shape[1] < 1)
        throw Error(ErrorCode::ShapeMismatch, "input_features is not [mels, frames]", path, "input_features");
    auto f = std::make_shared<AudioFeatures>();
    f->mels = static_cast<int>(shape[0]);
    f->frames = static_cast<int>(shape[1]);
    f->values = readAsFloat(file, *t);
    f->contentFrames = f->frames;
    if (const TensorInfo* n = file.find("num_frames")) { // int64 as the feature extractor writes it, or a float
        double v = 0;
        if (n->dtype == DType::I64 && n->end - n->begin == sizeof(std::int64_t)) {
            std::int64_t i = 0;
            std::memcpy(&i, file.bytes(*n), sizeof i);
            v = static_cast<double>(i);
        } else if (const auto d = readAsDouble(file, *n); d.size() == 1) {
            v = d[0];
        }
        if (!(v >= 1 && v <= f->frames))
            throw Error(ErrorCode::BadInput, "num_frames must be one count from 1 to the " + std::to_string(f->frames) +
                                                 " frames", path, "num_frames");
        f->contentFrames = static_cast<int>(v);
    }
    f->seconds = f->contentFrames * f->frameSeconds;
    return f;
}

Transcript transcriptOf(const std::vector<std::int32_t>& ids, const std::vector<std::int32_t>& prompt,
                        const SpeechSettings& settings)
{
    Transcript t;
    if (!ids.empty() && ids.front() == settings.start) {
        const auto marker = std::find(ids.begin(), ids.end(), settings.noTimestamps);
        if (marker == ids.end())
            throw Error(ErrorCode::BadInput, "the ids start a transcript but have no <|notimestamps|> (" +
                                                 std::to_string(settings.noTimestamps) + "): give the text tokens alone");
        t.sot.assign(ids.begin(), marker);
        t.text.assign(marker + 1, ids.end());
    } else {
        t.sot = prompt;
        if (!t.sot.empty() && t.sot.back() == settings.noTimestamps)
            t.sot.pop_back();
        t.text = ids;
    }
    if (!t.text.empty() && t.text.back() == settings.end)
        t.text.pop_back();
    for (const auto id : t.text)
        if (id >= settings.end)
            throw Error(ErrorCode::BadInput, "token " + std::to_string(id) +
                                                 " is a special token: word timings are for the text's tokens");
    if (t.text.empty())
        throw Error(ErrorCode::BadInput, "the transcript has no text tokens to time");
    return t;
}

std::vector<std::int32_t> decoderInput(const Transcript& t, const SpeechSettings& settings)
{
    std::vector<std::int32_t> ids = t.sot;
    ids.push_back(settings.noTimestamps);
    ids.insert(ids.end(), t.text.begin(), t.text.end());
    ids.push_back(settings.end);
    return ids;
}

std::vector<std::int32_t> speechDecoderIds(const AttentionModel& model, const SpeechSettings& settings,
                                           std::shared_ptr<const AudioFeatures> audio,
                                           const std::vector<std::int32_t>* ids, int maxNewTokens)
{
    if (ids && !ids->empty() && ids->front() == settings.start)
        return *ids;
    std::vector<std::int32_t> out = speechPrompt(settings, "", "");
    if (ids) {
        out.insert(out.end(), ids->begin(), ids->end());
        return out;
    }
    return continueTranscript(model, settings, std::move(audio), std::move(out), maxNewTokens);
}

std::vector<std::int32_t> continueTranscript(const AttentionModel& model, const SpeechSettings& settings,
                                             std::shared_ptr<const AudioFeatures> audio,
                                             std::vector<std::int32_t> ids, int count)
{
    if (count < 1 || (!ids.empty() && ids.back() == settings.end))
        return ids;
    Sampling greedy;
    greedy.excluded = settings.suppress;
    // The first written token of a transcript (right after <|notimestamps|>) is neither a blank nor the end.
    if (!ids.empty() && ids.back() == settings.noTimestamps)
        greedy.excludedFirst = settings.suppressAtBegin;
    GenerationRun run;
    run.options.audio = std::move(audio);
    run.stopAt = settings.end;
    const auto written = generateTokens(model, ids, count, greedy, 0, nullptr, run);
    ids.insert(ids.end(), written.ids.begin(), written.ids.end());
    return ids;
}

std::shared_ptr<const TextCapture> captureRecording(const AttentionModel& model, const std::string& folder,
                                                    const Tokenizer& tokenizer,
                                                    std::shared_ptr<const AudioFeatures> features,
                                                    const std::string& text, int generate, CaptureOptions options)
{
    options.run.audio = features;
    const auto& info = model.info();
    options.streams.assign(info.streams.size(), {});
    auto& frames = options.streams.front().tokens; // the audio stream: one token per 20-ms encoder position
    for (int j = 0; j < features->frames / 2; ++j) {
        char label[32];
        std::snprintf(label, sizeof label, "%.2f s", j * 2 * features->frameSeconds);
        frames.push_back({j, label, 0, 0});
    }
    const SpeechSettings settings = readSpeechSettings(folder, info);
    std::vector<std::int32_t> typed;
    for (const auto& t : tokenizer.encode(text))
        typed.push_back(t.id);
    auto ids = speechDecoderIds(model, settings, features, &typed, 0);
    if (generate > 0) // through the model's own cache (a capture step per token would copy every site's record)
        ids = continueTranscript(model, settings, features, std::move(ids), generate);
    std::vector<Token> tokens;
    for (const auto id : ids)
        tokens.push_back({id, tokenizer.pieceOf(id), 0, 0});
    return captureText(model, std::move(tokens), options, text);
}

std::vector<DecoderHead> everyDecoderHead(const ModelInfo& info)
{
    std::vector<DecoderHead> heads;
    for (const auto& site : info.sites)
        if (site.kind == SiteKind::Cross)
            for (int h = 0; h < info.heads; ++h)
                heads.push_back({site.layer, h});
    return heads;
}

} // namespace attnscope::core
