// Preprocessing: Pillow's resampling in its 8-bit integer arithmetic, then crop, rescale and normalise.
#include "image/preprocess.h"

#include "util/error.h"
#include "util/text_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace attnscope::core {

namespace {
constexpr int kPrecisionBits = 32 - 8 - 2; // Pillow's: 22 fractional bits

double filterValue(double x, int resample)
{
    x = std::abs(x);
    if (resample == 2) // bilinear: the triangle
        return x < 1.0 ? 1.0 - x : 0.0;
    constexpr double a = -0.5; // bicubic
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}

// One axis's taps: per output index the first input index and the integer weights.
struct Taps {
    std::vector<int> first;
    std::vector<std::vector<std::int32_t>> weights;
};

Taps precompute(int inSize, int outSize, int resample)
{
    const double support0 = resample == 2 ? 1.0 : 2.0;
    const double scale = static_cast<double>(inSize) / outSize;
    const double filterScale = std::max(scale, 1.0);
    const double support = support0 * filterScale;
    Taps t;
    for (int i = 0; i < outSize; ++i) {
        const double center = (i + 0.5) * scale;
        const double ss = 1.0 / filterScale;
        int lo = static_cast<int>(center - support + 0.5); // truncation toward zero, as C's (int)
        lo = std::max(lo, 0);
        int hi = static_cast<int>(center + support + 0.5);
        hi = std::min(hi, inSize);
        std::vector<double> k;
        double sum = 0;
        for (int x = lo; x < hi; ++x) {
            k.push_back(filterValue((x - center + 0.5) * ss, resample));
            sum += k.back();
        }
        std::vector<std::int32_t> kk;
        for (double w : k) {
            if (sum != 0)
                w /= sum;
            kk.push_back(static_cast<std::int32_t>(w * (1 << kPrecisionBits) + (w < 0 ? -0.5 : 0.5)));
        }
        t.first.push_back(lo);
        t.weights.push_back(std::move(kk));
    }
    return t;
}

std::uint8_t clip8(std::int64_t v)
{
    v >>= kPrecisionBits;
    return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

int requireInt(const nlohmann::json& j, const char* key, const std::string& file, const std::string& where)
{
    const auto it = j.find(key);
    // A side of at most 8192 pixels: the resized picture is allocated from it (100,000 a side asked for 30 GB).
    if (it == j.end() || !it->is_number_integer() || it->get<long long>() < 1 || it->get<long long>() > 8192)
        throw Error(ErrorCode::BadConfig, "needs a whole number \"" + std::string(key) + "\" from 1 to 8192", file, where);
    return it->get<int>();
}
// A size as Hugging Face's get_size_dict reads it: an object as written; a legacy integer the square of that side
// (`defaultToSquare`) or the shortest edge; a [height, width] list.
nlohmann::json sizeDict(const nlohmann::json& v, bool defaultToSquare)
{
    if (v.is_number_integer())
        return defaultToSquare ? nlohmann::json{{"height", v}, {"width", v}} : nlohmann::json{{"shortest_edge", v}};
    if (v.is_array() && v.size() == 2)
        return nlohmann::json{{"height", v[0]}, {"width", v[1]}};
    return v;
}

// Whether the processor reads an integer size as a square: ViT's and DeiT's (and the base class's) do; CLIP's and
// Bit's (DINOv2's) keep the aspect and take it as the shortest edge.
bool integerSizeIsSquare(const nlohmann::json& j)
{
    for (const char* key : {"image_processor_type", "feature_extractor_type"})
        if (const auto it = j.find(key); it != j.end() && it->is_string()) {
            const std::string type = it->get<std::string>();
            return type.rfind("CLIP", 0) != 0 && type.rfind("Bit", 0) != 0;
        }
    return true;
}
} // namespace

Image8 pillowResize(const Image8& in, int width, int height, int resample)
{
    if (resample != 2 && resample != 3)
        throw Error(ErrorCode::BadConfig, "resample " + std::to_string(resample) + " is not supported (2 bilinear, 3 bicubic are)");
    if (width < 1 || height < 1 || in.width < 1 || in.height < 1)
        throw Error(ErrorCode::BadInput, "cannot resize an image of " + std::to_string(in.width) + " x " +
                                             std::to_string(in.height) + " to " + std::to_string(width) + " x " +
                                             std::to_string(height));
    // Horizontal pass into 8 bits.
    Image8 mid{in.height, width, std::vector<std::uint8_t>(static_cast<std::size_t>(in.height) * width * 3)};
    const Taps h = precompute(in.width, width, resample);
    for (int y = 0; y < in.height; ++y)
        for (int x = 0; x < width; ++x) {
            const auto& k = h.weights[static_cast<std::size_t>(x)];
            const int x0 = h.first[static_cast<std::size_t>(x)];
            for (int ch = 0; ch < 3; ++ch) {
                std::int64_t ss = std::int64_t(1) << (kPrecisionBits - 1);
                for (std::size_t i = 0; i < k.size(); ++i)
                    ss += static_cast<std::int64_t>(in.rgb[(static_cast<std::size_t>(y) * in.width + x0 + i) * 3 + ch]) * k[i];
                mid.rgb[(static_cast<std::size_t>(y) * width + x) * 3 + ch] = clip8(ss);
            }
        }
    // Vertical pass.
    Image8 out{height, width, std::vector<std::uint8_t>(static_cast<std::size_t>(height) * width * 3)};
    const Taps v = precompute(in.height, height, resample);
    for (int y = 0; y < height; ++y) {
        const auto& k = v.weights[static_cast<std::size_t>(y)];
        const int y0 = v.first[static_cast<std::size_t>(y)];
        for (int x = 0; x < width; ++x)
            for (int ch = 0; ch < 3; ++ch) {
                std::int64_t ss = std::int64_t(1) << (kPrecisionBits - 1);
                for (std::size_t i = 0; i < k.size(); ++i)
                    ss += static_cast<std::int64_t>(mid.rgb[((y0 + i) * static_cast<std::size_t>(width) + x) * 3 + ch]) * k[i];
                out.rgb[(static_cast<std::size_t>(y) * width + x) * 3 + ch] = clip8(ss);
            }
    }
    return out;
}

Image8 centerCrop(const Image8& in, int height, int width)
{
    if (height > in.height || width > in.width)
        throw Error(ErrorCode::BadInput, "cannot crop " + std::to_string(width) + " x " + std::to_string(height) +
                                             " out of an image of " + std::to_string(in.width) + " x " +
                                             std::to_string(in.height));
    const int top = (in.height - height) / 2, left = (in.width - width) / 2;
    Image8 out{height, width, std::vector<std::uint8_t>(static_cast<std::size_t>(height) * width * 3)};
    for (int y = 0; y < height; ++y)
        std::copy_n(in.rgb.begin() + ((static_cast<std::ptrdiff_t>(top) + y) * in.width + left) * 3, width * 3,
                    out.rgb.begin() + static_cast<std::ptrdiff_t>(y) * width * 3);
    return out;
}

std::pair<int, int> resizedSize(const Preprocessor& p, int height, int width)
{
    if (p.shortestEdge <= 0)
        return {p.height, p.width};
    // The shorter side becomes shortestEdge, the longer int(shortestEdge * long / short) (truncated, as Python's int).
    const bool tall = height > width;
    const int shortSide = tall ? width : height, longSide = tall ? height : width;
    const int newLong = static_cast<int>(static_cast<double>(p.shortestEdge) * longSide / shortSide);
    return tall ? std::pair{newLong, p.shortestEdge} : std::pair{p.shortestEdge, newLong};
}

static Image8 resizedAndCropped(const Image8& image, const Preprocessor& p); // the resize, then the crop

Image8 preparedImage(const Image8& image, const Preprocessor& p)
{
    try {
        return resizedAndCropped(image, p);
    } catch (const Error& e) { // a size or crop the picture cannot take: the file that asked for it is named
        if (!e.file().empty() || p.source.empty())
            throw;
        throw Error(e.code(), e.message(), p.source);
    }
}

Image8 padToSquare(const Image8& in, const std::uint8_t colour[3])
{
    if (in.height == in.width)
        return in;
    const int side = std::max(in.height, in.width);
    Image8 out;
    out.height = out.width = side;
    out.rgb.resize(static_cast<std::size_t>(side) * side * 3);
    for (std::size_t i = 0; i < out.rgb.size(); i += 3)
        std::copy_n(colour, 3, out.rgb.data() + i);
    const int top = (side - in.height) / 2, left = (side - in.width) / 2;
    for (int y = 0; y < in.height; ++y)
        std::copy_n(in.rgb.data() + static_cast<std::size_t>(y) * in.width * 3, static_cast<std::size_t>(in.width) * 3,
                    out.rgb.data() + (static_cast<std::size_t>(y + top) * side + left) * 3);
    return out;
}

static Image8 resizedAndCropped(const Image8& image, const Preprocessor& p)
{
    Image8 img = p.padToSquare ? padToSquare(image, p.padColour) : image;
    if (p.resize) {
        const auto [h, w] = resizedSize(p, img.height, img.width);
        // The longer side follows the picture's aspect: a 1 x 30,000 picture at shortest edge 8,192 would be huge.
        if (static_cast<std::int64_t>(h) * w > (std::int64_t(1) << 26))
            throw Error(ErrorCode::BadInput, "the picture would be resized to " + std::to_string(w) + " x " +
                                                 std::to_string(h) + " pixels, more than 64 million");
        img = pillowResize(img, w, h, p.resample);
    }
    if (p.centerCrop)
        img = centerCrop(img, p.cropHeight, p.cropWidth);
    return img;
}

PixelValues preprocessImage(const Image8& image, const Preprocessor& p) { return pixelValuesOf(preparedImage(image, p), p); }

PixelValues pixelValuesOf(const Image8& img, const Preprocessor& p)
{
    PixelValues px;
    px.height = img.height;
    px.width = img.width;
    px.data.resize(static_cast<std::size_t>(3) * img.height * img.width);
    for (int ch = 0; ch < 3; ++ch)
        for (int y = 0; y < img.height; ++y)
            for (int x = 0; x < img.width; ++x) {
                const std::uint8_t v = img.rgb[(static_cast<std::size_t>(y) * img.width + x) * 3 + ch];
                float f = p.rescale ? static_cast<float>(static_cast<double>(v) * p.rescaleFactor) : static_cast<float>(v);
                if (p.normalize)
                    f = (f - p.mean[ch]) / p.std[ch];
                px.data[(static_cast<std::size_t>(ch) * img.height + y) * img.width + x] = f;
            }
    return px;
}

// LlavaImageProcessor's do_pad (other processors' do_pad pads batches, which one picture never needs): the colour is
// Python's int(x * 255) of each mean, in double as the processor computes it.
static void readPadding(const nlohmann::json& j, Preprocessor& p)
{
    const auto type = j.find("image_processor_type");
    const auto pad = j.find("do_pad");
    if (type == j.end() || !type->is_string() || type->get<std::string>().rfind("LlavaImageProcessor", 0) != 0 ||
        pad == j.end() || !pad->is_boolean() || !pad->get<bool>())
        return;
    p.padToSquare = true;
    const auto mean = j.find("image_mean");
    for (int c = 0; c < 3; ++c) {
        const double m = mean != j.end() ? (*mean)[static_cast<std::size_t>(c)].get<double>() : p.mean[c];
        p.padColour[c] = static_cast<std::uint8_t>(std::clamp(static_cast<int>(m * 255.0), 0, 255));
    }
}

Preprocessor parsePreprocessor(const nlohmann::json& j, const std::string& file)
{
    if (!j.is_object())
        throw Error(ErrorCode::BadConfig, "is not a JSON object", file);
    Preprocessor p;
    p.source = file;
    auto flag = [&](const char* key, bool fallback) {
        const auto it = j.find(key);
        return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
    };
    p.resize = flag("do_resize", true);
    p.centerCrop = flag("do_center_crop", false);
    p.rescale = flag("do_rescale", true);
    p.normalize = flag("do_normalize", true);
    if (const auto it = j.find("resample"); it != j.end() && it->is_number_integer())
        p.resample = it->get<int>();
    if (p.resample != 2 && p.resample != 3)
        throw Error(ErrorCode::BadConfig, "resample " + std::to_string(p.resample) + " is not supported (2 bilinear, 3 bicubic are)",
                    file, "resample");
    if (p.resize) {
        const auto it = j.find("size");
        const nlohmann::json size = it == j.end() ? nlohmann::json() : sizeDict(*it, integerSizeIsSquare(j));
        if (!size.is_object())
            throw Error(ErrorCode::BadConfig, "needs \"size\" ({height, width}, {shortest_edge} or a whole number)", file,
                        "size");
        if (size.contains("shortest_edge")) {
            p.shortestEdge = requireInt(size, "shortest_edge", file, "size");
        } else {
            p.height = requireInt(size, "height", file, "size");
            p.width = requireInt(size, "width", file, "size");
        }
    }
    if (p.centerCrop) {
        const auto it = j.find("crop_size");
        const nlohmann::json crop = it == j.end() ? nlohmann::json() : sizeDict(*it, true); // a crop is square
        if (!crop.is_object())
            throw Error(ErrorCode::BadConfig, "needs \"crop_size\" ({height, width} or a whole number)", file, "crop_size");
        p.cropHeight = requireInt(crop, "height", file, "crop_size");
        p.cropWidth = requireInt(crop, "width", file, "crop_size");
    }
    if (const auto it = j.find("rescale_factor"); it != j.end() && it->is_number())
        p.rescaleFactor = it->get<double>();
    for (const auto* key : {"image_mean", "image_std"}) {
        const auto it = j.find(key);
        if (it == j.end())
            continue;
        if (!it->is_array() || it->size() != 3)
            throw Error(ErrorCode::BadConfig, "must list 3 numbers (R, G, B)", file, key);
        for (int c = 0; c < 3; ++c) {
            const auto& v = (*it)[static_cast<std::size_t>(c)];
            // Within what 8-bit pixels can mean: a standard deviation of 1e-300 made infinite pixel values that a
            // run then blamed on the weights.
            const bool isStd = std::string(key) == "image_std";
            if (!v.is_number() || !std::isfinite(v.get<double>()) || std::abs(v.get<double>()) > 1e3 ||
                (isStd && v.get<double>() < 1e-6))
                throw Error(ErrorCode::BadConfig, "must list numbers of at most 1000 (standard deviations of at least 1e-6)",
                            file, key);
            (std::string(key) == "image_mean" ? p.mean : p.std)[c] = static_cast<float>(v.get<double>());
        }
    }
    readPadding(j, p);
    return p;
}

Preprocessor readPreprocessor(const std::string& folder)
{
    const auto path = (std::filesystem::path(folder) / "preprocessor_config.json").string();
    if (!std::filesystem::exists(path))
        throw Error(ErrorCode::Io, "no preprocessor_config.json: how to prepare an image for this model is unknown", path);
    return parsePreprocessor(readJsonFile(path), path);
}

} // namespace attnscope::core
