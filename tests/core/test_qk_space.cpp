// Query-key space: PCA against an SVD of the same matrix, the normalisation's invariance of every softmax, its effect
// on the closeness/dot-product correlation, t-SNE on a clustered set (trustworthiness) and against scikit-learn's KL
// divergence (tests/data/qk-space, made with Debian's python3-sklearn; see its README).
#include "analysis/qk_space.h"
#include "attention/attention_scores.h"
#include "embed/pca.h"
#include "model/model_loader.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "util/text_file.h"

#include <Eigen/Dense>
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

using namespace attnscope;
namespace fs = std::filesystem;

namespace {
std::vector<std::string> builtinDirs() { return {(fs::path(ATTNSCOPE_SOURCE_DIR) / "resources" / "models").string()}; }

std::shared_ptr<const core::TextCapture> builtinCapture(const core::LoadedModel& m)
{
    const auto tok = core::loadModelTokenizer(m);
    return core::captureText(*m.model, *tok,
                             "The war ended in 1945 . The game was released in Japan in 2011 , and the war was over . "
                             "It was the first game of the series to be released in Europe .",
                             {});
}

// Softmax over keys of each query's dot products.
std::vector<double> softmaxRows(const core::QkVectors& v)
{
    std::vector<double> out;
    for (int i = 0; i < v.nq(); ++i) {
        std::vector<double> s(static_cast<std::size_t>(v.nk()));
        for (int j = 0; j < v.nk(); ++j)
            for (int c = 0; c < v.dim; ++c)
                s[static_cast<std::size_t>(j)] += static_cast<double>(v.queries[static_cast<std::size_t>(i) * v.dim + c]) *
                                                  v.keys[static_cast<std::size_t>(j) * v.dim + c];
        const double mx = *std::max_element(s.begin(), s.end());
        double z = 0;
        for (auto& x : s)
            z += (x = std::exp(x - mx));
        for (auto x : s)
            out.push_back(x / z);
    }
    return out;
}

// Trustworthiness (Venna & Kaski 2001, as scikit-learn computes it) of an embedding with k neighbours.
double trustworthiness(const std::vector<float>& high, int dim, const std::vector<float>& x, const std::vector<float>& y, int k)
{
    const int n = static_cast<int>(x.size());
    auto rankBy = [n](const std::function<double(int, int)>& dist, int i) {
        std::vector<int> order(static_cast<std::size_t>(n));
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](int a, int b) { return dist(i, a) < dist(i, b); });
        return order; // order[0] == i
    };
    auto dHigh = [&](int a, int b) {
        double s = 0;
        for (int c = 0; c < dim; ++c) {
            const double t = high[static_cast<std::size_t>(a) * dim + c] - high[static_cast<std::size_t>(b) * dim + c];
            s += t * t;
        }
        return s;
    };
    auto dLow = [&](int a, int b) { return std::hypot(x[static_cast<std::size_t>(a)] - x[static_cast<std::size_t>(b)], y[static_cast<std::size_t>(a)] - y[static_cast<std::size_t>(b)]); };
    double t = 0;
    for (int i = 0; i < n; ++i) {
        const auto hi = rankBy(dHigh, i);
        std::vector<int> rank(static_cast<std::size_t>(n));
        for (int r = 0; r < n; ++r)
            rank[static_cast<std::size_t>(hi[static_cast<std::size_t>(r)])] = r;
        const auto lo = rankBy(dLow, i);
        for (int r = 1; r <= k; ++r)
            t += std::max(0, rank[static_cast<std::size_t>(lo[static_cast<std::size_t>(r)])] - k);
    }
    return 1.0 - 2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0)) * t;
}

// Three Gaussian clusters in 10-D, 60 points each.
std::vector<float> blobs(int& n, int& dim)
{
    n = 180, dim = 10;
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> centres(30);
    for (auto& c : centres)
        c = nd(rng) * 8;
    std::vector<float> out;
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < dim; ++c)
            out.push_back(centres[static_cast<std::size_t>((i / 60) * 10 + c)] + nd(rng));
    return out;
}
} // namespace

TEST_CASE("PCA of query-key space equals an SVD of the same centred matrix", "[qk]")
{
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0, 1);
    const int n = 50, d = 6;
    std::vector<float> data(n * d);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c)
            data[static_cast<std::size_t>(i) * d + c] = nd(rng) * static_cast<float>(c + 1) + 0.3f * c;
    const auto got = core::pca2(data, n, d);
    Eigen::MatrixXd x(n, d);
    for (int i = 0; i < n; ++i)
        for (int c = 0; c < d; ++c)
            x(i, c) = data[static_cast<std::size_t>(i) * d + c];
    x.rowwise() -= x.colwise().mean();
    Eigen::JacobiSVD<Eigen::MatrixXd> svd(x, Eigen::ComputeThinU);
    for (int a = 0; a < 2; ++a) {
        const Eigen::VectorXd ref = svd.matrixU().col(a) * svd.singularValues()(a);
        const double sign = ref(0) * got[static_cast<std::size_t>(a)] < 0 ? -1.0 : 1.0; // axes are defined up to sign
        for (int i = 0; i < n; ++i)
            CHECK(got[static_cast<std::size_t>(i) * 2 + a] == Approx(sign * ref(i)).margin(1e-4));
    }
}

TEST_CASE("AttentionViz's normalisation changes no attention probability and draws dot products closer to distances",
          "[qk]")
{
    const auto m = core::loadModel("builtin:llama-wikitext2", builtinDirs());
    const auto capture = builtinCapture(m);
    const auto& info = m.model->info();
    double before = 0, after = 0;
    int heads = 0;
    for (int l = 0; l < info.layers; ++l)
        for (int h = 0; h < info.heads; ++h) {
            auto v = core::headQkVectors(*capture, 0, l, h);
            REQUIRE(v.nq() == static_cast<int>(capture->tokens.size()));
            REQUIRE(v.nk() == v.nq());
            const auto p0 = softmaxRows(v);
            before += core::embedQk(v, core::QkMethod::Pca).correlation;
            core::normaliseQk(v);
            const auto p1 = softmaxRows(v);
            for (std::size_t i = 0; i < p0.size(); ++i)
                REQUIRE(p1[i] == Approx(p0[i]).margin(1e-5));
            after += core::embedQk(v, core::QkMethod::Pca).correlation;
            ++heads;
        }
    INFO("mean correlation before " << before / heads << ", after " << after / heads);
    CHECK(after > before);
}

TEST_CASE("t-SNE keeps clusters together (trustworthiness) and converges", "[qk][tsne]")
{
    int n = 0, dim = 0;
    const auto data = blobs(n, dim);
    core::QkVectors v;
    v.dim = dim;
    v.queries.assign(data.begin(), data.begin() + 90 * dim); // any split: embedQk embeds queries and keys jointly
    v.keys.assign(data.begin() + 90 * dim, data.end());
    v.queryPositions.resize(90);
    v.keyPositions.resize(90);
    core::TsneOptions o;
    o.perplexity = 30;
    const auto e = core::embedQk(v, core::QkMethod::Tsne, o);
    REQUIRE(e.x.size() == static_cast<std::size_t>(n));
    CHECK(trustworthiness(data, dim, e.x, e.y, 5) >= 0.9);
    CHECK(e.klDivergence > 0);
    CHECK(e.klDivergence < 1.0);
}

TEST_CASE("a corpus's query-key vectors are those a capture of the same tokens computes, segment by segment",
          "[qk][corpus]")
{
    for (const char* name : {"builtin:llama-wikitext2", "builtin:txl-wikitext2"}) {
        DYNAMIC_SECTION(name)
        {
            const auto m = core::loadModel(name, builtinDirs());
            const auto tok = core::loadModelTokenizer(m);
            const std::string text = core::readTextFile(
                (fs::path(ATTNSCOPE_SOURCE_DIR) / ".." / "shared" / "data" / "wikitext-2" / "valid.txt").string()).substr(0, 4000);
            const auto capture = core::captureText(*m.model, *tok, text, {});
            REQUIRE(capture->segments.size() >= 2); // memory carried across segments
            const int layer = 1, head = 2;
            std::vector<double> progress;
            const auto corpus = core::corpusQkVectors(*m.model, capture->tokens, layer, head, nullptr,
                                                      [&](double f) { progress.push_back(f); });
            REQUIRE(corpus.nq() == static_cast<int>(capture->tokens.size()));
            REQUIRE(corpus.nk() == corpus.nq()); // each token's key once
            CHECK(progress.size() == capture->segments.size());
            CHECK(progress.back() == Approx(1.0));
            for (int s = 0; s < static_cast<int>(capture->segments.size()); ++s) {
                const auto v = core::headQkVectors(*capture, s, layer, head);
                const auto& seg = capture->segment(s);
                for (int i = 0; i < v.nq(); ++i)
                    for (int c = 0; c < v.dim; ++c) {
                        const auto at = static_cast<std::size_t>(seg.firstPosition + i) * corpus.dim + c;
                        REQUIRE(corpus.queryPositions[static_cast<std::size_t>(seg.firstPosition + i)] == seg.firstPosition + i);
                        REQUIRE(corpus.queries[at] == Approx(v.queries[static_cast<std::size_t>(i) * v.dim + c]).margin(1e-4));
                        // The segment's own keys follow its memory's in the capture.
                        const auto key = static_cast<std::size_t>(seg.mlen + i) * v.dim + c;
                        REQUIRE(corpus.keys[at] == Approx(v.keys[key]).margin(1e-4));
                    }
            }
        }
    }
    const auto m = core::loadModel("builtin:llama-wikitext2", builtinDirs());
    CHECK_THROWS_WITH(core::corpusQkVectors(*m.model, {}, 0, 0), Catch::Contains("tokenizes to nothing"));
    CHECK_THROWS_WITH(core::corpusQkVectors(*m.model, std::vector<core::Token>(3), 99, 0), Catch::Contains("no layer 100"));
}

TEST_CASE("Transformer-XL's position part: (q + v) . R_d is the score's terms (b) + (d) at distance d", "[qk][txl]")
{
    const auto m = core::loadModel("builtin:txl-wikitext2", builtinDirs());
    const auto capture = builtinCapture(m);
    const int layer = 2, head = 3;
    const auto v = core::headPositionVectors(*capture, 0, layer, head);
    REQUIRE(v.keysAreDistances);
    const auto in = capture->inputs(0, layer);
    REQUIRE(v.nq() == in.qlen);
    REQUIRE(v.nk() == in.klen);
    core::HeadScores scores(in, head, true);
    scores.compute(0, in.qlen);
    std::vector<float> b(static_cast<std::size_t>(in.klen)), d(b.size());
    for (int i = 0; i < in.qlen; ++i) {
        scores.rowTerm(i, 1, b.data());
        scores.rowTerm(i, 3, d.data());
        REQUIRE(in.spans);
        const auto span = in.spans[i];
        for (int j = span.lo; j < span.lo + span.len; ++j) {
            const int dist = i + in.mlen - j;
            double dot = 0;
            for (int c = 0; c < v.dim; ++c)
                dot += static_cast<double>(v.queries[static_cast<std::size_t>(i) * v.dim + c]) *
                       v.keys[static_cast<std::size_t>(dist) * v.dim + c];
            REQUIRE(dot * in.scale == Approx(b[static_cast<std::size_t>(j - span.lo)] + d[static_cast<std::size_t>(j - span.lo)]).margin(1e-4));
        }
    }
    // Exported with kind r and the distance from 0.
    const auto e = core::embedQk(v, core::QkMethod::Pca);
    const std::string csv = core::qkCsv(v, e, capture->tokens);
    CHECK(csv.find("\nr,0,,") != std::string::npos);
    CHECK(csv.find("\nr,1,,") != std::string::npos);
    const auto llama = core::loadModel("builtin:llama-wikitext2", builtinDirs());
    CHECK_THROWS_WITH(core::headPositionVectors(*builtinCapture(llama), 0, 0, 0), Catch::Contains("only Transformer-XL"));
}

TEST_CASE("each query's strongest keys are the visible keys with the three highest dot products", "[qk]")
{
    const auto m = core::loadModel("builtin:llama-wikitext2", builtinDirs());
    const auto capture = builtinCapture(m);
    const auto& seg = capture->segment(0);
    const auto v = core::headQkVectors(*capture, 0, 2, 5);
    const auto top = core::strongestKeys(v, seg);
    REQUIRE(static_cast<int>(top.size()) == v.nq());
    for (int i = 0; i < v.nq(); ++i) {
        std::vector<double> visible;
        auto dot = [&](int j) {
            double d = 0;
            for (int c = 0; c < v.dim; ++c)
                d += static_cast<double>(v.queries[static_cast<std::size_t>(i) * v.dim + c]) * v.keys[static_cast<std::size_t>(j) * v.dim + c];
            return d;
        };
        for (int j = 0; j < v.nk(); ++j)
            if (!seg.masked(i, static_cast<int>(v.keyPositions[static_cast<std::size_t>(j)] - (seg.firstPosition - seg.mlen))))
                visible.push_back(dot(j));
        std::sort(visible.rbegin(), visible.rend());
        // A causal query sees itself and the keys before it: fewer than three at the start.
        for (std::size_t r = 0; r < 3; ++r) {
            const int k = top[static_cast<std::size_t>(i)][r];
            if (r >= visible.size()) {
                CHECK(k == -1);
                continue;
            }
            REQUIRE(k >= v.nq());
            CHECK(dot(k - v.nq()) == Approx(visible[r]).margin(1e-4)); // equal dot products may come in either order
            CHECK(v.keyPositions[static_cast<std::size_t>(k - v.nq())] <= v.queryPositions[static_cast<std::size_t>(i)]);
        }
    }
}

TEST_CASE("UMAP keeps clusters together (trustworthiness), the same seed giving the same picture", "[qk][umap]")
{
    int n = 0, dim = 0;
    const auto data = blobs(n, dim);
    const auto a = core::umap2(data, n, dim);
    REQUIRE(a.size() == static_cast<std::size_t>(n) * 2);
    std::vector<float> x, y;
    for (int i = 0; i < n; ++i) {
        x.push_back(a[static_cast<std::size_t>(i) * 2]);
        y.push_back(a[static_cast<std::size_t>(i) * 2 + 1]);
    }
    CHECK(trustworthiness(data, dim, x, y, 5) >= 0.9);
    CHECK(core::umap2(data, n, dim) == a);
    core::UmapOptions other;
    other.seed = 2;
    CHECK(core::umap2(data, n, dim, other) != a);
    // Through the query-key path, by name.
    core::QkVectors v;
    v.dim = dim;
    v.queries.assign(data.begin(), data.begin() + 90 * dim);
    v.keys.assign(data.begin() + 90 * dim, data.end());
    v.queryPositions.resize(90);
    v.keyPositions.resize(static_cast<std::size_t>(n - 90));
    const auto method = core::qkMethodNamed("umap");
    REQUIRE(method);
    std::vector<int> steps;
    const auto e = core::embedQk(v, *method, {}, nullptr, [&](int done, int total, const std::vector<float>& xy) {
        CHECK(total == 500);
        CHECK(xy.size() == static_cast<std::size_t>(n) * 2);
        steps.push_back(done);
    });
    CHECK(e.x == x); // reporting changes nothing
    CHECK(steps.size() == 500 / core::kUmapProgressEvery - 1);
    CHECK_FALSE(core::qkMethodNamed("lda"));
    // A point set whose size does not match its shape is refused before anything is sized from it.
    CHECK_THROWS_WITH(core::umap2(data, n + 1, dim), Catch::Contains("are not"));
    CHECK_THROWS_WITH(core::tsne2(data, n, dim + 1, {}), Catch::Contains("are not"));
    CHECK_THROWS_WITH(core::pca2(data, n, dim - 1), Catch::Contains("are not"));
}

TEST_CASE("t-SNE (exact and Barnes-Hut) ends within 10% of scikit-learn's KL divergence on the same data and settings",
          "[qk][tsne]")
{
    const auto ref = core::readJsonFile((test::projectDataDir() / "qk-space" / "tsne_reference.json").string());
    for (const auto& c : ref["cases"]) {
        DYNAMIC_SECTION(c["name"].get<std::string>())
        {
            const int n = c["n"], dim = c["dim"];
            std::vector<float> data;
            for (const auto& x : c["data"])
                data.push_back(x.get<float>());
            core::QkVectors v;
            v.dim = dim;
            v.queries.assign(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(n / 2) * dim);
            v.keys.assign(data.begin() + static_cast<std::ptrdiff_t>(n / 2) * dim, data.end());
            v.queryPositions.resize(static_cast<std::size_t>(n / 2));
            v.keyPositions.resize(static_cast<std::size_t>(n - n / 2));
            core::TsneOptions o;
            o.perplexity = c["perplexity"];
            o.method = c.value("method", "exact") == "barnes_hut" ? core::TsneMethod::BarnesHut : core::TsneMethod::Exact;
            const auto e = core::embedQk(v, core::QkMethod::Tsne, o);
            double best = 1e9;
            for (const auto& kl : c["kl_divergence"])
                best = std::min(best, kl.get<double>());
            INFO("attnscope " << e.klDivergence << ", scikit-learn " << best);
            CHECK(e.klDivergence <= best * 1.1);
            CHECK(e.klDivergence >= best * 0.9);
            CHECK(trustworthiness(data, dim, e.x, e.y, 5) >= c["trustworthiness_k5"].get<double>() - 0.02);
        }
    }
}

TEST_CASE("the query-key points export as CSV and JSON alike, positions from 1, tokens as in the text", "[qk]")
{
    const auto m = core::loadModel("builtin:llama-wikitext2", builtinDirs());
    const auto capture = builtinCapture(m);
    auto v = core::headQkVectors(*capture, 0, 1, 2);
    core::normaliseQk(v);
    const auto e = core::embedQk(v, core::QkMethod::Pca);
    const auto doc = nlohmann::json::parse(core::qkJson(v, e, capture->tokens));
    const auto& points = doc.at("points");
    REQUIRE(points.size() == static_cast<std::size_t>(e.queries + e.keys));
    CHECK(doc.at("correlation").get<double>() == Approx(e.correlation));
    std::vector<std::string> rows;
    const std::string csv = core::qkCsv(v, e, capture->tokens);
    for (std::size_t at = csv.find('\n') + 1, end; (end = csv.find('\n', at)) != std::string::npos; at = end + 1)
        rows.push_back(csv.substr(at, end - at));
    REQUIRE(rows.size() == points.size());
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto& p = points[i];
        const int position = p.at("position").get<int>();
        CHECK(p.at("kind").get<std::string>() == (i < static_cast<std::size_t>(e.queries) ? "q" : "k"));
        CHECK(p.at("token").get<std::string>() == capture->tokens[static_cast<std::size_t>(position - 1)].text);
        CHECK(p.at("x").get<double>() == Approx(e.x[i]));
        CHECK(p.at("y").get<double>() == Approx(e.y[i]));
        CHECK(rows[i].rfind(p.at("kind").get<std::string>() + "," + std::to_string(position) + ",", 0) == 0);
    }
}
