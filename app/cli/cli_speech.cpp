// Speech: features, transcription and word timings.
#include "cli_speech.h"

#include "analysis/word_timing.h"
#include "audio/audio_file.h"
#include "audio/log_mel.h"
#include "io/safetensors.h"
#include "run/generation.h"
#include "analysis/speech_alignment.h"
#include "run/speech_run.h"
#include "tokenize/tokenizer.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/message_text.h"

#include "cli_attention.h"

#include <nlohmann/json.hpp>

#include <iostream>

using namespace attnscope::core;

namespace attnscope::cli {

const std::vector<std::string> kFeaturesOptions = {"audio", "n-mels", "model", "out"};
const std::vector<std::string> kAlignOptions = {"model", "audio", "features", "ids", "text", "heads", "language",
                                                "task", "out"};

namespace {

void requireSpeechModel(const LoadedModel& loaded)
{
    if (!loaded.model->info().can.audio)
        throw Error(ErrorCode::BadInput, "--audio is for speech models (Whisper); this model reads text",
                    loaded.model->info().source);
}

// The recording of --audio (through the model's front end) or the stored --features.
std::shared_ptr<const AudioFeatures> audioOf(const Args& a, const LoadedModel& loaded)
{
    requireSpeechModel(loaded);
    if (a.has("features"))
        return readAudioFeatures(a.options.at("features"));
    if (!a.has("audio"))
        throw Error(ErrorCode::BadInput, a.command + " of a speech model needs a recording: --audio FILE (WAV, FLAC, "
                                                     "OGG) or --features FEATURES.safetensors");
    return audioFeaturesOfFile(*loaded.model, loaded.folder, a.options.at("audio"));
}

nlohmann::ordered_json pathJson(const WarpPath& p)
{
    return {{"text_indices", p.text}, {"time_indices", p.time}};
}

// The transcript align times: --ids (the decoder input or the text tokens) or --text through the tokenizer.
Transcript transcriptArgument(const Args& a, const LoadedModel& loaded, const Tokenizer& tok, const SpeechSettings& s)
{
    std::vector<std::int32_t> ids;
    if (a.has("ids")) {
        for (const auto& t : idArgument(a, loaded))
            ids.push_back(t.id);
    } else {
        for (const auto& t : tok.encode(require(a, "text")))
            ids.push_back(t.id);
    }
    const std::string language = a.has("language") ? a.options.at("language") : "";
    const std::string task = a.has("task") ? a.options.at("task") : "";
    return transcriptOf(ids, speechPrompt(s, language, task), s);
}

nlohmann::ordered_json wordsJson(const SpeechAlignment& al)
{
    nlohmann::ordered_json words = nlohmann::json::array();
    for (const auto& w : al.words) {
        words.push_back({{"word", bytesSpelled(w.word)}, {"tokens", w.tokens}, {"start", w.start}, {"end", w.end},
                         {"probability", w.probability}});
    }
    return words;
}

nlohmann::ordered_json rankingJson(const std::vector<HeadAlignmentScore>& ranking)
{
    nlohmann::ordered_json out = nlohmann::json::array();
    for (const auto& r : ranking)
        out.push_back({{"layer", r.head.layer}, {"head", r.head.head}, {"mean_frame_error", r.meanFrameError},
                       {"path_score", r.pathScore}, {"monotonicity", r.monotonicity}, {"sharpness", r.sharpness},
                       {"jump_frames", r.jumps}});
    return out;
}

nlohmann::ordered_json headsJson(const std::vector<DecoderHead>& heads)
{
    nlohmann::ordered_json out = nlohmann::json::array();
    for (const auto& h : heads)
        out.push_back({h.layer, h.head});
    return out;
}

} // namespace

int cmdFeatures(const Args& a, const std::vector<std::string>& builtins)
{
    MelSettings settings;
    settings.mels = parseInt(a, "n-mels", 80);
    if (a.has("model")) { // the model folder's own front end
        const auto loaded = loadModel(a.options.at("model"), builtins);
        requireSpeechModel(loaded);
        settings = readMelSettings(loaded.folder, parseInt(a, "n-mels", 0) > 0 ? settings.mels : 0);
    }
    if (settings.mels < 1 || settings.mels > 512)
        throw Error(ErrorCode::BadInput, "--n-mels must be from 1 to 512 (Whisper: 80, large-v3: 128)");
    const std::string& path = require(a, "audio");
    const AudioSamples audio = readAudioFile(path, settings.sampleRate, settings.windowSeconds());
    const AudioFeatures f = logMelFeatures(audio.samples, settings);
    const std::string& out = require(a, "out");
    // num_frames as Hugging Face counts it: the whole recording's frames, past the window too.
    const double frames = static_cast<double>(audio.fileSamples / settings.hop);
    std::vector<OutputTensor> tensors{{"input_features", {f.mels, f.frames}, f.values},
                                      {"num_frames", {1}, {}, DType::F64, {frames}}};
    writeSafetensors(out, tensors, {{"source", "attnscope-cli features"}, {"audio", path}});
    std::cerr << "wrote " << f.mels << " x " << f.frames << " log-mel features of " << formatNumber(audio.fileSeconds)
              << " s of audio to " << out << "\n";
    return 0;
}

int generateSpeech(const Args& a, const LoadedModel& loaded)
{
    const auto audio = audioOf(a, loaded);
    const auto tok = loadModelTokenizer(loaded);
    const SpeechSettings s = readSpeechSettings(loaded.folder, loaded.model->info());
    const std::vector<std::int32_t> prompt = speechPrompt(s, a.has("language") ? a.options.at("language") : "",
                                                          a.has("task") ? a.options.at("task") : "");
    const int count = parseInt(a, "max-new-tokens", 64);
    if (count < 1 || count > loaded.model->info().maxSegmentLen)
        throw Error(ErrorCode::BadInput, "--max-new-tokens must be from 1 to " +
                                             std::to_string(loaded.model->info().maxSegmentLen) + " (the decoder's positions)");
    Sampling sampling;
    if (a.has("temperature")) {
        sampling.greedy = false;
        sampling.temperature = parseDouble(a, "temperature", 1.0);
    }
    sampling.excluded = s.suppress;
    sampling.excludedFirst = s.suppressAtBegin;
    checkSampling(sampling, {"--temperature", "--top-k", "--top-p"});
    GenerationRun run;
    run.options.audio = audio;
    run.stopAt = s.end;
    const auto seed = static_cast<std::uint64_t>(parseInt(a, "seed", 1234));
    const auto g = generateTokens(*loaded.model, prompt, count, sampling, seed, nullptr, run);
    std::string text;
    nlohmann::ordered_json tokens = nlohmann::json::array();
    for (std::size_t i = 0; i < g.ids.size(); ++i) {
        tokens.push_back(tok->pieceOf(g.ids[i]));
        if (g.ids[i] < s.end)
            text += tok->textOf(g.ids[i]);
    }
    std::vector<std::int32_t> sequence = prompt;
    sequence.insert(sequence.end(), g.ids.begin(), g.ids.end());
    nlohmann::ordered_json out;
    out["prompt_ids"] = prompt;
    out["ids"] = g.ids;
    out["sequences"] = sequence;
    out["tokens"] = tokens;
    out["text"] = bytesSpelled(text);
    out["p"] = g.probabilities;
    out["finished"] = g.finished;
    out["seconds"] = audio->seconds;
    std::cout << out.dump(2) << "\n";
    return 0;
}

int cmdAlign(const Args& a, const std::vector<std::string>& builtins)
{
    const auto loaded = loadModel(require(a, "model"), builtins);
    const auto audio = audioOf(a, loaded);
    const auto tok = loadModelTokenizer(loaded);
    const ModelInfo& info = loaded.model->info();
    const SpeechSettings s = readSpeechSettings(loaded.folder, info);
    const Transcript transcript = transcriptArgument(a, loaded, *tok, s);
    const auto heads = parseDecoderHeads(a.has("heads") ? a.options.at("heads") : "", s, info);
    const TranscriptTiming timing = timeTranscript(*loaded.model, audio, transcript, s, heads, tok.get());
    const TranscriptRun& run = timing.run;
    const SpeechAlignment& al = timing.words;
    const int keys = audio->frames / 2;
    const int prompt = static_cast<int>(run.sot.size()) + 1;
    nlohmann::ordered_json out;
    out["audio"] = a.has("audio") ? a.options.at("audio") : a.options.at("features");
    out["seconds"] = audio->seconds;
    out["decoder_input_ids"] = decoderInput(transcript, s);
    out["alignment_heads"] = headsJson(heads);
    out["words"] = wordsJson(al);
    out["jump_times"] = al.jumpTimes;
    out["path"] = pathJson(al.path);
    out["token_timestamps"] = {{"hf448", tokenTimestamps(run.heads, keys, run.frames, 0)},
                               {"hf520", tokenTimestamps(run.heads, keys, run.frames, prompt)}};
    out["head_ranking"] = rankingJson(timing.ranking);
    const std::string& path = require(a, "out");
    writeFileAtomically(path, out.dump(2) + "\n");
    std::cerr << "wrote the timings of " << al.words.size() << " words and a ranking of " << timing.ranking.size() << " heads to "
              << path << "\n";
    return 0;
}

} // namespace attnscope::cli
