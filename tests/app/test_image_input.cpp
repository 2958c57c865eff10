// An image file to pixel values: Qt decodes the reference's PNG, the core resizes it as Pillow does; the 8-bit
// intermediates and the pixel values must be the processor's exactly.
#include "analysis/image_dump.h"
#include "analysis/rollout.h"
#include "data/results.h"
#include "image/image_capture.h"
#include "model/model_loader.h"
#include "views/image_views.h"
#include "image/image_file.h"
#include "image/png_reader.h"
#include "image/preprocess.h"
#include "io/safetensors.h"
#include "test_support.h"
#include "util/error.h"

#include <catch2/catch.hpp>

using namespace attnscope;

TEST_CASE("an image file preprocesses to the reference processor's pixels bit for bit", "[vision][preprocess]")
{
    const auto cases = test::imageReferenceCases();
    CHECK(cases.size() >= 5);
    for (const auto& dir : cases) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto image = app::decodeImageFile(QString::fromStdString((dir / "image.png").string()));
            const auto p = core::readPreprocessor(dir.string());
            core::SafetensorsFile stored((dir / "pixel_values.safetensors").string());
            const auto* resized = stored.find("resized");
            REQUIRE(resized);
            const auto [h, w] = core::resizedSize(p, image.height, image.width);
            const auto mine = core::pillowResize(image, w, h, p.resample);
            REQUIRE(static_cast<std::int64_t>(mine.rgb.size()) == resized->shape[0] * resized->shape[1] * 3);
            const std::uint8_t* want = stored.bytes(*resized);
            std::size_t differ = 0;
            for (std::size_t i = 0; i < mine.rgb.size(); ++i)
                differ += mine.rgb[i] != want[i];
            CHECK(differ == 0);
            const auto px = core::preprocessImage(image, p);
            const auto ref = core::readPixelValues((dir / "pixel_values.safetensors").string());
            REQUIRE(px.data.size() == ref.data.size());
            CHECK(px.data == ref.data);
        }
    }
}

TEST_CASE("a file that is not an image is refused by name", "[vision]")
{
    test::TempDir tmp;
    test::writeBytes(tmp / "broken.png", "\x89PNG\r\n\x1a\n not really");
    CHECK_THROWS_WITH(app::decodeImageFile(QString::fromStdString((tmp / "broken.png").string())),
                      Catch::Contains("broken.png"));
    CHECK_THROWS_WITH(app::decodeImageFile(QString::fromStdString((tmp / "missing.png").string())),
                      Catch::Contains("no such image file"));
}

TEST_CASE("the image view's heat map is the reference's attention row over the patches", "[vision]")
{
    for (const auto& dir : test::imageReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            auto bundle = std::make_shared<app::ModelBundle>();
            bundle->loaded = loaded;
            const auto cap = app::captureImage(*loaded.model, QString::fromStdString(dir.string()), QStringLiteral("image.png"), {});
            const app::TextResult result{bundle, cap.capture, std::make_shared<const app::ImageCapture>(cap)};
            core::SafetensorsFile expected((dir / "expected.safetensors").string());
            const int T = static_cast<int>(cap.capture->tokens.size()), P = cap.specialTokens;
            const int layer = loaded.model->info().layers - 1, head = loaded.model->info().heads - 1, query = T - 1;
            const auto probs = core::readAsFloat(expected, *expected.find("layer" + std::to_string(layer) + ".attn_prob"));
            const auto d = app::imageOverlay(result, layer, head, app::ImageSource::Head, query, nullptr, "m");
            REQUIRE(d);
            REQUIRE(static_cast<int>(d->values.size()) == T - P);
            CHECK(d->selectedPatch == T - 1 - P);
            for (int j = P; j < T; ++j)
                CHECK(d->values[static_cast<std::size_t>(j - P)] ==
                      Approx(probs[(static_cast<std::size_t>(head) * T + query) * T + j]).margin(1e-5));
            // Every special token's map side by side: each its own row.
            const auto maps = app::imageOverlay(result, layer, head, app::ImageSource::SpecialTokens, 0, nullptr, "m");
            REQUIRE(static_cast<int>(maps->maps.size()) == P);
            for (int t = 0; t < P; ++t)
                for (int j = P; j < T; ++j)
                    CHECK(maps->maps[static_cast<std::size_t>(t)].values[static_cast<std::size_t>(j - P)] ==
                          Approx(probs[(static_cast<std::size_t>(head) * T + t) * T + j]).margin(1e-5));
            const auto rollout = core::attentionRollout(*cap.capture, 0);
            const auto r = app::imageOverlay(result, layer, head, app::ImageSource::Rollout, 0, &rollout, "m");
            const auto want = core::readAsFloat(expected, *expected.find("rollout"));
            for (int j = P; j < T; ++j)
                CHECK(r->values[static_cast<std::size_t>(j - P)] == Approx(want[static_cast<std::size_t>(j)]).margin(1e-5));
        }
    }
}

TEST_CASE("the command line's PNG reader and the window's decoder agree", "[vision]")
{
    for (const auto& dir : test::imageReferenceCases()) {
        const auto mine = core::readPng((dir / "image.png").string());
        const auto qt = app::decodeImageFile(QString::fromStdString((dir / "image.png").string()));
        CHECK(mine.rgb == qt.rgb);
    }
}
