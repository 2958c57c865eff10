// Whisper against its reference data (../shared/testdata/whisper-*): the log-mel front end, the encoder and the
// teacher-forced decoder from the stored features (and end to end from the recording), a greedy generation with the
// generation config's suppressions step by step, OpenAI's word-timing recipe with its intermediates, Hugging Face's
// token timestamps of two releases, and each head's own alignment path.
#include "analysis/word_timing.h"
#include "audio/audio_file.h"
#include "audio/log_mel.h"
#include "audio/speech_settings.h"
#include "model/model_loader.h"
#include "model/seq2seq.h"
#include "run/generation.h"
#include "run/reference_dump.h"
#include "analysis/speech_alignment.h"
#include "run/speech_run.h"
#include "tokenize/tokenizer.h"
#include "reference_check.h"
#include "test_support.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

namespace fs = std::filesystem;
using namespace attnscope;

namespace {

void checkAgainst(const fs::path& expected, const std::vector<core::OutputTensor>& out)
{
    test::checkAgainstReference(expected, out);
}

const core::OutputTensor& tensor(const std::vector<core::OutputTensor>& all, const std::string& name)
{
    for (const auto& t : all)
        if (t.name == name)
            return t;
    FAIL("no tensor " << name);
    throw std::logic_error(name);
}

std::vector<int> asInts(const core::OutputTensor& t)
{
    return std::vector<int>(t.data.begin(), t.data.end());
}

void checkClose(const std::vector<float>& actual, const core::OutputTensor& expected, double tol, const std::string& what)
{
    const core::OutputTensor a{expected.name, expected.shape, actual};
    const auto c = test::compare(expected, a, tol, 0);
    INFO(what << ": " << c.describe(expected.name));
    CHECK(c.ok);
}

// The case's input with the stored features instead of the recording (the README: model tests start from them).
nlohmann::json inputWithStoredFeatures(const fs::path& dir)
{
    auto input = core::readJsonFile((dir / "input.json").string());
    input.erase("audio");
    input["input_features"] = (dir / "features.safetensors").string();
    return input;
}

struct Case {
    fs::path dir;
    core::LoadedModel loaded;
    nlohmann::json input;
    std::shared_ptr<const core::AudioFeatures> features;
    core::SpeechSettings settings;
};

Case openCase(const fs::path& dir)
{
    Case c{dir, core::loadModel(dir.string()), core::readJsonFile((dir / "input.json").string()), {}, {}};
    c.features = core::readAudioFeatures((dir / "features.safetensors").string());
    c.settings = core::readSpeechSettings(dir.string(), c.loaded.model->info());
    return c;
}

// The teacher-forced run of the case's transcript with `heads` (the stored features).
core::TranscriptRun transcriptRunOf(const Case& c, const std::vector<core::DecoderHead>& heads,
                                    const core::Tokenizer* tok)
{
    const auto ids = c.input["decoder_input_ids"].get<std::vector<std::int32_t>>();
    const auto t = core::transcriptOf(ids, {}, c.settings);
    return core::transcriptRun(*c.loaded.model, c.features, t, c.settings, heads, tok);
}

// Each forward of a generation: the prompt's every row, then each new token's row (generation.safetensors).
class StepRows final : public core::AttentionObserver {
public:
    StepRows(const core::ModelInfo& info, const core::Sampling& sampling)
        : m_info(info)
        , m_sampling(sampling)
    {
    }
    bool wantLogits() const override { return true; }
    void onLayer(const core::LayerView& l) override
    {
        const auto& site = m_info.site(l.site);
        if (site.queryStream != m_info.segmentStream())
            return;
        const std::string name = "step" + std::to_string(step) + ".layer" + std::to_string(l.layer) +
                                 (site.kind == core::SiteKind::Cross ? ".cross_attn" : ".self_attn");
        const int first = step == 0 ? 0 : l.qlen - 1;
        core::OutputTensor t{name, step == 0 ? core::Shape{l.heads, l.qlen, l.klen} : core::Shape{l.heads, l.klen}, {}};
        for (int h = 0; h < l.heads; ++h)
            for (int i = first; i < l.qlen; ++i) {
                const float* row = l.attnProb + (static_cast<std::size_t>(h) * l.qlen + i) * l.klen;
                t.data.insert(t.data.end(), row, row + l.klen);
            }
        out.push_back(std::move(t));
    }
    void onSegmentEnd(const core::SegmentEndView& e) override
    {
        const float* row = e.logits + static_cast<std::size_t>(e.qlen - 1 - e.firstLogitRow) * e.vocab;
        const std::span<const float> logits(row, static_cast<std::size_t>(e.vocab));
        out.push_back({"step" + std::to_string(step) + ".logits", {e.vocab}, std::vector<float>(logits.begin(), logits.end())});
        out.push_back({"step" + std::to_string(step) + ".scores", {e.vocab}, core::processedLogits(logits, m_sampling, step == 0)});
        ++step;
    }
    std::vector<core::OutputTensor> out;
    int step = 0;

private:
    const core::ModelInfo& m_info;
    const core::Sampling& m_sampling;
};

} // namespace

TEST_CASE("Whisper's log-mel front end matches Hugging Face's feature extractor", "[whisper][reference]")
{
    const auto cases = test::speechReferenceCases();
    REQUIRE(!cases.empty());
    for (const auto& dir : cases) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto expected = test::loadAll((dir / "features.safetensors").string());
            const auto settings = core::readMelSettings(dir.string(), 0 + static_cast<int>(tensor(expected, "input_features").shape[0]));
            const auto bank = core::melFilterBank(settings);
            const auto& hf = tensor(expected, "mel_filters_hf");
            CHECK(test::compare(hf, {hf.name, hf.shape, std::vector<float>(bank.begin(), bank.end())}, 1e-7, 0).ok);
            const auto audio = core::readAudioFile((dir / "audio.wav").string(), settings.sampleRate, settings.windowSeconds());
            const auto f = core::logMelFeatures(audio.samples, settings);
            checkClose(f.values, tensor(expected, "input_features"), 1e-4, "input_features");
            CHECK(f.contentFrames == static_cast<int>(tensor(expected, "num_frames").data[0]));
        }
    }
}

TEST_CASE("Whisper reproduces its encoder and teacher-forced decoder from the stored features", "[whisper][reference]")
{
    for (const auto& dir : test::speechReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto& info = loaded.model->info();
            CHECK(info.can.audio);
            CHECK(info.streams.front().name == "audio");
            const auto inputPath = (dir / "input.json").string();
            const auto out = core::dumpReference(*loaded.model, inputWithStoredFeatures(dir), inputPath);
            checkAgainst(dir / "expected.safetensors", out);
            checkAgainst(dir / "expected_encoder.safetensors", out);
        }
    }
}

TEST_CASE("Whisper end to end from the recording stays within the reference's tolerances", "[whisper][reference]")
{
    for (const auto& dir : test::speechReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto inputPath = (dir / "input.json").string();
            checkAgainst(dir / "expected.safetensors",
                         core::dumpReference(*loaded.model, core::readJsonFile(inputPath), inputPath));
        }
    }
}

TEST_CASE("Whisper's greedy generation with the suppressions matches the reference step by step", "[whisper][reference]")
{
    for (const auto& dir : test::speechReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const Case c = openCase(dir);
            const auto gen = core::readJsonFile((dir / "generation.json").string());
            const auto prompt = core::speechPrompt(c.settings, "en", "transcribe");
            CHECK(prompt == gen["prompt_ids"].get<std::vector<std::int32_t>>());
            core::Sampling sampling;
            sampling.excluded = c.settings.suppress;
            sampling.excludedFirst = c.settings.suppressAtBegin;
            StepRows steps(c.loaded.model->info(), sampling);
            core::GenerationRun run;
            run.options.audio = c.features;
            run.observer = &steps;
            run.stopAt = c.settings.end;
            const auto expectedIds = gen["generated_ids"].get<std::vector<std::int32_t>>();
            const auto g = core::generateTokens(*c.loaded.model, prompt, static_cast<int>(expectedIds.size()), sampling,
                                                0, nullptr, run);
            CHECK(g.ids == expectedIds);
            checkAgainst(dir / "generation.safetensors", steps.out);
        }
    }
}

TEST_CASE("Whisper's word timings follow OpenAI's find_alignment step by step", "[whisper][reference]")
{
    for (const auto& dir : test::speechReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const Case c = openCase(dir);
            const auto tok = core::loadModelTokenizer(c.loaded);
            const auto expected = test::loadAll((dir / "alignment.safetensors").string());
            const auto json = core::readJsonFile((dir / "alignment.json").string());
            std::vector<core::DecoderHead> heads;
            for (const auto& h : c.input["alignment_heads"])
                heads.push_back({h[0].get<int>(), h[1].get<int>()});
            CHECK(c.settings.alignmentHeads == heads);
            const auto run = transcriptRunOf(c, heads, tok.get());
            CHECK(run.frames == c.input["dtw_frames"].get<int>());
            const auto al = core::alignWords(run);
            for (const char* step : {"resoftmax", "standardized", "filtered"})
                checkClose(std::vector<float>(step == std::string("resoftmax") ? al.steps.resoftmax
                                              : step == std::string("standardized") ? al.steps.standardized
                                                                                      : al.steps.filtered),
                           tensor(expected, std::string("alignment.") + step), 1e-4, step);
            checkClose(al.steps.matrix, tensor(expected, "alignment.matrix"), 1e-4, "matrix");
            CHECK(al.path.text == asInts(tensor(expected, "alignment.text_indices")));
            CHECK(al.path.time == asInts(tensor(expected, "alignment.time_indices")));
            // The path is exact given the reference's own matrix.
            const auto& m = tensor(expected, "alignment.matrix");
            std::vector<double> cost(m.data.size());
            std::transform(m.data.begin(), m.data.end(), cost.begin(), [](float v) { return -static_cast<double>(v); });
            const auto path = core::dynamicTimeWarp(cost, static_cast<int>(m.shape[0]), static_cast<int>(m.shape[1]));
            CHECK(path.time == asInts(tensor(expected, "alignment.time_indices")));
            const auto& words = json["words"];
            REQUIRE(al.words.size() == words.size());
            for (std::size_t w = 0; w < words.size(); ++w) {
                INFO("word " << w);
                CHECK(al.words[w].word == words[w]["word"].get<std::string>());
                CHECK(al.words[w].tokens == words[w]["tokens"].get<std::vector<std::int32_t>>());
                CHECK(al.words[w].start == Approx(words[w]["start"].get<double>()).margin(1e-6));
                CHECK(al.words[w].end == Approx(words[w]["end"].get<double>()).margin(1e-6));
                CHECK(al.words[w].probability == Approx(words[w]["probability"].get<double>()).margin(1e-6));
            }
        }
    }
}

TEST_CASE("Whisper's token timestamps follow Hugging Face's two recipes", "[whisper][reference]")
{
    for (const auto& dir : test::speechReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const Case c = openCase(dir);
            const auto expected = test::loadAll((dir / "alignment.safetensors").string());
            const auto run = transcriptRunOf(c, c.settings.alignmentHeads, nullptr);
            const int keys = c.features->frames / 2, prompt = static_cast<int>(run.sot.size()) + 1;
            const int samplesFrames = (c.input["n_samples"].get<int>() + 159) / 160; // v5's count from the mask
            auto check = [&](const std::string& name, const std::vector<double>& actual) {
                const auto& e = tensor(expected, "token_timestamps." + name);
                checkClose(std::vector<float>(actual.begin(), actual.end()), e, 1e-6, name);
            };
            check("hf448.teacher_forced", core::tokenTimestamps(run.heads, keys, run.frames, 0));
            check("hf520.teacher_forced", core::tokenTimestamps(run.heads, keys, run.frames, prompt));
            check("hf520.teacher_forced_masknf", core::tokenTimestamps(run.heads, keys, samplesFrames / 2, prompt));
            // The generation's rows: a teacher-forced pass over its sequence without the last token (which has no row).
            const auto gen = core::readJsonFile((dir / "generation.json").string());
            auto sequence = gen["sequences"].get<std::vector<std::int32_t>>();
            sequence.pop_back();
            core::RunOptions options;
            options.audio = c.features;
            const auto rows = core::crossAttentionOf(*c.loaded.model, options, sequence, c.settings.alignmentHeads);
            check("hf448.generate", core::tokenTimestamps(rows.heads, keys, run.frames, 0));
            check("hf520.generate", core::tokenTimestamps(rows.heads, keys, samplesFrames / 2, prompt));
            check("hf520.generate_nf", core::tokenTimestamps(rows.heads, keys, run.frames, prompt));
        }
    }
}

TEST_CASE("Each Whisper head's own alignment path matches the reference, and the ranking scores it", "[whisper][reference]")
{
    for (const auto& dir : test::speechReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const Case c = openCase(dir);
            const auto expected = test::loadAll((dir / "alignment.safetensors").string());
            const auto json = core::readJsonFile((dir / "alignment.json").string());
            const auto all = core::everyDecoderHead(c.loaded.model->info());
            auto run = transcriptRunOf(c, all, nullptr);
            const auto everyHead = run.heads;
            const auto reference = core::jumpFrames(core::alignWords(transcriptRunOf(c, c.settings.alignmentHeads, nullptr)).path);
            const auto ranking = core::rankAlignmentHeads(run, everyHead, reference);
            REQUIRE(ranking.size() == all.size());
            for (const auto& entry : json["per_head"]) {
                const core::DecoderHead head{entry["layer"].get<int>(), entry["head"].get<int>()};
                const std::string p = "head.l" + std::to_string(head.layer) + "h" + std::to_string(head.head) + ".";
                INFO(p);
                const auto it = std::find_if(ranking.begin(), ranking.end(), [&](const auto& r) { return r.head == head; });
                REQUIRE(it != ranking.end());
                CHECK(it->path.text == asInts(tensor(expected, p + "text_indices")));
                CHECK(it->path.time == asInts(tensor(expected, p + "time_indices")));
                CHECK(it->jumps == entry["jump_frames"].get<std::vector<int>>());
                CHECK(it->pathScore == Approx(entry["path_score"].get<double>()).margin(1e-4));
                CHECK(it->meanFrameError == Approx(entry["mean_abs_frame_diff_to_combined"].get<double>()).margin(1e-9));
            }
            for (std::size_t k = 1; k < ranking.size(); ++k)
                CHECK(ranking[k - 1].meanFrameError <= ranking[k].meanFrameError);
        }
    }
}

TEST_CASE("Whisper refuses a run without audio and audio of the wrong shape, naming what it reads", "[whisper]")
{
    for (const auto& dir : test::speechReferenceCases()) {
        const auto loaded = core::loadModel(dir.string());
        const std::vector<std::int32_t> ids{loaded.model->info().streams[1].startToken};
        core::RunOptions none;
        CHECK_THAT(test::errorOf([&] { loaded.model->newState(none); }), Catch::Contains("Give the audio"));
        auto wrong = std::make_shared<core::AudioFeatures>();
        wrong->mels = 80;
        wrong->frames = 100;
        wrong->values.assign(8000, 0.0f);
        core::RunOptions bad;
        bad.audio = wrong;
        CHECK_THAT(test::errorOf([&] { loaded.model->newState(bad); }), Catch::Contains("80 x 100"));
        CHECK_THAT(test::errorOf([&] { core::readAudioFile((dir / "config.json").string(), 16000, 30); }),
                   Catch::Contains("config.json"));
    }
}

namespace {
// A 16-bit PCM WAV file of interleaved samples (-1 .. 1).
void writeWav(const fs::path& path, const std::vector<float>& interleaved, int rate, int channels)
{
    std::string b;
    auto u32 = [&](std::uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    auto u16 = [&](std::uint16_t v) { b.append(reinterpret_cast<const char*>(&v), 2); };
    const auto bytes = static_cast<std::uint32_t>(interleaved.size() * 2);
    b += "RIFF";
    u32(36 + bytes);
    b += "WAVEfmt ";
    u32(16);
    u16(1);
    u16(static_cast<std::uint16_t>(channels));
    u32(static_cast<std::uint32_t>(rate));
    u32(static_cast<std::uint32_t>(rate * channels * 2));
    u16(static_cast<std::uint16_t>(channels * 2));
    u16(16);
    b += "data";
    u32(bytes);
    for (const float v : interleaved)
        u16(static_cast<std::uint16_t>(static_cast<std::int16_t>(std::lround(v * 32767.0f))));
    test::writeBytes(path, b);
}
} // namespace

TEST_CASE("the front end pads, cuts and hears silence as the feature extractor does", "[whisper][audio]")
{
    core::MelSettings s;
    // Silence: every bin at the 1e-10 clamp, so the floor is the clamp itself: (-10 + 4) / 4 everywhere.
    const auto silent = core::logMelFeatures(std::vector<float>(8000, 0.0f), s);
    CHECK(std::all_of(silent.values.begin(), silent.values.end(), [](float v) { return v == -1.5f; }));
    CHECK(silent.contentFrames == 50);
    // A recording over 30 s is cut to the window first: what follows it changes nothing.
    std::vector<float> tone(40 * 16000);
    for (std::size_t i = 0; i < tone.size(); ++i)
        tone[i] = 0.3f * static_cast<float>(std::sin(2.0 * 3.14159265358979 * 440.0 * static_cast<double>(i) / 16000.0)) *
                  (i < 480000 ? 1.0f : 3.0f);
    const auto whole = core::logMelFeatures(tone, s);
    const auto cut = core::logMelFeatures(std::span<const float>(tone).first(480000), s);
    CHECK(whole.values == cut.values);
    CHECK(whole.contentFrames == 3000);
}

TEST_CASE("a 44.1 kHz stereo recording is down-mixed and resampled to the model's 16 kHz", "[whisper][audio]")
{
    test::TempDir tmp;
    const int rate = 44100;
    std::vector<float> stereo;
    for (int i = 0; i < rate; ++i) { // one second: a 440 Hz tone in the left channel, its half in the right
        const float v = 0.5f * static_cast<float>(std::sin(2.0 * 3.14159265358979 * 440.0 * i / rate));
        stereo.push_back(v);
        stereo.push_back(0.5f * v);
    }
    writeWav(tmp / "stereo.wav", stereo, rate, 2);
    const auto audio = core::readAudioFile((tmp / "stereo.wav").string(), 16000, 30.0);
    CHECK(std::abs(static_cast<long>(audio.samples.size()) - 16000) <= 2);
    CHECK(audio.fileSamples == 16000);
    CHECK(audio.fileSeconds == Approx(1.0));
    // The mix is the mean of the channels: a tone of amplitude 0.375, kept by the resampler.
    const float peak = *std::max_element(audio.samples.begin() + 100, audio.samples.end() - 100);
    CHECK(peak == Approx(0.375f).margin(0.005f));
    test::writeBytes(tmp / "empty.wav", "RIFF\x24\0\0\0WAVEfmt ");
    CHECK_THAT(test::errorOf([&] { core::readAudioFile((tmp / "empty.wav").string(), 16000, 30); }),
               Catch::Contains("empty.wav"));
}

TEST_CASE("a preprocessor config that would size a huge transform is refused by key before anything is allocated",
          "[whisper][audio]")
{
    CHECK_THAT(test::errorOf([] { core::parseMelSettings({{"n_fft", 1 << 20}}, "p.json"); }), Catch::Contains("n_fft"));
    CHECK_THAT(test::errorOf([] { core::parseMelSettings({{"hop_length", 1}, {"n_fft", 400}}, "p.json"); }),
               Catch::Contains("hop_length"));
    CHECK_THAT(test::errorOf([] { core::parseMelSettings({{"feature_size", 100000}}, "p.json"); }),
               Catch::Contains("feature_size"));
    CHECK_THAT(test::errorOf([] { core::parseMelSettings({{"n_samples", -3}}, "p.json"); }), Catch::Contains("n_samples"));
    CHECK(core::parseMelSettings({{"feature_size", 128}}, "p.json").mels == 128);
}

TEST_CASE("a recording whose header claims more than it holds costs what it holds", "[whisper][audio]")
{
    // 64 channels at 768 kHz and 2 GB of data said, 100 bytes there: read in blocks, refused as empty, never sized
    // by the header.
    test::TempDir tmp;
    std::string b = "RIFF\xff\xff\xff\x7f" "WAVEfmt ";
    auto u32 = [&](std::uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); };
    auto u16 = [&](std::uint16_t v) { b.append(reinterpret_cast<const char*>(&v), 2); };
    u32(16), u16(1), u16(64), u32(768000), u32(768000 * 128), u16(128), u16(16);
    b += "data";
    u32(0x7ffffff0);
    b += std::string(100, '\0');
    test::writeBytes(tmp / "huge.wav", b);
    CHECK_THAT(test::errorOf([&] { core::readAudioFile((tmp / "huge.wav").string(), 16000, 30); }),
               Catch::Contains("huge.wav"));
}
