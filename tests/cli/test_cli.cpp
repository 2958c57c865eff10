// attnscope-cli end to end: dump and tokenize reproduce the reference data; errors exit non-zero with a message.
#include "analysis/relpos_scan.h"
#include "test_support.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

using namespace attnscope;

namespace {

struct RunResult {
    int exitCode = -1;
    std::string out; // stdout
    std::string err; // stderr
};

std::string shellQuote(const std::string& s)
{
    std::string q = "'";
    for (char c : s)
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// `environment`: assignments put before the command, e.g. "GLIBC_TUNABLES=...".
RunResult runCli(const std::vector<std::string>& args, const std::string& environment = "")
{
    test::TempDir tmp;
    std::string cmd = environment + (environment.empty() ? "" : " ") + shellQuote(ATTNSCOPE_CLI_PATH);
    for (const auto& a : args)
        cmd += " " + shellQuote(a);
    cmd += " >" + shellQuote((tmp / "out").string()) + " 2>" + shellQuote((tmp / "err").string());
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = test::readBytes(tmp / "out");
    r.err = test::readBytes(tmp / "err");
    return r;
}

} // namespace

TEST_CASE("attnscope-cli dump reproduces every reference case", "[cli][reference]")
{
    for (const auto& dir : test::referenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            test::TempDir tmp;
            const auto out = (tmp / "out.safetensors").string();
            const auto r = runCli({"dump", "--model", dir.string(), "--input", (dir / "input.json").string(), "--out", out});
            INFO(r.err);
            REQUIRE(r.exitCode == 0);
            const auto problems = test::referenceMismatches((dir / "expected.safetensors").string(), test::loadAll(out));
            for (const auto& p : problems)
                FAIL_CHECK(p);
        }
    }
}

// Hides AVX-512 from the dynamic loader, so it loads the portable compute library as on an AVX2-only CPU.
const std::string kPortableLibrary = "GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F";

TEST_CASE("the compute library for the CPU: AVX-512 where the CPU has it, the portable build otherwise", "[cli][dispatch]")
{
    auto r = runCli({"--version"});
    REQUIRE(r.exitCode == 0);
#ifdef ATTNSCOPE_CORE_V4
    __builtin_cpu_init();
    const bool v4 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    CHECK_THAT(r.out, Catch::Contains(v4 ? "x86-64-v4" : "x86-64-v3"));
    r = runCli({"--version"}, kPortableLibrary);
    REQUIRE(r.exitCode == 0);
    CHECK_THAT(r.out, Catch::Contains("x86-64-v3"));
#else
    CHECK_THAT(r.out, Catch::Contains("compute library"));
#endif
}

TEST_CASE("attnscope-cli dump reproduces every reference case with the portable compute library", "[cli][reference][dispatch]")
{
    for (const auto& dir : test::referenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            test::TempDir tmp;
            const auto out = (tmp / "out.safetensors").string();
            const auto r = runCli({"dump", "--model", dir.string(), "--input", (dir / "input.json").string(), "--out", out},
                                  kPortableLibrary);
            INFO(r.err);
            REQUIRE(r.exitCode == 0);
            for (const auto& p : test::referenceMismatches((dir / "expected.safetensors").string(), test::loadAll(out)))
                FAIL_CHECK(p);
        }
    }
}

TEST_CASE("attnscope-cli tokenize prints the reference ids as a JSON array", "[cli][tokenizer]")
{
    const auto dir = test::testdataDir() / "gpt2-tokenizer";
    const auto cases = core::readJsonFile((dir / "cases.json").string());
    test::TempDir tmp;
    int n = 0;
    for (const auto& c : cases) {
        const auto text = c["text"].get<std::string>();
        // Alternate --text and --text-file so both paths are exercised.
        RunResult r;
        if (n++ % 2 == 0) {
            r = runCli({"tokenize", "--tokenizer", dir.string(), "--text", text});
        } else {
            test::writeBytes(tmp / "t.txt", text);
            r = runCli({"tokenize", "--tokenizer", dir.string(), "--text-file", (tmp / "t.txt").string()});
        }
        INFO("text: " << text << "\nstderr: " << r.err);
        REQUIRE(r.exitCode == 0);
        CHECK(nlohmann::json::parse(r.out) == c["ids"]);
    }
}

TEST_CASE("attnscope-cli errors exit non-zero and say what is wrong", "[cli][errors]")
{
    test::TempDir tmp;
    const auto missing = (tmp / "no-model").string();
    auto r = runCli({"dump", "--model", missing, "--input", "x.json", "--out", (tmp / "o").string()});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find(missing) != std::string::npos);

    r = runCli({"frobnicate"});
    CHECK(r.exitCode == 2);
    CHECK(r.err.find("unknown command") != std::string::npos);

    for (const char* command : {"scan", "dump", "heads"}) {
        INFO(command << " --help");
        r = runCli({command, "--help"});
        CHECK(r.exitCode == 0);
        CHECK(r.out.find("attnscope-cli scan --model MODEL") != std::string::npos);
    }

    r = runCli({"dump", "--model", (test::testdataDir() / "txl-tiny").string()});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("--input") != std::string::npos);

    test::writeBytes(tmp / "bad.json", "{ not json");
    r = runCli({"dump", "--model", (test::testdataDir() / "txl-tiny").string(), "--input", (tmp / "bad.json").string(),
                "--out", (tmp / "o").string()});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("bad.json") != std::string::npos);
    CHECK(r.err.find("JSON") != std::string::npos);

    // A folder given as the text file: an error, not an empty result.
    r = runCli({"tokenize", "--tokenizer", (test::testdataDir() / "gpt2-tokenizer").string(), "--text-file", tmp.path().string()});
    CHECK(r.exitCode == 1);
    CHECK(r.err.find("is a folder") != std::string::npos);
    CHECK(r.out.empty());

    r = runCli({"tokenize", "--tokenizer", tmp.path().string(), "--text", "hi"});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("no tokenizer files") != std::string::npos);
}

TEST_CASE("attnscope-cli finds built-in models by name", "[cli][builtin]")
{
    test::TempDir tmp;
    auto r = runCli({"list-builtin"});
    REQUIRE(r.exitCode == 0);
    CHECK(r.out.find("builtin:txl-wikitext2") != std::string::npos);
    CHECK(r.out.find("builtin:heads-4") != std::string::npos);

    r = runCli({"tokenize", "--tokenizer", "builtin:heads-4", "--text", "the lobster"});
    REQUIRE(r.exitCode == 0);
    const auto ids = nlohmann::json::parse(r.out);
    REQUIRE(ids.size() == 2);

    test::writeBytes(tmp / "in.json", nlohmann::json{{"segments", {ids, ids}}, {"mem_len", 4}}.dump());
    const auto out = (tmp / "out.safetensors").string();
    r = runCli({"dump", "--model", "builtin:heads-4", "--input", (tmp / "in.json").string(), "--out", out});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    const auto tensors = test::loadAll(out);
    bool found = false;
    for (const auto& t : tensors)
        if (t.name == "seg1.layer0.attn_prob") {
            found = true;
            CHECK(t.shape == core::Shape{4, 2, 4}); // 4 heads, 2 queries, 2 memory + 2 keys
        }
    CHECK(found);
}

TEST_CASE("attnscope-cli tokenize: real tokenizers, with and without --special, and GGUF vocabularies", "[cli][tokenizer]")
{
    for (const char* name : {"gpt2", "llama3", "llama2"}) {
        const auto dir = test::testdataDir() / "tokenizers" / name;
        const auto cases = core::readJsonFile((dir / "cases.json").string());
        // Every tenth case through the process (the library test runs them all).
        for (std::size_t i = 0; i < cases.size(); i += 10) {
            const auto text = cases[i]["text"].get<std::string>();
            INFO(name << " case " << i);
            auto r = runCli({"tokenize", "--tokenizer", dir.string(), "--text", text});
            REQUIRE(r.exitCode == 0);
            CHECK(nlohmann::json::parse(r.out) == cases[i]["ids"]);
            r = runCli({"tokenize", "--tokenizer", dir.string(), "--text", text, "--special"});
            REQUIRE(r.exitCode == 0);
            CHECK(nlohmann::json::parse(r.out) == cases[i]["ids_with_special"]);
        }
    }
    // A GGUF's own vocabulary (SentencePiece-style, with BOS).
    const auto r = runCli({"tokenize", "--tokenizer", (test::testdataDir() / "llama-tiny" / "model-f32.gguf").string(),
                           "--text", "hello", "--special"});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    const auto ids = nlohmann::json::parse(r.out);
    REQUIRE(ids.size() >= 2);
    CHECK(ids[0] == 1); // tokenizer.ggml.bos_token_id
}

TEST_CASE("attnscope-cli tokenize: sentence pairs and token types, a BERT folder's vocab.txt is WordPiece",
          "[cli][tokenizer][encoders]")
{
    for (const char* name : {"bert-uncased", "roberta"}) {
        const auto dir = test::testdataDir() / "tokenizers" / name;
        const auto pairs = core::readJsonFile((dir / "pairs.json").string());
        for (const auto& p : pairs) {
            const auto a = p["text"].get<std::string>(), b = p["text_pair"].get<std::string>();
            INFO(name << ": " << a << " | " << b);
            auto r = runCli({"tokenize", "--tokenizer", dir.string(), "--text", a, "--pair", b, "--special"});
            REQUIRE(r.exitCode == 0);
            CHECK(nlohmann::json::parse(r.out) == p["ids_with_special"]);
            r = runCli({"tokenize", "--tokenizer", dir.string(), "--text", a, "--pair", b, "--special", "--type-ids"});
            REQUIRE(r.exitCode == 0);
            CHECK(nlohmann::json::parse(r.out) == p["type_ids"]);
        }
    }
    // A model folder with only BERT's vocab.txt: its config.json (model_type bert) makes it WordPiece, not a word list.
    test::TempDir tmp;
    const auto bert = test::testdataDir() / "tokenizers" / "bert-uncased";
    std::filesystem::copy_file(bert / "vocab.txt", tmp / "vocab.txt");
    std::filesystem::copy_file(test::testdataDir() / "bert-tiny" / "config.json", tmp / "config.json");
    const auto cases = core::readJsonFile((bert / "cases.json").string());
    for (std::size_t i = 0; i < cases.size(); i += 20) {
        const auto r = runCli({"tokenize", "--tokenizer", tmp.path().string(), "--text", cases[i]["text"].get<std::string>(),
                               "--special"});
        REQUIRE(r.exitCode == 0);
        CHECK(nlohmann::json::parse(r.out) == cases[i]["ids_with_special"]);
    }
}

TEST_CASE("attnscope-cli dump and info take GGUF files", "[cli][gguf]")
{
    test::TempDir tmp;
    const auto dir = test::testdataDir() / "llama-gqa";
    const auto out = (tmp / "out.safetensors").string();
    auto r = runCli({"dump", "--model", (dir / "model-q8_0.gguf").string(), "--input", (dir / "input.json").string(),
                     "--out", out});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    CHECK(test::referenceMismatches((dir / "expected-q8_0.safetensors").string(), test::loadAll(out)).empty());
    r = runCli({"info", "--model", (dir / "model-q8_0.gguf").string()});
    REQUIRE(r.exitCode == 0);
    const auto info = nlohmann::json::parse(r.out);
    CHECK(info["family"] == "Llama");
    CHECK(info["heads"] == 8);
    CHECK(info["kv_heads"] == 2);
    CHECK(info["d_head"] == 8);
    CHECK(info["weights"].get<std::string>().find("Q8_0") != std::string::npos);
    CHECK(info["positions"].get<std::string>().find("llama3") != std::string::npos);
    CHECK(info["parameters"] == 91584);
}

TEST_CASE("attnscope-cli scans a Llama-family model in chunks and with a sliding window, heads shows sink rates",
          "[cli][scan]")
{
    test::TempDir tmp;
    const auto model = (test::testdataDir() / "llama-gqa" / "model-f32.gguf").string(); // carries its vocabulary
    {
        std::ofstream f(tmp / "corpus.txt");
        for (int i = 0; i < 40; ++i)
            f << "the quick brown fox jumps over the lazy dog " << i << "\n";
    }
    const auto corpus = (tmp / "corpus.txt").string();
    const auto chunks = (tmp / "chunks.safetensors").string(), sliding = (tmp / "sliding.safetensors").string();
    auto r = runCli({"scan", "--model", model, "--text-file", corpus, "--segment-length", "32", "--out", chunks});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    auto scan = core::ScanResult::load(chunks);
    CHECK(scan.metadata.at("mode") == "chunks");
    CHECK(scan.distances == 32);
    CHECK(scan.hasSinks());
    r = runCli({"scan", "--model", model, "--text-file", corpus, "--segment-length", "32", "--mem-len", "16", "--out",
                sliding});
    REQUIRE(r.exitCode == 0);
    scan = core::ScanResult::load(sliding);
    CHECK(scan.metadata.at("mode") == "sliding");
    CHECK(scan.distances == 48);

    r = runCli({"heads", chunks, "--sort", "sink", "--top", "3"});
    REQUIRE(r.exitCode == 0);
    CHECK(r.out.find("sink rate") != std::string::npos);
    CHECK(r.out.find("chunks") != std::string::npos);
    // CSV: three rows sorted by sink rate, the values the result holds.
    r = runCli({"heads", chunks, "--sort", "sink", "--top", "3", "--format", "csv"});
    REQUIRE(r.exitCode == 0);
    const auto heads = core::summariseHeads(core::ScanResult::load(chunks));
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    REQUIRE(lines.size() == 4);
    CHECK(lines[0].rfind("layer,head,query_entropy,attended_distance,previous_token,sink_rate", 0) == 0);
    double previous = 2;
    for (int k = 1; k <= 3; ++k) {
        std::vector<std::string> cells;
        std::istringstream row(lines[static_cast<std::size_t>(k)]);
        for (std::string cell; std::getline(row, cell, ',');)
            cells.push_back(cell);
        const int layer = std::stoi(cells[0]) - 1, head = std::stoi(cells[1]) - 1;
        const double rate = std::stod(cells[5]);
        const auto& h = heads[static_cast<std::size_t>(layer * 8 + head)];
        CHECK(rate == Approx(h.sinkRate));
        CHECK(std::stod(cells[4]) == Approx(h.previousToken));
        CHECK(rate <= previous);
        previous = rate;
    }
    // JSON with the model: induction scores for every head; nulls where a text would be needed.
    r = runCli({"heads", chunks, "--format", "json", "--model", model});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    const auto json = nlohmann::json::parse(r.out);
    REQUIRE(json.size() == 3 * 8);
    for (const auto& row : json) {
        CHECK(row["induction"].is_number());
        CHECK(row["duplicate_token"].is_null());
    }
    CHECK(runCli({"heads", chunks, "--sort", "nonsense"}).err.find("--sort takes one of") != std::string::npos);

    // GPT-2 says why it cannot carry a cache.
    r = runCli({"scan", "--model", (test::testdataDir() / "gpt2-tiny").string(), "--text-file", corpus, "--mem-len",
                "8", "--out", (tmp / "g.safetensors").string()});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("absolute") != std::string::npos);
}

TEST_CASE("attnscope-cli predict, generate and lens on the built-in decoder", "[cli][predictions]")
{
    test::TempDir tmp;
    auto r = runCli({"predict", "--model", "builtin:llama-wikitext2", "--text", "the game was released in", "--top", "5"});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    const auto top = nlohmann::json::parse(r.out);
    REQUIRE(top.size() == 5);
    double last = 1.0;
    for (const auto& p : top) {
        CHECK(p.contains("id"));
        CHECK(p.contains("token"));
        CHECK(p["p"].get<double>() <= last); // most probable first
        last = p["p"].get<double>();
    }
    r = runCli({"generate", "--model", "builtin:llama-wikitext2", "--text", "the game was released in", "--max-new-tokens", "3"});
    REQUIRE(r.exitCode == 0);
    const auto g = nlohmann::json::parse(r.out);
    CHECK(g["ids"].size() == 3);
    CHECK(g["ids"][0] == top[0]["id"]); // greedy: the first new token is the top prediction
    r = runCli({"lens", "--model", "builtin:llama-wikitext2", "--text", "the game was", "--out", (tmp / "lens.csv").string()});
    REQUIRE(r.exitCode == 0);
    const std::string csv = test::readBytes(tmp / "lens.csv");
    CHECK(csv.rfind("layer,position,id,token,p,", 0) == 0);
    CHECK(std::count(csv.begin(), csv.end(), '\n') == 1 + 6 * 3); // header + layers x positions
    r = runCli({"predict", "--model", "builtin:llama-wikitext2", "--text", "the game", "--position", "9"});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("--position") != std::string::npos);

    // surprisal: the last token's bits are -log2 of predict's probability for it; perplexity from the mean.
    const std::string next = top[0]["token"].get<std::string>();
    r = runCli({"surprisal", "--model", "builtin:llama-wikitext2", "--text", "the game was released in " + next});
    REQUIRE(r.exitCode == 0);
    const auto s = nlohmann::json::parse(r.out);
    REQUIRE(s["tokens"].size() == 6);
    CHECK(s["tokens"][0]["bits"].is_null());
    CHECK(s["tokens"][5]["bits"].get<double>() == Approx(-std::log2(top[0]["p"].get<double>())).margin(1e-3));
    double bits = 0;
    for (int i = 1; i < 6; ++i)
        bits += s["tokens"][static_cast<std::size_t>(i)]["bits"].get<double>();
    CHECK(s["perplexity"].get<double>() == Approx(std::exp2(bits / 5)).epsilon(1e-6));
    r = runCli({"surprisal", "--model", "builtin:bert-wikitext2", "--text", "the game"});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("no surprisal") != std::string::npos);

    // A model folder without tokenizer files reads its text as token ids, as the window does (pieces print as "<id>").
    const std::string bare = (test::testdataDir() / "gpt2-tiny").string();
    r = runCli({"generate", "--model", bare, "--text", "3 14 15 9 26", "--max-new-tokens", "3"});
    REQUIRE(r.exitCode == 0);
    const auto gen = nlohmann::json::parse(r.out);
    REQUIRE(gen["ids"].size() == 3);
    CHECK(gen["tokens"][0].get<std::string>() == "<" + std::to_string(gen["ids"][0].get<int>()) + ">");
    r = runCli({"predict", "--model", bare, "--text", "3 14 15 9 26", "--top", "1"});
    REQUIRE(r.exitCode == 0);
    CHECK(nlohmann::json::parse(r.out)[0]["id"] == gen["ids"][0]); // greedy: the most probable
    r = runCli({"predict", "--model", bare, "--text", "three"});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("type token ids") != std::string::npos);
}

TEST_CASE("attnscope-cli translates with encoder-decoder models: generate, predict and dump against the reference",
          "[cli][seq2seq]")
{
    const auto cases = test::seq2seqReferenceCases();
    REQUIRE(cases.size() >= 4);
    for (const auto& dir : cases) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            // The folders have no tokenizer files: the source is typed as its ids, which the model reads as they are.
            const auto input = core::readJsonFile((dir / "input.json").string());
            std::string source;
            for (const auto& id : input["input_ids"])
                source += (source.empty() ? "" : " ") + std::to_string(id.get<int>());
            const auto expected = core::readJsonFile((dir / "generation.json").string())["generated_ids"];
            auto r = runCli({"generate", "--model", dir.string(), "--source", source, "--max-new-tokens",
                             std::to_string(expected.size())});
            REQUIRE(r.exitCode == 0);
            const auto out = nlohmann::json::parse(r.out);
            CHECK(out["ids"] == expected);
            CHECK(out["alignment"].size() == expected.size());
            // predict: the first generated token is the most likely after the decoder start.
            r = runCli({"predict", "--model", dir.string(), "--source", source, "--top", "3"});
            REQUIRE(r.exitCode == 0);
            CHECK(nlohmann::json::parse(r.out).at(0)["id"] == expected.at(0));
            // dump: every site under the reference names.
            test::TempDir tmp;
            const auto dump = (tmp / "out.safetensors").string();
            r = runCli({"dump", "--model", dir.string(), "--input", (dir / "input.json").string(), "--out", dump});
            REQUIRE(r.exitCode == 0);
            CHECK(test::referenceMismatches((dir / "expected.safetensors").string(), test::loadAll(dump)).empty());
        }
    }
    // A single-stream model refuses --source by name, and an encoder-decoder model needs one.
    auto r = runCli({"generate", "--model", (test::testdataDir() / "gpt2-tiny").string(), "--source", "1 2",
                     "--max-new-tokens", "2"});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("--source is for encoder-decoder models") != std::string::npos);
    r = runCli({"generate", "--model", cases.front().string(), "--text", "1 2"});
    CHECK(r.exitCode != 0);
    CHECK(r.err.find("needs --source") != std::string::npos);
    // info lists the two streams and every site.
    r = runCli({"info", "--model", cases.front().string()});
    REQUIRE(r.exitCode == 0);
    const auto info = nlohmann::json::parse(r.out);
    CHECK(info["streams"] == nlohmann::json::array({"source", "target"}));
    CHECK(info["sites"].size() >= 3);
}

TEST_CASE("attnscope-cli tokenize --target reads with a Marian model's target side", "[cli][marian]")
{
    const auto dir = test::testdataDir() / "tokenizers" / "marian-en-fr";
    const auto cases = core::readJsonFile((dir / "cases.json").string());
    const auto& c = cases.at(cases.size() - 1);
    auto r = runCli({"tokenize", "--tokenizer", dir.string(), "--text", c["text"].get<std::string>(), "--special",
                     "--target"});
    REQUIRE(r.exitCode == 0);
    CHECK(nlohmann::json::parse(r.out) == c["target_ids_with_special"]);
    r = runCli({"tokenize", "--tokenizer", dir.string(), "--text", c["text"].get<std::string>(), "--special"});
    REQUIRE(r.exitCode == 0);
    CHECK(nlohmann::json::parse(r.out) == c["ids_with_special"]);
    r = runCli({"tokenize", "--tokenizer", (test::testdataDir() / "tokenizers" / "gpt2").string(), "--text", "a",
                "--target"});
    CHECK(r.exitCode != 0);
}

TEST_CASE("attnscope-cli patch and path-patch write the acceptance JSON, numbered from 1", "[cli][patching]")
{
    test::TempDir tmp;
    const auto model = (test::testdataDir() / "llama-gqa").string(); // 3 layers, 8 query heads in 2 key/value groups
    const auto input = core::readJsonFile((test::testdataDir() / "llama-gqa" / "input.json").string());
    std::string clean, corrupt;
    int at = 0;
    for (const auto& id : input["token_ids"]) {
        clean += std::to_string(id.get<int>()) + " ";
        corrupt += std::to_string(at++ == 9 ? (id.get<int>() + 7) % 80 : id.get<int>()) + " ";
    }
    const int tokens = at;
    const std::string out = (tmp / "patch.json").string();
    auto r = runCli({"patch", "--model", model, "--clean-ids", clean, "--corrupt-ids", corrupt, "--answer", "5", "--wrong",
                     "6", "--component", "k", "--per-position", "--out", out});
    REQUIRE(r.exitCode == 0);
    auto j = core::readJsonFile(out);
    REQUIRE(j["scores"].size() == 3);       // layers
    REQUIRE(j["scores"][0].size() == 2);    // key/value groups
    REQUIRE(j["scores"][0][0].size() == static_cast<std::size_t>(tokens));
    CHECK(j["axes"] == nlohmann::json({"layer", "group", "position"}));
    CHECK(j["scores"][0][0][0].get<double>() == Approx(0.0).margin(1e-6)); // before the changed token: no effect

    r = runCli({"patch", "--model", model, "--clean-ids", clean, "--corrupt-ids", corrupt, "--answer", "5", "--wrong",
                "6", "--component", "resid", "--out", out});
    REQUIRE(r.exitCode == 0);
    j = core::readJsonFile(out);
    REQUIRE(j["scores"].size() == 4); // layers 1..L+1
    CHECK(j["scores"][0][9].get<double>() == Approx(1.0));
    CHECK(j["scores"][3][static_cast<std::size_t>(tokens - 1)].get<double>() == Approx(1.0));
    const double mClean = j["m_clean"], mCorrupt = j["m_corrupt"];

    r = runCli({"path-patch", "--model", model, "--clean-ids", clean, "--corrupt-ids", corrupt, "--answer", "5", "--wrong",
                "6", "--sender", "1.8", "--receivers", "2.1,3.2", "--input", "v", "--out", out});
    REQUIRE(r.exitCode == 0);
    j = core::readJsonFile(out);
    CHECK(j["m_clean"].get<double>() == mClean);
    CHECK(j["m_corrupt"].get<double>() == mCorrupt);
    REQUIRE(j["score"].is_number());
    CHECK(std::isfinite(j["score"].get<double>()));
    CHECK(j["path"] == "through the MLPs (recomputed)");
    const double throughMlps = j["score"];
    // The strict direct path: the layers' MLPs between sender and receivers frozen (exactness: core_tests).
    r = runCli({"path-patch", "--model", model, "--clean-ids", clean, "--corrupt-ids", corrupt, "--answer", "5", "--wrong",
                "6", "--sender", "1.8", "--receivers", "2.1,3.2", "--input", "v", "--freeze-mlps", "--out", out});
    REQUIRE(r.exitCode == 0);
    j = core::readJsonFile(out);
    CHECK(j["path"] == "direct (MLPs frozen)");
    CHECK(j["m_clean"].get<double>() == mClean);
    CHECK(std::isfinite(j["score"].get<double>()));
    CHECK(j["score"].get<double>() != Approx(throughMlps));

    r = runCli({"path-patch", "--model", model, "--clean-ids", clean, "--corrupt-ids", corrupt, "--answer", "5", "--wrong",
                "6", "--sender", "2.1", "--receivers", "1.1", "--input", "q", "--out", out});
    CHECK(r.exitCode == 1);
    CHECK(r.err.find("must come after the sender") != std::string::npos);
    r = runCli({"patch", "--model", model, "--clean-ids", clean, "--corrupt-ids", "1 2 3", "--answer", "5", "--wrong",
                "6", "--component", "q", "--out", out});
    CHECK(r.exitCode == 1);
    CHECK(r.err.find("same length") != std::string::npos);

    // Coarse to fine: the layers' scores beside the cells; a threshold above every layer's score leaves every cell out.
    r = runCli({"patch", "--model", model, "--clean-ids", clean, "--corrupt-ids", corrupt, "--answer", "5", "--wrong",
                "6", "--component", "head-out", "--coarse-to-fine", "1e9", "--out", out});
    REQUIRE(r.exitCode == 0);
    j = core::readJsonFile(out);
    REQUIRE(j["layer_scores"].size() == 3);
    CHECK(j["skipped"].get<int>() == 3 * 8);
    CHECK(j["runs"].get<int>() <= 3);
    CHECK(j["scores"][0][0].is_null());
    r = runCli({"patch", "--model", model, "--clean-ids", clean, "--corrupt-ids", corrupt, "--answer", "5", "--wrong",
                "6", "--component", "head-out", "--coarse-to-fine", "-1", "--out", out});
    CHECK(r.exitCode == 1);
    CHECK(r.err.find("--coarse-to-fine expects a number >= 0") != std::string::npos);
}

TEST_CASE("attnscope-cli patch takes prompts and answers as words", "[cli][patching]")
{
    test::TempDir tmp;
    const std::string out = (tmp / "patch.json").string();
    const auto r = runCli({"patch", "--model", "builtin:llama-wikitext2", "--clean", "When John and Mary went to the shops , John gave a bag to",
                           "--corrupt", "When John and Mary went to the shops , Mary gave a bag to", "--answer", "Mary",
                           "--wrong", "John", "--component", "head-out", "--out", out});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    const auto j = core::readJsonFile(out);
    CHECK(j["clean_tokens"].size() == j["corrupt_tokens"].size());
    CHECK(j["scores"].size() > 0);
    CHECK(j["m_clean"].get<double>() != j["m_corrupt"].get<double>());
}

TEST_CASE("attnscope-cli head-contexts and sentences write their documented JSON", "[cli][head-contexts][sentences]")
{
    test::TempDir tmp;
    const auto sample = (std::filesystem::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models" / "sample.txt").string();
    auto r = runCli({"head-contexts", "--model", "builtin:llama-wikitext2", "--text-file", sample, "--window", "32",
                     "--stat", "prev-token", "--out", (tmp / "contexts").string()});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    const auto index = core::readJsonFile((tmp / "contexts" / "index.json").string());
    CHECK(index["statistic"] == "prev-token");
    const auto scatter = core::readJsonFile((tmp / "contexts" / "scatter.json").string());
    CHECK(scatter.size() == static_cast<std::size_t>(index["layers"].get<int>() * index["heads"].get<int>()));
    CHECK(std::filesystem::exists(tmp / "contexts" / "heads" / "L1-H1.json"));

    r = runCli({"sentences", "--model", "builtin:llama-wikitext2", "--text", "The cat sat . It was happy . Then it slept .",
                "--out", (tmp / "s.json").string()});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    const auto s = core::readJsonFile((tmp / "s.json").string());
    CHECK(s["sentences"].size() == 3);
    CHECK(s["heads"][0]["attention"].size() == 3);
    CHECK(s["suppression_kl"].size() == 3);
    CHECK(s["suppression_kl"][0][0].is_null());
    CHECK(s["suppression_kl"][0][1].get<double>() > 0);
}

TEST_CASE("attnscope-cli explain writes the step's numbers in the acceptance form", "[cli][explain]")
{
    test::TempDir tmp;
    const auto dir = test::testdataDir() / "gptoss-tiny"; // a learned sink and a sliding window
    const std::string out = (tmp / "step.json").string();
    const auto r = runCli({"explain", "--model", dir.string(), "--input", (dir / "input.json").string(), "--layer", "1",
                           "--head", "2", "--position", "20", "--out", out});
    INFO(r.err);
    REQUIRE(r.exitCode == 0);
    const auto j = core::readJsonFile(out);
    REQUIRE(j["probs"].size() == j["scores"].size());
    REQUIRE(j.contains("sink"));
    double sum = 0;
    bool masked = false;
    for (std::size_t k = 0; k < j["probs"].size(); ++k) {
        sum += j["probs"][k].get<double>();
        if (j["scores"][k].is_null()) {
            masked = true;
            CHECK(j["probs"][k].get<double>() == 0.0);
        }
    }
    CHECK(masked);       // later keys (and keys outside the window) are masked
    CHECK(sum < 1.0);    // the sink takes the rest
    const auto bad = runCli({"explain", "--model", dir.string(), "--input", (dir / "input.json").string(), "--layer",
                             "99", "--head", "1", "--position", "1", "--out", out});
    CHECK(bad.exitCode == 1);
    CHECK(bad.err.find("no layer 99") != std::string::npos);
}

TEST_CASE("an empty text file is named, before any model runs", "[cli][errors]")
{
    test::TempDir tmp;
    test::writeBytes(tmp / "empty.txt", "");
    test::writeBytes(tmp / "blank.txt", " \n\t\n");
    for (const char* file : {"empty.txt", "blank.txt"})
        for (const char* command : {"surprisal", "scan"}) {
            std::vector<std::string> args = {command, "--model", "builtin:llama-wikitext2", "--text-file", (tmp / file).string()};
            if (std::string(command) == "scan")
                args.insert(args.end(), {"--out", (tmp / "x").string()});
            const auto r = runCli(args);
            INFO(command << " " << file << ": " << r.err);
            CHECK(r.exitCode == 1);
            CHECK(r.err.find(file) != std::string::npos);
        }
}

TEST_CASE("attnscope-cli generate writes no control tokens unless asked", "[cli][generate]")
{
    auto r = runCli({"generate", "--model", "builtin:llama-wikitext2", "--text", "Homarus gammarus is a species of",
                     "--max-new-tokens", "25"});
    REQUIRE(r.exitCode == 0);
    auto j = nlohmann::json::parse(r.out);
    for (const auto& t : j["tokens"])
        CHECK((t != "<unk>" && t != "<eos>"));
    r = runCli({"generate", "--model", "builtin:llama-wikitext2", "--text", "Homarus gammarus is a species of",
                "--max-new-tokens", "25", "--allow-special"});
    REQUIRE(r.exitCode == 0);
    j = nlohmann::json::parse(r.out);
    // Allowed, the greedy continuation ends its line: WikiText's <eos> after the sentence (never <unk>: the model was
    // trained without it as a target).
    CHECK(std::find(j["tokens"].begin(), j["tokens"].end(), "<eos>") != j["tokens"].end());
    CHECK(std::find(j["tokens"].begin(), j["tokens"].end(), "<unk>") == j["tokens"].end());
}
