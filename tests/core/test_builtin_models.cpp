// The built-in models: they load by name, and the trained Transformer-XL shows what the Transformer-XL paper
// reports about its attention when scanned over WikiText-2 validation text (Sec. 3.3, Figs. 5 and 7).
#include "analysis/head_ablation.h"
#include "analysis/head_atlas.h"
#include "analysis/relpos_scan.h"
#include "analysis/token_predictions.h"
#include "model/model_loader.h"
#include "model/seq2seq.h"
#include "model/vision.h"
#include "image/png_reader.h"
#include "analysis/rollout.h"
#include "run/image_capture.h"
#include "util/text_file.h"
#include "analysis/attention_grid.h"
#include "run/generation.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "tokenize/tokenizer.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>
#include <filesystem>
#include <numeric>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> builtinDirs()
{
    return {(fs::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models").string()};
}

// Pearson correlation of two profiles.
double correlation(const float* a, const float* b, int n)
{
    double ma = 0, mb = 0;
    for (int i = 0; i < n; ++i) {
        ma += a[i];
        mb += b[i];
    }
    ma /= n;
    mb /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < n; ++i) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return sab / std::sqrt(saa * sbb);
}

double meanEntropy(const core::ScanResult& r, const std::string& profile)
{
    double s = 0;
    const auto sum = core::summariseHeads(r, profile);
    for (const auto& h : sum)
        s += h.entropy;
    return s / static_cast<double>(sum.size());
}

// One scan shared by the observation tests (the slow part).
const core::ScanResult& validationScan()
{
    static const core::ScanResult scan = [] {
        const auto m = core::loadModel("builtin:txl-wikitext2", builtinDirs());
        const auto tok = core::loadTokenizer(m.folder);
        core::ScanOptions opt;
        opt.memLen = m.model->info().defaultMemLen;        // the training memory length
        opt.segmentLen = m.model->info().defaultSegmentLen; // the training segment length
        opt.maxTokens = 12000;                              // stable to about 1e-3, a few seconds
        opt.terms = "a,b,d";
        const auto valid = test::testdataDir() / ".." / "data" / "wikitext-2" / "valid.txt";
        return core::scanTextFile(*m.model, *tok, valid.string(), opt);
    }();
    return scan;
}
} // namespace

TEST_CASE("built-in models load by name and are listed", "[builtin]")
{
    const auto names = core::listBuiltinModels(builtinDirs());
    for (const char* n : {"txl-wikitext2", "llama-wikitext2", "heads-1", "heads-2", "heads-3", "heads-4", "heads-5", "heads-6", "heads-7", "heads-8"}) {
        INFO(n);
        CHECK(std::find(names.begin(), names.end(), n) != names.end());
    }
    for (int h = 1; h <= 8; ++h) {
        const auto m = core::loadModel("builtin:heads-" + std::to_string(h), builtinDirs());
        CHECK(m.model->info().heads == h);
        CHECK(m.model->info().layers == 1);
        const auto tok = core::loadTokenizer(m.folder);
        CHECK(tok->kind() == "word-level");
        CHECK(tok->encode("the lobster is blue\n").size() == 5);
    }
    const auto txl = core::loadModel("builtin:txl-wikitext2", builtinDirs());
    CHECK(txl.model->info().layers * txl.model->info().heads >= 32);
    CHECK(fs::exists(fs::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models" / "sample.txt"));
    // The one recipe for a built-in's spec, which every front end uses: a listed name round-trips, a path is none.
    for (const auto& n : names) {
        CHECK(core::isBuiltinSpec(core::builtinSpec(n)));
        CHECK(core::builtinName(core::builtinSpec(n)) == n);
        CHECK(core::resolveModelFolder(core::builtinSpec(n), builtinDirs()).find(n) != std::string::npos);
    }
    CHECK_FALSE(core::isBuiltinSpec("resources/models/txl-wikitext2"));
    CHECK(core::builtinName("resources/models/txl-wikitext2").empty());
    CHECK(core::resolveModelFolder(core::kDefaultBuiltinSpec, builtinDirs()).size() > 0); // the default is installed
}

TEST_CASE("the built-in Llama-family model reproduces its training script's loss", "[builtin][llama]")
{
    // reference.json: the PyTorch training script's mean next-token loss on the first validation tokens, computed
    // with the float16 weights it exported (the file's own tokens, so the tokenizer is not part of this check).
    const auto m = core::loadModel("builtin:llama-wikitext2", builtinDirs());
    CHECK(m.model->info().family == core::ModelFamily::Llama);
    CHECK(m.model->info().kvHeads < m.model->info().heads); // grouped-query attention
    const auto ref = nlohmann::json::parse(test::readBytes(fs::path(m.folder) / "reference.json"));
    const auto ids = ref.at("token_ids").get<std::vector<std::int32_t>>();
    const double loss = core::nextTokenLoss(*m.model, ids, ref.at("segment_length").get<int>());
    CHECK(loss == Approx(ref.at("mean_next_token_loss").get<double>()).epsilon(1e-4));
    // Its word-level vocabulary covers ordinary text.
    const auto tok = core::loadTokenizer(m.folder);
    CHECK(tok->kind() == "word-level");
    CHECK(tok->encode("the game was released in japan\n").size() == 7);
}

// The lessons of docs/teaching.md watch the model's predictions: a placeholder among them would tell the class
// nothing, so the training script never makes <unk> a target.
TEST_CASE("the built-in decoder never predicts its placeholder", "[builtin][llama][lesson]")
{
    const auto m = core::loadModel("builtin:llama-wikitext2", builtinDirs());
    const auto tok = core::loadTokenizer(m.folder);
    const std::int32_t unk = tok->encode("<unk>").front().id;
    REQUIRE(tok->pieceOf(unk) == "<unk>");
    for (const std::string& sentence : {std::string("the war ended in 1945 and the army went home . the war ended in"),
                                        std::string("the game was released in japan and later in europe .")}) {
        const auto c = core::captureText(*m.model, *tok, sentence, {});
        for (int position = 0; position < static_cast<int>(c->tokens.size()); ++position) {
            // The ten bars the Predictions panel draws.
            const auto d = core::distributionOf(core::nextTokenLogits(*m.model, *c, position), 1.0, 10, -1);
            INFO(sentence << " · after token " << position + 1);
            for (const auto& p : d.top)
                CHECK(p.id != unk);
        }
    }
}

TEST_CASE("the built-in stories decoder reproduces its training script's loss and greedy story", "[builtin][llama]")
{
    // reference.json, written by the PyTorch training script from the float16 weights it exported: the loss on the
    // first validation tokens, and the greedy continuation of the model card's prompt (what Generate writes).
    const auto m = core::loadModel("builtin:stories-en", builtinDirs());
    const auto ref = nlohmann::json::parse(test::readBytes(fs::path(m.folder) / "reference.json"));
    const auto ids = ref.at("token_ids").get<std::vector<std::int32_t>>();
    CHECK(core::nextTokenLoss(*m.model, ids, ref.at("segment_length").get<int>()) ==
          Approx(ref.at("mean_next_token_loss").get<double>()).epsilon(1e-4));
    const auto& greedy = ref.at("greedy");
    const auto prompt = greedy.at("prompt_ids").get<std::vector<std::int32_t>>();
    const auto expected = greedy.at("continuation_ids").get<std::vector<std::int32_t>>();
    const auto written = core::generateTokens(*m.model, prompt, static_cast<int>(expected.size()), core::Sampling{}, 1);
    CHECK(written.ids == expected);
    // The story is made of the vocabulary's words: no <unk>, nothing a class cannot read.
    const auto tok = core::loadTokenizer(m.folder);
    const auto unk = core::controlTokenIds(*tok);
    for (const auto id : written.ids)
        CHECK(std::find(unk.begin(), unk.end(), id) == unk.end());
    CHECK(tok->encode("Once upon a time , there was a little rabbit named Tom .").size() == 13);
}

TEST_CASE("paper observation: attention concentrates on nearby tokens", "[builtin][paper]")
{
    const auto& r = validationScan();
    const auto avg = r.average("full");
    const int D = r.distances, heads = r.layers * r.heads;
    // Mass at distances 0..9, averaged over heads, against uniform attention over the visible keys
    // (a query at position i of a segment after the first sees mem_len + i + 1 keys).
    double near = 0;
    for (int h = 0; h < heads; ++h)
        for (int d = 0; d < 10; ++d)
            near += avg[static_cast<std::size_t>(h * D + d)];
    near /= heads;
    const int mem = std::stoi(r.metadata.at("mem_len")), seg = std::stoi(r.metadata.at("segment_length"));
    double uniform = 0;
    for (int i = 0; i < seg; ++i)
        uniform += 10.0 / (mem + i + 1);
    uniform /= seg;
    INFO("mean mass at distances < 10: " << near << ", uniform attention would give " << uniform);
    CHECK(near > 3 * uniform);
}

// "Markedly wider": the widest head's profile entropy exceeds the median head's by more than 0.5 nats, i.e. its
// effective width (e^entropy distances) is at least 1.65x the median head's.
TEST_CASE("paper observation: some heads are much wider than the median head", "[builtin][paper]")
{
    const auto s = core::summariseHeads(validationScan(), "full");
    std::vector<double> e;
    for (const auto& h : s)
        e.push_back(h.entropy);
    std::sort(e.begin(), e.end());
    const double median = e[e.size() / 2], widest = e.back();
    const auto& w = s[core::rankByWidth(s).front()];
    INFO("profile entropy: widest head L" << w.layer + 1 << " H" << w.head + 1 << " = " << widest << " nats, median "
                                          << median << " (uniform over the distances: " << std::log(validationScan().distances) << ")");
    CHECK(widest > median + 0.5);
}

TEST_CASE("paper observation: term (b) tracks the full attention more closely than term (a)", "[builtin][paper]")
{
    const auto& r = validationScan();
    const auto full = r.average("full"), a = r.average("term_a"), b = r.average("term_b");
    const int D = r.distances, heads = r.layers * r.heads;
    double ca = 0, cb = 0;
    for (int h = 0; h < heads; ++h) {
        ca += correlation(full.data() + h * D, a.data() + h * D, D);
        cb += correlation(full.data() + h * D, b.data() + h * D, D);
    }
    ca /= heads;
    cb /= heads;
    INFO("mean correlation with the full attention profile: term (a) " << ca << ", term (b) " << cb);
    CHECK(cb > ca);
    CHECK(cb > 0.5);
}

TEST_CASE("paper observation: term (d) is flatter than term (b)", "[builtin][paper]")
{
    const auto& r = validationScan();
    const double eb = meanEntropy(r, "term_b"), ed = meanEntropy(r, "term_d");
    INFO("mean profile entropy: term (b) " << eb << ", term (d) " << ed);
    CHECK(ed > eb);
}

TEST_CASE("the built-in encoder reproduces its training script's masked-token loss and reads BERT's WordPiece",
          "[builtin][encoders]")
{
    // reference.json: a validation window as the training script masked it ([CLS] A [SEP] B [SEP], token types) and
    // the script's mean loss on the masked pieces, computed with the float16 weights it exported.
    const auto m = core::loadModel("builtin:bert-wikitext2", builtinDirs());
    CHECK(m.model->info().family == core::ModelFamily::Bert);
    CHECK_FALSE(m.model->info().can.causal);
    CHECK(m.model->info().can.maskedTokens);
    const auto ref = nlohmann::json::parse(test::readBytes(fs::path(m.folder) / "reference.json"));
    const auto ids = ref.at("input_ids").get<std::vector<std::int32_t>>();
    core::RunOptions options;
    options.tokenTypes = ref.at("token_type_ids").get<std::vector<std::int32_t>>();
    const auto labels = ref.at("labels").get<std::vector<std::int32_t>>();
    const double loss = core::maskedTokenLoss(*m.model, ids, options, labels);
    CHECK(loss == Approx(ref.at("mean_masked_loss").get<double>()).epsilon(1e-4));
    // Its vocab.txt is read as WordPiece because the family says so (the same file would be a word list for a
    // Transformer-XL folder).
    const auto tok = core::loadModelTokenizer(m);
    CHECK(tok->kind() == "WordPiece");
    const auto tokens = tok->encodeWithSpecial("The lobster turned red.");
    REQUIRE(tokens.size() >= 6);
    CHECK(tokens.front().text == "[CLS]");
    CHECK(tokens.back().text == "[SEP]");
    CHECK(core::maskTokenOf(*tok) == "[MASK]");
}

TEST_CASE("the built-in encoder-decoder rewrites dates, its cross-attention following meaning, not position",
          "[builtin][seq2seq]")
{
    const auto m = core::loadModel("builtin:dates-en", builtinDirs());
    const auto& info = m.model->info();
    const auto tok = core::loadModelTokenizer(m);
    const auto target = core::loadModelTargetTokenizer(m);
    const std::int32_t end = info.streams[static_cast<std::size_t>(info.segmentStream())].endToken;
    // The window's translation: the source read beside the target, the target written greedily through the cache.
    auto translate = [&](const std::string& source) {
        core::CaptureOptions o;
        o.streams = core::typedSource(info, *tok, source);
        return core::writeGreedily(*m.model, core::streamTokens(info, info.segmentStream(), *target, ""), 10, *target, o);
    };
    // What a date means decides the expected output, not this program: day, month and year in ISO order.
    const std::vector<std::pair<std::string, std::string>> dates = {
        {"the 26th of November, 2026", "2026 - 11 - 26"}, {"March 3, 1999", "1999 - 03 - 03"},
        {"1 January 2000", "2000 - 01 - 01"},             {"July 4th, 1976", "1976 - 07 - 04"},
        {"31.12.2099", "2099 - 12 - 31"},                 {"the 2nd of february, 1931", "1931 - 02 - 02"}};
    for (const auto& [source, expected] : dates) {
        INFO(source);
        const auto c = translate(source);
        CHECK(core::finishedWriting(*c)); // it ended the sentence: its last row writes the end token
        std::string written;
        for (std::size_t i = 1; i < c->tokens.size(); ++i)
            if (c->tokens[i].id != end)
                written += (written.empty() ? "" : " ") + target->pieceOf(c->tokens[i].id);
        CHECK(written == expected);
    }
    // "the 26th of November, 2026": the year is written first but read last. Averaged over every decoder layer's
    // cross-attention heads, the row that writes the year looks at the year, the month's row at "November", the day's
    // at "26th".
    const auto c = translate("the 26th of November, 2026");
    int cross = 0;
    for (int s = 0; s < info.siteCount(); ++s)
        cross = info.site(s).kind == core::SiteKind::Cross ? s : cross;
    const auto mean = core::attentionGridOfSites(*c, 0, core::sitesLike(info, cross), {}, {});
    const auto& source = c->streamTokens(info.typedReadStream());
    auto mostRead = [&](int row) {
        int best = 0;
        for (int j = 1; j < mean.cols; ++j)
            if (mean.at(row, j) > mean.at(row, best))
                best = j;
        return source[static_cast<std::size_t>(best)].text;
    };
    // Row i writes target token i + 1: "2026" (row 0), "-", "11" (row 2), "-", "26" (row 4).
    CHECK(mostRead(0) == "2026");
    CHECK(mostRead(2) == "November"); // the token as typed (its span in the source)
    CHECK(mostRead(4) == "26th");
}

TEST_CASE("the built-in vision model names the shape in each sample and its CLS looks at it", "[builtin][vision]")
{
    const auto m = core::loadModel("builtin:shapes-vit", builtinDirs());
    const auto& vision = dynamic_cast<const core::VisionModel&>(*m.model);
    const auto pre = core::readPreprocessor(m.folder);
    // What each sample shows and where comes from the drawing (samples.json), not from this program.
    const auto samples = core::readJsonFile((std::filesystem::path(m.folder) / "samples.json").string());
    REQUIRE(samples.size() >= 4);
    for (const auto& s : samples) {
        const std::string shape = s["shape"].get<std::string>();
        INFO(shape);
        auto pixels = std::make_shared<const core::PixelValues>(
            core::preprocessImage(core::readPng((std::filesystem::path(m.folder) / s["file"].get<std::string>()).string()), pre));
        const auto p = vision.classify(*pixels);
        const auto best = static_cast<std::size_t>(std::max_element(p.begin(), p.end()) - p.begin());
        CHECK(vision.config().labels.at(best) == shape);
        // CLS's rollout over the patches: the patches whose centres lie in the shape's box take far more than their
        // share of the picture.
        const auto rollout = core::attentionRollout(*core::capturePicture(vision, pixels), 0);
        const auto grid = vision.gridOf(pixels->height, pixels->width);
        const int P = vision.config().specialTokens();
        double inside = 0, total = 0, area = 0;
        const auto box = s["box"].get<std::vector<double>>();
        for (int r = 0; r < grid.rows; ++r)
            for (int c = 0; c < grid.cols; ++c) {
                const double cx = (c + 0.5) / grid.cols, cy = (r + 0.5) / grid.rows, v = rollout.at(0, P + r * grid.cols + c);
                const bool in = cx >= box[0] && cx <= box[2] && cy >= box[1] && cy <= box[3];
                total += v;
                inside += in ? v : 0;
                area += in ? 1 : 0;
            }
        CHECK(inside / total > 2.0 * area / (grid.rows * grid.cols));
    }
}
