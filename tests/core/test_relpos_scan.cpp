// Corpus scan: profiles equal the averages computed directly from the reference tensors; shards merge exactly;
// cancellation leaves a consistent partial result; bad options are refused clearly.
#include "analysis/relpos_scan.h"
#include "model/model_loader.h"
#include "model/nn_ops.h"
#include "test_support.h"
#include "tokenize/word_tokenizer.h"
#include "util/error.h"
#include "util/stop_token.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <cmath>
#include <nlohmann/json.hpp>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {

const core::OutputTensor& tensor(const std::vector<core::OutputTensor>& all, const std::string& name)
{
    for (const auto& t : all)
        if (t.name == name)
            return t;
    FAIL("reference tensor missing: " << name);
    throw;
}

// The Fig. 5 / Fig. 7 averages straight from the reference tensors, written independently of the scanner:
// for every visible (query, key) pair add the probability at distance i + mlen - j; divide by pairs per distance.
std::vector<double> directProfile(const fs::path& dir, int L, int H, int D, const char* term)
{
    const auto ref = test::loadAll((dir / "expected.safetensors").string());
    std::vector<double> sum(static_cast<std::size_t>(L) * H * D, 0.0), count(static_cast<std::size_t>(D), 0.0);
    for (int s = 0;; ++s) {
        const std::string seg = "seg" + std::to_string(s) + ".";
        if (std::none_of(ref.begin(), ref.end(), [&](const auto& t) { return t.name == seg + "mask"; }))
            break;
        const auto& mask = tensor(ref, seg + "mask");
        const int q = static_cast<int>(mask.shape[0]), k = static_cast<int>(mask.shape[1]), mlen = k - q;
        for (int i = 0; i < q; ++i)
            for (int j = 0; j < k; ++j)
                if (mask.data[static_cast<std::size_t>(i * k + j)] == 0)
                    count[static_cast<std::size_t>(i + mlen - j)] += 1;
        for (int l = 0; l < L; ++l) {
            const auto& P = tensor(ref, seg + "layer" + std::to_string(l) + "." + (term ? term : "attn_prob"));
            for (int h = 0; h < H; ++h)
                for (int i = 0; i < q; ++i) {
                    std::vector<double> row(static_cast<std::size_t>(k), 0.0);
                    double mx = -1e300, z = 0;
                    for (int j = 0; j < k; ++j) {
                        if (mask.data[static_cast<std::size_t>(i * k + j)] != 0)
                            continue;
                        row[static_cast<std::size_t>(j)] = P.data[static_cast<std::size_t>((h * q + i) * k + j)];
                        mx = std::max(mx, row[static_cast<std::size_t>(j)]);
                    }
                    if (term) { // softmax of the term alone over the visible keys
                        for (int j = 0; j < k; ++j)
                            if (mask.data[static_cast<std::size_t>(i * k + j)] == 0)
                                z += std::exp(row[static_cast<std::size_t>(j)] - mx);
                        for (int j = 0; j < k; ++j)
                            row[static_cast<std::size_t>(j)] = std::exp(row[static_cast<std::size_t>(j)] - mx) / z;
                    }
                    for (int j = 0; j < k; ++j)
                        if (mask.data[static_cast<std::size_t>(i * k + j)] == 0)
                            sum[(static_cast<std::size_t>(l) * H + h) * D + static_cast<std::size_t>(i + mlen - j)] +=
                                row[static_cast<std::size_t>(j)];
                }
        }
    }
    for (std::size_t x = 0; x < sum.size(); ++x)
        sum[x] = count[x % static_cast<std::size_t>(D)] > 0 ? sum[x] / count[x % static_cast<std::size_t>(D)] : 0;
    return sum;
}

core::ScanOptions optionsFor(const nlohmann::json& input)
{
    core::ScanOptions o;
    o.memLen = input["mem_len"].get<int>();
    o.segmentLen = input["segment_length"].get<int>();
    o.sameLength = input["same_length"].get<bool>();
    o.clampLen = input["clamp_len"].get<int>();
    return o;
}

// txl-tiny plus a word vocabulary, so text files can be scanned.
fs::path wordModel(const test::TempDir& tmp)
{
    const auto dir = tmp / "model";
    fs::create_directories(dir);
    for (const char* f : {"config.json", "model.safetensors"})
        fs::copy_file(test::testdataDir() / "txl-tiny" / f, dir / f);
    std::string vocab = "<eos>\n<unk>\n";
    for (int i = 2; i < 40; ++i)
        vocab += "w" + std::to_string(i) + "\n";
    test::writeBytes(dir / "vocab.txt", vocab);
    return dir;
}

std::string wordText(int lines, unsigned seed)
{
    std::string text;
    unsigned x = seed;
    for (int l = 0; l < lines; ++l) {
        const int n = 3 + static_cast<int>(l % 7);
        for (int w = 0; w < n; ++w) {
            x = x * 1103515245u + 12345u;
            text += "w" + std::to_string(2 + (x >> 16) % 38) + (w + 1 < n ? " " : "");
        }
        text += "\n";
    }
    return text;
}

} // namespace

TEST_CASE("scan profiles equal the averages computed directly from the reference tensors", "[scan][reference]")
{
    for (const auto& dir : test::referenceCases("txl")) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto input = core::readJsonFile((dir / "input.json").string());
            const auto m = core::loadModel(dir.string());
            // With the terms, every layer's probabilities are kept for the scan; the full attention alone is summed
            // row block by row block as the attention computes it.
            for (const char* terms : {"a,b,c,d", ""}) {
                auto opt = optionsFor(input);
                opt.terms = terms;
                core::RelposScanner scanner(*m.model, opt);
                scanner.feed(input["token_ids"].get<std::vector<std::int32_t>>());
                const auto r = scanner.finish();
                const auto& info = m.model->info();
                REQUIRE(r.distances == opt.memLen + opt.segmentLen);
                REQUIRE(r.tokens == static_cast<std::int64_t>(input["token_ids"].size()));
                const std::pair<const char*, const char*> profiles[] = {
                    {"full", nullptr}, {"term_a", "term_a"}, {"term_b", "term_b"}, {"term_c", "term_c"}, {"term_d", "term_d"}};
                for (const auto& [name, term] : profiles) {
                    if (*terms == '\0' && term)
                        continue;
                    const auto expected = directProfile(dir, info.layers, info.heads, r.distances, term);
                    const auto actual = r.average(name);
                    REQUIRE(actual.size() == expected.size());
                    double worst = 0;
                    for (std::size_t i = 0; i < actual.size(); ++i)
                        worst = std::max(worst, std::abs(actual[i] - expected[i]));
                    INFO("terms \"" << terms << "\", " << name << ": max |scan - direct| = " << worst);
                    CHECK(worst < 2e-5);
                }
            }
        }
    }
}

TEST_CASE("rows summed as the attention computes them equal the kept probabilities' sums, over several row blocks",
          "[scan]")
{
    // Segments of 300 queries: three row blocks per head, which the attention's threads may compute at the same time.
    // Asking for a term or band profile keeps every layer's probabilities for the scan instead; the full profile and
    // the per-head statistics must not depend on which way they were summed (a model without terms stacks heads
    // that share keys in one product, which may round the last bit differently).
    struct Case {
        const char* model;
        int memLen;
        const char* keptTerms;
    };
    for (const auto& c : {Case{"txl-tiny", 40, "a"}, Case{"llama-gqa", 0, "1"}}) {
        DYNAMIC_SECTION(c.model)
        {
            const auto m = core::loadModel((test::testdataDir() / c.model).string());
            std::vector<std::int32_t> ids(700);
            for (std::size_t t = 0; t < ids.size(); ++t)
                ids[t] = static_cast<std::int32_t>((t * 7919 + 13) % static_cast<std::size_t>(m.model->info().vocabSize));
            auto scan = [&](const char* terms) {
                core::ScanOptions opt;
                opt.segmentLen = 300;
                opt.memLen = c.memLen;
                opt.terms = terms;
                core::RelposScanner scanner(*m.model, opt);
                scanner.feed(ids);
                return scanner.finish();
            };
            const auto asComputed = scan("");
            const auto fromKept = scan(c.keptTerms);
            const auto& a = asComputed.sums.at("full");
            const auto& b = fromKept.sums.at("full");
            REQUIRE(a.size() == b.size());
            double worst = 0;
            for (std::size_t i = 0; i < a.size(); ++i)
                worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
            INFO("largest relative difference of the full sums: " << worst);
            CHECK(worst < 1e-6);
            for (const auto& [name, mean] : fromKept.headMeans) {
                CHECK(asComputed.headMeans.at(name).queries == mean.queries);
                for (std::size_t i = 0; i < mean.sum.size(); ++i)
                    CHECK(asComputed.headMeans.at(name).sum[i] == Approx(mean.sum[i]).epsilon(1e-6).margin(1e-9));
            }
        }
    }
}

TEST_CASE("shards run exactly the segments of one scan: chunks merge to the single scan's result", "[scan][shards]")
{
    test::TempDir tmp;
    // A causal model in chunk mode: every chunk is a text of its own, so sharding changes nothing but the order of sums.
    const auto model = (test::testdataDir() / "llama-gqa" / "model-f32.gguf").string();
    const auto m = core::loadModel(model);
    const auto tok = core::loadTokenizer(m.tokenizerSource());
    const auto textPath = (tmp / "corpus.txt").string();
    {
        std::ofstream f(textPath);
        for (int i = 0; i < 60; ++i)
            f << "line " << i << " of the corpus: the quick brown fox " << (i % 7 ? "jumps" : "\n") << " over " << i * 13 << "\n";
    }
    core::ScanOptions opt;
    opt.segmentLen = 16;
    const auto single = core::scanTextFile(*m.model, *tok, textPath, opt);
    const int N = 4;
    std::vector<std::string> files;
    for (int i = 1; i <= N; ++i) {
        const auto r = core::scanTextFile(*m.model, *tok, textPath, opt, i, N);
        REQUIRE(r.metadata.at("shard") == std::to_string(i) + "/" + std::to_string(N));
        files.push_back((tmp / ("shard" + std::to_string(i) + ".st")).string());
        r.save(files.back());
    }
    const auto merged = core::mergeScanFiles(files);
    CHECK(merged.tokens == single.tokens);
    CHECK(merged.count == single.count);
    CHECK(merged.metadata.at("shard") == "all 4");
    for (const auto& name : single.profileNames) {
        const auto& a = merged.sums.at(name);
        const auto& b = single.sums.at(name);
        for (std::size_t i = 0; i < a.size(); ++i)
            REQUIRE(a[i] == Approx(b[i]).epsilon(1e-9));
    }
    for (const auto& [name, mean] : single.headMeans) {
        CHECK(merged.headMeans.at(name).queries == mean.queries);
        for (std::size_t i = 0; i < mean.sum.size(); ++i)
            REQUIRE(merged.headMeans.at(name).sum[i] == Approx(mean.sum[i]).epsilon(1e-9));
    }
    // The order of the files does not matter; the merge of a merge is refused nothing.
    CHECK(core::mergeScanFiles({files[2], files[0], files[3], files[1]}).tokens == single.tokens);

    // A missing shard, a shard given twice, a shard of another corpus: refused by name.
    CHECK_THROWS_WITH(core::mergeScanFiles({files[0], files[1], files[3]}), Catch::Contains("shards 3 of 4 are missing"));
    CHECK_THROWS_WITH(core::mergeScanFiles({files[0], files[1], files[1], files[2], files[3]}),
                      Catch::Contains("shard2.st") && Catch::Contains("given twice"));
    {
        std::ofstream f(textPath, std::ios::app);
        f << "one more line\n";
    }
    const auto otherCorpus = (tmp / "other.st").string();
    core::scanTextFile(*m.model, *tok, textPath, opt, 2, N).save(otherCorpus);
    CHECK_THROWS_WITH(core::mergeScanFiles({files[0], otherCorpus, files[2], files[3]}),
                      Catch::Contains("other.st") && Catch::Contains("another corpus"));
    const auto otherN = (tmp / "n3.st").string();
    core::scanTextFile(*m.model, *tok, textPath, opt, 1, 3).save(otherN);
    CHECK_THROWS_WITH(core::mergeScanFiles({files[0], otherN}), Catch::Contains("n3.st"));
    // Different settings: refused as before.
    opt.segmentLen = 8;
    const auto otherSettings = (tmp / "seg8.st").string();
    core::scanTextFile(*m.model, *tok, textPath, opt).save(otherSettings);
    opt.segmentLen = 16;
    const auto sameText = (tmp / "seg16.st").string();
    core::scanTextFile(*m.model, *tok, textPath, opt).save(sameText);
    CHECK_THROWS_WITH(core::mergeScanFiles({sameText, otherSettings}), Catch::Contains("seg8.st"));
}

TEST_CASE("shards of a Transformer-XL scan cover its token stream exactly", "[scan][shards]")
{
    test::TempDir tmp;
    const auto dir = wordModel(tmp);
    const auto m = core::loadModel(dir.string());
    const auto tok = core::loadTokenizer(dir.string());
    const auto textPath = (tmp / "corpus.txt").string();
    test::writeBytes(textPath, wordText(60, 3));
    core::ScanOptions opt;
    opt.memLen = 8;
    opt.segmentLen = 6;
    opt.terms = "a,b+d";
    const auto single = core::scanTextFile(*m.model, *tok, textPath, opt);
    std::vector<std::string> files;
    for (int i = 1; i <= 3; ++i) {
        files.push_back((tmp / ("s" + std::to_string(i) + ".st")).string());
        core::scanTextFile(*m.model, *tok, textPath, opt, i, 3).save(files.back());
    }
    const auto merged = core::mergeScanFiles(files);
    // The same segments ran, each query once (each shard's first segment without memory, so its queries see fewer
    // keys: distance 0 counts every query in both).
    CHECK(merged.tokens == single.tokens);
    CHECK(merged.profileNames == std::vector<std::string>{"full", "term_a", "term_b+d"});
    CHECK(merged.count[0] == single.count[0]);
    CHECK(merged.count[0] == static_cast<double>(single.tokens));
}

TEST_CASE("a file scan cancelled between lines is partial even when its lines filled whole segments", "[scan]")
{
    // Found by the app test of Cancel: lines of exactly one segment leave nothing pending, so finish() never saw the
    // stop, and a cancelled scan came back as complete with fewer tokens.
    test::TempDir tmp;
    const auto dir = wordModel(tmp);
    const auto m = core::loadModel(dir.string());
    const auto tok = core::loadTokenizer(dir.string());
    std::string text;
    for (int l = 0; l < 50; ++l)
        text += "w2 w3 w4 w5\n"; // four words and <eos>: five tokens
    const auto path = (tmp / "lines.txt").string();
    test::writeBytes(path, text);
    REQUIRE(tok->encode("w2 w3 w4 w5\n").size() == 5);
    core::StopToken stop;
    core::ScanOptions opt;
    opt.memLen = 5;
    opt.segmentLen = 5;
    opt.stop = &stop;
    opt.progress = [&stop](std::int64_t done, std::int64_t) {
        if (done >= 20)
            stop.requestStop();
    };
    const auto r = core::scanTextFile(*m.model, *tok, path, opt);
    CHECK(r.partial);
    CHECK(r.tokens == 20);
    CHECK(r.metadata.at("partial") == "true");
}

TEST_CASE("a cancelled scan keeps a consistent partial result", "[scan]")
{
    test::TempDir tmp;
    const auto dir = wordModel(tmp);
    const auto m = core::loadModel(dir.string());
    const auto tok = core::loadTokenizer(dir.string());
    core::StopToken stop;
    core::ScanOptions opt;
    opt.memLen = 8;
    opt.segmentLen = 5;
    opt.stop = &stop;
    opt.progress = [&stop](std::int64_t done, std::int64_t) {
        if (done >= 20)
            stop.requestStop();
    };
    const auto r = core::scanText(*m.model, *tok, wordText(40, 9), opt);
    CHECK(r.partial);
    CHECK(r.tokens == 20); // whole segments only
    // Every query's probabilities sum to 1, so each head's sums over distance add up to the tokens scanned.
    const auto& full = r.sums.at("full");
    for (int lh = 0; lh < r.layers * r.heads; ++lh) {
        double s = 0;
        for (int d = 0; d < r.distances; ++d)
            s += full[static_cast<std::size_t>(lh * r.distances + d)];
        CHECK(s == Approx(20.0).epsilon(1e-5));
    }
    double pairs = 0;
    for (double c : r.count)
        pairs += c;
    CHECK(pairs > 20); // queries saw more than themselves
}

TEST_CASE("summaries rank a uniform-looking head above a local one", "[scan]")
{
    core::ScanResult r;
    r.layers = 1;
    r.heads = 2;
    r.distances = 10;
    r.profileNames = {"full"};
    r.count.assign(10, 1.0);
    std::vector<double> s(20, 0.0);
    s[0] = 0.9; // head 1: almost all on the token itself
    s[1] = 0.1;
    for (int d = 0; d < 10; ++d)
        s[static_cast<std::size_t>(10 + d)] = 0.1; // head 2: uniform
    r.sums["full"] = s;
    const auto sum = core::summariseHeads(r);
    REQUIRE(sum.size() == 2);
    CHECK(sum[0].massNear5 == Approx(1.0));
    CHECK(sum[0].meanDistance == Approx(0.1));
    CHECK(sum[1].entropy == Approx(std::log(10.0)));
    CHECK(sum[1].meanDistance == Approx(4.5));
    CHECK(core::rankByWidth(sum).front() == 1);
}

TEST_CASE("bad scan options are refused with clear messages", "[scan][errors]")
{
    test::TempDir tmp;
    const auto dir = wordModel(tmp);
    const auto m = core::loadModel(dir.string());
    const auto tok = core::loadTokenizer(dir.string());
    core::ScanOptions opt;
    opt.memLen = 0;
    opt.segmentLen = 4;
    CHECK_THROWS_WITH(core::RelposScanner(*m.model, opt), Catch::Contains("memory length must be at least 1"));
    opt.memLen = 4;
    opt.segmentLen = 100000;
    CHECK_THROWS_WITH(core::RelposScanner(*m.model, opt), Catch::Contains("longer than this model allows"));
    opt.segmentLen = 4;
    CHECK_THROWS_WITH(core::scanText(*m.model, *tok, "  \t ", opt), Catch::Contains("tokenizes to nothing"));
    opt.terms = "a,x";
    CHECK_THROWS_WITH(core::RelposScanner(*m.model, opt), Catch::Contains("\"x\""));
    opt.terms = "";
    CHECK_THROWS_WITH(core::scanTextFile(*m.model, *tok, (tmp / "missing.txt").string(), opt),
                      Catch::Contains("missing.txt"));
    CHECK_THROWS_WITH(core::scanTextFile(*m.model, *tok, (dir / "vocab.txt").string(), opt, 3, 2),
                      Catch::Contains("shard"));
    const auto g = core::loadModel((test::testdataDir() / "gpt2-tiny").string());
    CHECK_THROWS_WITH(core::RelposScanner(*g.model, opt), Catch::Contains("GPT-2 cannot scan with a sliding window") &&
                                                          Catch::Contains("absolute"));
    opt.memLen = 0;
    opt.segmentLen = 17;
    CHECK_THROWS_WITH(core::RelposScanner(*g.model, opt), Catch::Contains("longer than this model allows (16)"));
}

TEST_CASE("more shards than segments: the shards that own no segment start are empty parts that merge", "[scan][shards]")
{
    test::TempDir tmp;
    const auto m = core::loadModel((test::testdataDir() / "llama-gqa" / "model-f32.gguf").string());
    const auto tok = core::loadTokenizer(m.tokenizerSource());
    const auto textPath = (tmp / "short.txt").string();
    {
        std::ofstream f(textPath);
        for (int i = 0; i < 12; ++i)
            f << "line " << i << " of a short corpus\n";
    }
    core::ScanOptions opt;
    opt.segmentLen = 40; // a few segments over twelve lines, so most of the eight shards start none
    const auto single = core::scanTextFile(*m.model, *tok, textPath, opt);
    std::vector<std::string> files;
    int empty = 0;
    for (int i = 1; i <= 8; ++i) {
        const auto r = core::scanTextFile(*m.model, *tok, textPath, opt, i, 8);
        empty += r.tokens == 0;
        files.push_back((tmp / ("s" + std::to_string(i) + ".st")).string());
        r.save(files.back());
    }
    CHECK(empty > 0);
    const auto merged = core::mergeScanFiles(files);
    CHECK(merged.tokens == single.tokens);
    CHECK(merged.count == single.count);
    // A whole text of no tokens is still refused.
    test::writeBytes(tmp / "blank.txt", "");
    CHECK_THROWS_WITH(core::scanTextFile(*m.model, *tok, (tmp / "blank.txt").string(), opt), Catch::Contains("nothing to scan"));
}
