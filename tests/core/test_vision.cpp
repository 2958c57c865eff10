// Vision transformers against the reference cases (Hugging Face's PyTorch code): every tensor from the stored
// pixel_values, and preprocessing from the stored 8-bit intermediates exactly.
#include "analysis/head_atlas.h"
#include "analysis/image_dump.h"
#include "image/png_reader.h"
#include "image/preprocess.h"
#include "io/safetensors.h"
#include "model/model_loader.h"
#include "model/vision.h"
#include "run/image_capture.h"
#include "run/text_capture.h"
#include "test_support.h"
#include "util/error.h"
#include "util/text_file.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace attnscope;

namespace {
core::Image8 storedImage(const std::filesystem::path& dir, const char* name)
{
    core::SafetensorsFile f((dir / "pixel_values.safetensors").string());
    const auto* t = f.find(name);
    REQUIRE(t);
    REQUIRE(t->shape.size() == 3);
    REQUIRE(t->shape[2] == 3);
    core::Image8 img{static_cast<int>(t->shape[0]), static_cast<int>(t->shape[1]), {}};
    const std::uint8_t* b = f.bytes(*t); // U8, [height, width, 3]
    img.rgb.assign(b, b + t->shape[0] * t->shape[1] * 3);
    return img;
}
} // namespace

TEST_CASE("vision transformers reproduce their reference tensors from the stored pixel values", "[vision][reference]")
{
    const auto cases = test::imageReferenceCases();
    CHECK(cases.size() >= 5); // vit, deit, dinov2, dinov2-reg, clip-vision
    for (const auto& dir : cases) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto loaded = core::loadModel(dir.string());
            REQUIRE(loaded.model->info().can.image);
            auto pixels = std::make_shared<const core::PixelValues>(core::readPixelValues((dir / "pixel_values.safetensors").string()));
            const auto out = core::dumpImage(*loaded.model, pixels);
            std::vector<std::string> report;
            const auto problems = test::referenceMismatches((dir / "expected.safetensors").string(), out, &report);
            for (const auto& line : report)
                UNSCOPED_INFO(line);
            for (const auto& p : problems)
                FAIL_CHECK(p);
            // The token stream: special tokens then patches, as input.json lists them.
            const auto input = core::readJsonFile((dir / "input.json").string());
            const auto* vision = dynamic_cast<const core::VisionModel*>(loaded.model.get());
            REQUIRE(vision);
            const auto labels = vision->tokenLabels(pixels->height, pixels->width);
            CHECK(static_cast<int>(labels.size()) == input["num_tokens"].get<int>());
            CHECK(labels.front() == "CLS");
            CHECK(labels.back() == "r" + std::to_string(input["grid"]["rows"].get<int>()) + "c" +
                                       std::to_string(input["grid"]["cols"].get<int>()));
        }
    }
}

TEST_CASE("crop, rescale and normalise give the processor's pixel values exactly", "[vision][preprocess]")
{
    for (const auto& dir : test::imageReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto p = core::readPreprocessor(dir.string());
            const auto resized = storedImage(dir, "resized");
            const auto cropped = storedImage(dir, "cropped");
            core::Preprocessor after = p;
            after.resize = false; // from the stored resize on
            const auto px = core::preprocessImage(resized, after);
            const auto want = core::readPixelValues((dir / "pixel_values.safetensors").string());
            REQUIRE(px.height == want.height);
            REQUIRE(px.width == want.width);
            for (std::size_t i = 0; i < px.data.size(); ++i)
                REQUIRE(px.data[i] == want.data[i]); // bit for bit
            if (p.centerCrop)
                CHECK(core::centerCrop(resized, p.cropHeight, p.cropWidth).rgb == cropped.rgb);
            // The resize step's size from the original's (input.json's image_size).
            const auto input = core::readJsonFile((dir / "input.json").string());
            const auto size = core::resizedSize(p, input["image_size"]["height"].get<int>(), input["image_size"]["width"].get<int>());
            CHECK(size.first == resized.height);
            CHECK(size.second == resized.width);
        }
    }
}

TEST_CASE("a vision model refuses images it cannot take, by size", "[vision]")
{
    const auto loaded = core::loadModel((test::testdataDir() / "vit-tiny").string());
    auto pixels = std::make_shared<core::PixelValues>();
    pixels->height = pixels->width = 36; // a whole number of patches, but not the fixed table's 32
    pixels->data.assign(3 * 36 * 36, 0.0f);
    CHECK_THROWS_WITH(core::dumpImage(*loaded.model, pixels), Catch::Contains("takes 32 x 32 pixels"));
    pixels->height = pixels->width = 30; // not whole patches
    pixels->data.assign(3 * 30 * 30, 0.0f);
    CHECK_THROWS_WITH(core::dumpImage(*loaded.model, pixels), Catch::Contains("whole number of 4-pixel patches"));
    const auto text = core::loadModel((test::testdataDir() / "llama-tiny").string());
    CHECK_THROWS_WITH(core::dumpImage(*text.model, pixels), Catch::Contains("vision models"));
}

TEST_CASE("the PNG reader gives the processor's pixel values from the reference pictures", "[vision][preprocess]")
{
    for (const auto& dir : test::imageReferenceCases()) {
        DYNAMIC_SECTION(dir.filename().string())
        {
            const auto image = core::readPng((dir / "image.png").string());
            const auto input = core::readJsonFile((dir / "input.json").string());
            CHECK(image.height == input["image_size"]["height"].get<int>());
            CHECK(image.width == input["image_size"]["width"].get<int>());
            const auto px = core::preprocessImage(image, core::readPreprocessor(dir.string()));
            CHECK(px.data == core::readPixelValues((dir / "pixel_values.safetensors").string()).data);
        }
    }
}

TEST_CASE("a damaged or unsupported PNG is refused by name", "[vision][preprocess]")
{
    const auto good = test::readBytes(test::imageReferenceCases().front() / "image.png");
    test::TempDir tmp;
    auto damaged = good;
    damaged[damaged.size() / 2] ^= 0x40; // inside the image data: its chunk's CRC no longer matches
    test::writeBytes(tmp / "damaged.png", damaged);
    CHECK_THROWS_WITH(core::readPng((tmp / "damaged.png").string()), Catch::Contains("damaged.png") && Catch::Contains("CRC"));
    test::writeBytes(tmp / "short.png", good.substr(0, good.size() / 3));
    CHECK_THROWS_WITH(core::readPng((tmp / "short.png").string()), Catch::Contains("short.png"));
    test::writeBytes(tmp / "photo.jpg", std::string("\xFF\xD8\xFF\xE0", 4) + "JFIF");
    CHECK_THROWS_WITH(core::readPng((tmp / "photo.jpg").string()), Catch::Contains("not a PNG"));
    // A zlib stream that claims more than the picture needs stops at the picture's size.
    const std::string bomb = std::string("\x78\x9c", 2) + std::string(64, '\0');
    CHECK_THROWS(core::inflateZlib(std::span(reinterpret_cast<const std::uint8_t*>(bomb.data()), bomb.size()), 10, "x"));
}

TEST_CASE("DINOv2's position tables meet other picture shapes as torch's interpolation does", "[vision][reference]")
{
    // tests/data/vision/README.md: PyTorch's interpolate (bicubic; antialiased for the registers model) of the cases'
    // tables to grids wider and taller than square.
    core::SafetensorsFile expected((test::projectDataDir() / "vision" / "position_interpolation.safetensors").string());
    for (const auto& t : expected.tensors()) {
        DYNAMIC_SECTION(t.name)
        {
            const std::string name = t.name.substr(0, t.name.find('.'));
            const auto grid = t.name.substr(t.name.find('.') + 1);
            const int rows = std::stoi(grid.substr(0, grid.find('x'))), cols = std::stoi(grid.substr(grid.find('x') + 1));
            const auto loaded = core::loadModel((test::testdataDir() / name).string());
            const int p = dynamic_cast<const core::VisionModel&>(*loaded.model).config().patch;
            auto pixels = std::make_shared<core::PixelValues>();
            pixels->height = rows * p;
            pixels->width = cols * p;
            pixels->data.assign(static_cast<std::size_t>(3) * pixels->height * pixels->width, 0.1f);
            bool compared = false;
            for (const auto& out : core::dumpImage(*loaded.model, pixels))
                if (out.name == "pos_embed") {
                    const auto want = core::readAsFloat(expected, t);
                    REQUIRE(out.data.size() == want.size());
                    for (std::size_t i = 0; i < want.size(); ++i)
                        REQUIRE(out.data[i] == Approx(want[i]).margin(1e-5));
                    compared = true;
                }
            CHECK(compared);
        }
    }
    CHECK(expected.tensors().size() == 4);
}

TEST_CASE("a picture's capture runs again for what it does not keep: its layer inputs' norms", "[vision]")
{
    // DINOv2 with registers on its case's picture: the atlas's high-norm column comes from a second run of the
    // capture, which needs the picture the capture kept. Tokens of outlying norm, where a layer has any, draw a share
    // of each head's rows between 0 and 1.
    const auto dir = test::testdataDir() / "dinov2-reg-tiny";
    const auto loaded = core::loadModel(dir.string());
    const auto& vision = dynamic_cast<const core::VisionModel&>(*loaded.model);
    auto pixels = std::make_shared<const core::PixelValues>(core::readPixelValues((dir / "pixel_values.safetensors").string()));
    const auto capture = core::capturePicture(vision, pixels);
    REQUIRE(capture->image == pixels);
    auto scores = core::tokenAttentionScores(*capture);
    CHECK_NOTHROW(core::addHighNormAttention(*loaded.model, *capture, scores));
    for (const auto& s : scores)
        if (!std::isnan(s.highNorm))
            CHECK((s.highNorm >= 0.0 && s.highNorm <= 1.0 + 1e-6));
}

TEST_CASE("sizes a picture or a preprocessor asks for are bounded before anything is allocated", "[vision][preprocess]")
{
    nlohmann::json p = {{"do_resize", true}, {"size", {{"height", 100000}, {"width", 100000}}}};
    CHECK_THROWS_WITH(core::parsePreprocessor(p, "pre.json"), Catch::Contains("pre.json") && Catch::Contains("8192"));
    core::Preprocessor wide;
    wide.shortestEdge = 8192; // a 1 x 30,000 picture: 8,192 x 245 million
    core::Image8 strip{1, 30000, std::vector<std::uint8_t>(90000, 0)};
    CHECK_THROWS_WITH(core::preprocessImage(strip, wide), Catch::Contains("64 million"));
    // A PNG header claiming 30,000 x 30,000 pixels is refused before its image data is inflated.
    auto bytes = test::readBytes(test::imageReferenceCases().front() / "image.png");
    auto be = [&](std::size_t at, std::uint32_t v) {
        for (int i = 0; i < 4; ++i)
            bytes[at + static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
    };
    be(16, 30000); // IHDR width and height, then its CRC recomputed as a valid file would have it
    be(20, 30000);
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = 12; i < 29; ++i) {
        c ^= static_cast<std::uint8_t>(bytes[i]);
        for (int k = 0; k < 8; ++k)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    be(29, c ^ 0xFFFFFFFFu);
    CHECK_THROWS_WITH(core::decodePng(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), "big.png"),
                      Catch::Contains("100 million pixels"));
}
