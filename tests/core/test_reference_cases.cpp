// Every case in ../shared/testdata reproduced through the library within the README's tolerances.
#include "model/model_loader.h"
#include "run/reference_dump.h"
#include "test_support.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace attnscope;

TEST_CASE("reference cases reproduce through the library", "[reference]")
{
    const auto cases = test::referenceCases();
    REQUIRE(cases.size() >= 4); // txl-tiny, txl-adaptive, txl-samelen, gpt2-tiny at least
    for (const auto& dir : cases) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            const auto inputPath = (dir / "input.json").string();
            const auto out = core::dumpReference(*loaded.model, core::readJsonFile(inputPath), inputPath);
            std::vector<std::string> report;
            const auto problems = test::referenceMismatches((dir / "expected.safetensors").string(), out, &report);
            for (const auto& line : report)
                UNSCOPED_INFO(line);
            for (const auto& p : problems)
                FAIL_CHECK(p);
            CHECK(problems.empty());
        }
    }
}

TEST_CASE("attention rows are distributions and masked entries are exactly zero", "[reference]")
{
    for (const auto& dir : test::referenceCases("txl")) {
        const auto loaded = core::loadModel(dir.string());
        const auto inputPath = (dir / "input.json").string();
        const auto out = core::dumpReference(*loaded.model, core::readJsonFile(inputPath), inputPath);
        for (const auto& t : out) {
            if (t.name.find("attn_prob") == std::string::npos)
                continue;
            const auto k = static_cast<std::size_t>(t.shape[2]);
            for (std::size_t r = 0; r < t.data.size() / k; ++r) {
                double sum = 0;
                for (std::size_t j = 0; j < k; ++j)
                    sum += t.data[r * k + j];
                REQUIRE(sum == Approx(1.0).margin(1e-5));
            }
        }
    }
}

TEST_CASE("a model in half precision loads and stays close to float32", "[reference][dtype]")
{
    // Convert txl-tiny's weights to F16 and BF16: loading converts them once; results differ only by rounding.
    const auto dir = test::testdataDir() / "txl-tiny";
    for (const auto dtype : {core::DType::F16, core::DType::BF16}) {
        test::TempDir tmp;
        auto weights = test::loadAll((dir / "model.safetensors").string());
        for (auto& w : weights)
            w.storeAs = dtype;
        core::writeSafetensors((tmp / "model.safetensors").string(), weights);
        std::filesystem::copy_file(dir / "config.json", tmp / "config.json");
        const auto half = core::loadModel(tmp.path().string());
        const auto full = core::loadModel(dir.string());
        const auto input = core::readJsonFile((dir / "input.json").string());
        const auto a = core::dumpReference(*half.model, input, "input.json");
        const auto b = core::dumpReference(*full.model, input, "input.json");
        REQUIRE(a.size() == b.size());
        double maxDiff = 0;
        for (std::size_t i = 0; i < a.size(); ++i)
            if (a[i].name.find("attn_prob") != std::string::npos)
                maxDiff = std::max(maxDiff, test::compare(b[i], a[i], 1, 0).maxAbsDiff);
        INFO("dtype " << core::dtypeName(dtype) << " max attn_prob diff " << maxDiff);
        CHECK(maxDiff > 0);      // the weights really were rounded
        CHECK(maxDiff < 0.05);   // but attention is essentially the same
    }
}

TEST_CASE("half precision conversions are exact where representable", "[dtype]")
{
    for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f, 0.333251953125f})
        CHECK(core::halfToFloat(core::floatToHalf(f)) == f);
    CHECK(core::floatToHalf(1e6f) == 0x7C00);                  // overflow to +inf
    CHECK(core::halfToFloat(0x3C00) == 1.0f);
    CHECK(core::bfloat16ToFloat(0x3F80) == 1.0f);
    CHECK(core::halfToFloat(core::floatToHalf(1.0f + 1.0f / 4096)) == 1.0f); // ties round to even
}
