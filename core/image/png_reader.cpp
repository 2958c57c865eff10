// readPng: chunks, inflate, unfilter, convert.
#include "image/png_reader.h"

#include "util/error.h"
#include "util/text_file.h"

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace attnscope::core {

namespace {
[[noreturn]] void corrupt(const std::string& name, const std::string& what)
{
    throw Error(ErrorCode::CorruptFile, what, name);
}

class BitReader {
public:
    BitReader(std::span<const std::uint8_t> d, const std::string& name)
        : m_d(d)
        , m_name(name)
    {
    }
    int bit()
    {
        if (m_pos >= m_d.size())
            corrupt(m_name, "the compressed image data ends early");
        const int b = (m_d[m_pos] >> m_bit) & 1;
        if (++m_bit == 8) {
            m_bit = 0;
            ++m_pos;
        }
        return b;
    }
    unsigned bits(int n) // LSB first
    {
        unsigned v = 0;
        for (int i = 0; i < n; ++i)
            v |= static_cast<unsigned>(bit()) << i;
        return v;
    }
    void alignToByte()
    {
        if (m_bit != 0) {
            m_bit = 0;
            ++m_pos;
        }
    }
    std::uint8_t byte()
    {
        if (m_pos >= m_d.size())
            corrupt(m_name, "the compressed image data ends early");
        return m_d[m_pos++];
    }

private:
    std::span<const std::uint8_t> m_d;
    const std::string& m_name;
    std::size_t m_pos = 0;
    int m_bit = 0;
};

// A canonical Huffman code: symbols by code length, decoded a bit at a time.
struct Huffman {
    std::array<int, 16> count{};
    std::vector<int> symbols;
    void build(const std::vector<int>& lengths, const std::string& name)
    {
        count.fill(0);
        for (int l : lengths)
            ++count[static_cast<std::size_t>(l)];
        count[0] = 0;
        int left = 1; // over-subscribed codes are refused
        for (int l = 1; l < 16; ++l) {
            left = left * 2 - count[static_cast<std::size_t>(l)];
            if (left < 0)
                corrupt(name, "a Huffman table of the compressed data is invalid");
        }
        std::array<int, 16> offset{};
        for (int l = 1; l < 15; ++l)
            offset[static_cast<std::size_t>(l) + 1] = offset[static_cast<std::size_t>(l)] + count[static_cast<std::size_t>(l)];
        symbols.assign(lengths.size(), 0);
        for (std::size_t s = 0; s < lengths.size(); ++s)
            if (lengths[s] != 0)
                symbols[static_cast<std::size_t>(offset[static_cast<std::size_t>(lengths[s])]++)] = static_cast<int>(s);
    }
    int decode(BitReader& in, const std::string& name) const
    {
        int code = 0, first = 0, index = 0;
        for (int l = 1; l < 16; ++l) {
            code |= in.bit();
            const int n = count[static_cast<std::size_t>(l)];
            if (code - n < first)
                return symbols[static_cast<std::size_t>(index + (code - first))];
            index += n;
            first = (first + n) << 1;
            code <<= 1;
        }
        corrupt(name, "the compressed image data holds a code no table has");
    }
};

constexpr int kLengthBase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
constexpr int kLengthExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
constexpr int kDistBase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
constexpr int kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

std::uint32_t crc32(const std::uint8_t* p, std::size_t n)
{
    static const auto table = [] {
        std::array<std::uint32_t, 256> t{};
        for (std::uint32_t i = 0; i < 256; ++i) {
            std::uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i)
        c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

std::uint32_t be32(const std::uint8_t* p)
{
    return (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
}
} // namespace

std::vector<std::uint8_t> inflateZlib(std::span<const std::uint8_t> data, std::size_t limit, const std::string& name)
{
    if (data.size() < 2 || (data[0] & 0x0F) != 8 || ((data[0] << 8) | data[1]) % 31 != 0 || (data[1] & 0x20))
        corrupt(name, "the image data is not a zlib stream");
    BitReader in(data.subspan(2), name);
    std::vector<std::uint8_t> out;
    auto put = [&](std::uint8_t b) {
        if (out.size() >= limit)
            corrupt(name, "the image data inflates to more bytes than its size needs");
        out.push_back(b);
    };
    Huffman lit, dist;
    bool last = false;
    while (!last) {
        last = in.bit() != 0;
        const unsigned type = in.bits(2);
        if (type == 0) { // stored
            in.alignToByte();
            const unsigned len = in.byte() | (in.byte() << 8);
            const unsigned nlen = in.byte() | (in.byte() << 8);
            if ((len ^ 0xFFFFu) != nlen)
                corrupt(name, "a stored block of the image data has a broken length");
            for (unsigned i = 0; i < len; ++i)
                put(in.byte());
            continue;
        }
        if (type == 3)
            corrupt(name, "the image data has a block of an unknown type");
        if (type == 1) { // fixed codes
            std::vector<int> l(288);
            for (int i = 0; i < 288; ++i)
                l[static_cast<std::size_t>(i)] = i < 144 ? 8 : i < 256 ? 9 : i < 280 ? 7 : 8;
            lit.build(l, name);
            dist.build(std::vector<int>(30, 5), name);
        } else { // dynamic codes
            const int hlit = static_cast<int>(in.bits(5)) + 257, hdist = static_cast<int>(in.bits(5)) + 1,
                      hclen = static_cast<int>(in.bits(4)) + 4;
            static const int order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
            std::vector<int> cl(19, 0);
            for (int i = 0; i < hclen; ++i)
                cl[static_cast<std::size_t>(order[i])] = static_cast<int>(in.bits(3));
            Huffman clh;
            clh.build(cl, name);
            std::vector<int> lengths;
            while (static_cast<int>(lengths.size()) < hlit + hdist) {
                const int sym = clh.decode(in, name);
                if (sym < 16) {
                    lengths.push_back(sym);
                } else {
                    int repeat = 0, value = 0;
                    if (sym == 16) {
                        if (lengths.empty())
                            corrupt(name, "a code-length repeat of the image data has nothing to repeat");
                        value = lengths.back();
                        repeat = 3 + static_cast<int>(in.bits(2));
                    } else {
                        repeat = sym == 17 ? 3 + static_cast<int>(in.bits(3)) : 11 + static_cast<int>(in.bits(7));
                    }
                    if (static_cast<int>(lengths.size()) + repeat > hlit + hdist)
                        corrupt(name, "the code lengths of the image data overrun their table");
                    lengths.insert(lengths.end(), static_cast<std::size_t>(repeat), value);
                }
            }
            lit.build(std::vector<int>(lengths.begin(), lengths.begin() + hlit), name);
            dist.build(std::vector<int>(lengths.begin() + hlit, lengths.end()), name);
        }
        for (;;) {
            const int sym = lit.decode(in, name);
            if (sym < 256) {
                put(static_cast<std::uint8_t>(sym));
                continue;
            }
            if (sym == 256)
                break;
            const int li = sym - 257;
            if (li >= 29)
                corrupt(name, "the image data has an invalid length code");
            const int len = kLengthBase[li] + static_cast<int>(in.bits(kLengthExtra[li]));
            const int di = dist.decode(in, name);
            if (di >= 30)
                corrupt(name, "the image data has an invalid distance code");
            const std::size_t d = static_cast<std::size_t>(kDistBase[di]) + in.bits(kDistExtra[di]);
            if (d > out.size())
                corrupt(name, "the image data refers back before its start");
            for (int i = 0; i < len; ++i)
                put(out[out.size() - d]);
        }
    }
    return out;
}

namespace {
// A row's filter (its first byte) undone against the row above (`up`; zeros for the first): PNG's five filters.
void unfilterRow(const std::uint8_t* filtered, const std::uint8_t* up, std::uint8_t* cur, std::size_t stride,
                 std::size_t bpp, std::size_t y, const std::string& name)
{
    const std::uint8_t filter = filtered[0];
    const std::uint8_t* src = filtered + 1;
    for (std::size_t i = 0; i < stride; ++i) {
        const int a = i >= bpp ? cur[i - bpp] : 0, c = i >= bpp ? up[i - bpp] : 0, u = up[i];
        int v = src[i];
        switch (filter) {
        case 0: break;
        case 1: v += a; break;
        case 2: v += u; break;
        case 3: v += (a + u) / 2; break;
        case 4: {
            const int p = a + u - c, pa = std::abs(p - a), pb = std::abs(p - u), pc = std::abs(p - c);
            v += pa <= pb && pa <= pc ? a : pb <= pc ? u : c;
            break;
        }
        default: corrupt(name, "row " + std::to_string(y) + " has an unknown filter " + std::to_string(filter));
        }
        cur[i] = static_cast<std::uint8_t>(v);
    }
}

struct RowFormat {
    int colour, depth, channels;
    std::size_t width;
};

// One unfiltered row as 8-bit RGB: palettes looked up, grey spread to three channels, 16-bit samples to their high
// byte, alpha dropped.
void convertRow(const std::uint8_t* line, const RowFormat& f, const std::vector<std::uint8_t>& palette, std::uint8_t* out,
                const std::string& name)
{
    const int colour = f.colour, depth = f.depth, channels = f.channels;
    for (std::size_t x = 0; x < f.width; ++x) {
        std::uint8_t rgb[3];
        auto sample = [&](int channel) -> std::uint8_t { // the high byte of a 16-bit sample
            return depth == 16 ? line[(x * channels + channel) * 2] : line[x * channels + channel];
        };
        if (colour == 3 || (colour == 0 && depth < 8)) {
            const std::size_t bit = x * depth;
            const int v = (line[bit / 8] >> (8 - depth - bit % 8)) & ((1 << depth) - 1);
            if (colour == 3) {
                if (static_cast<std::size_t>(v) * 3 + 2 >= palette.size())
                    corrupt(name, "a pixel names a colour past the palette");
                std::memcpy(rgb, palette.data() + v * 3, 3);
            } else {
                rgb[0] = rgb[1] = rgb[2] = static_cast<std::uint8_t>(v * 255 / ((1 << depth) - 1));
            }
        } else if (colour == 0 || colour == 4) {
            rgb[0] = rgb[1] = rgb[2] = sample(0);
        } else {
            rgb[0] = sample(0);
            rgb[1] = sample(1);
            rgb[2] = sample(2);
        }
        std::memcpy(out + x * 3, rgb, 3);
    }
}
} // namespace

Image8 decodePng(std::span<const std::uint8_t> b, const std::string& name)
{
    static const std::uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (b.size() < 8 || std::memcmp(b.data(), signature, 8) != 0)
        corrupt(name, "is not a PNG file (the command line reads PNG; give a JPEG to the window, or --pixel-values)");
    std::size_t at = 8;
    std::uint32_t width = 0, height = 0;
    int depth = 0, colour = -1;
    std::vector<std::uint8_t> idat, palette;
    bool ended = false;
    while (!ended) {
        if (at + 12 > b.size())
            corrupt(name, "ends inside a chunk (no IEND)");
        const std::uint32_t len = be32(b.data() + at);
        if (len > b.size() - at - 12)
            corrupt(name, "a chunk runs past the end of the file");
        const std::string type(reinterpret_cast<const char*>(b.data() + at + 4), 4);
        const std::uint8_t* data = b.data() + at + 8;
        if (crc32(b.data() + at + 4, len + 4) != be32(data + len))
            corrupt(name, "chunk " + type + " fails its CRC: the file is damaged");
        if (type == "IHDR") {
            if (len != 13)
                corrupt(name, "IHDR has the wrong size");
            width = be32(data);
            height = be32(data + 4);
            depth = data[8];
            colour = data[9];
            if (data[10] != 0 || data[11] != 0)
                corrupt(name, "uses an unknown compression or filter method");
            if (data[12] != 0)
                corrupt(name, "is interlaced (Adam7), which the command line does not read: save it without "
                              "interlacing, or open it in the window");
        } else if (type == "PLTE") {
            palette.assign(data, data + len);
        } else if (type == "IDAT") {
            idat.insert(idat.end(), data, data + len);
        } else if (type == "IEND") {
            ended = true;
        }
        at += 12 + len;
    }
    const int channels = colour == 0 ? 1 : colour == 2 ? 3 : colour == 3 ? 1 : colour == 4 ? 2 : colour == 6 ? 4 : 0;
    const bool depthOk = colour == 3 ? (depth == 1 || depth == 2 || depth == 4 || depth == 8)
                                     : (colour == 0 ? (depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16)
                                                    : (depth == 8 || depth == 16));
    if (channels == 0 || !depthOk)
        corrupt(name, "has colour type " + std::to_string(colour) + " at " + std::to_string(depth) + " bits, which PNG does not define");
    // Its size decides what is allocated: at most 32768 a side and 100 million pixels (300 MB as RGB).
    if (width == 0 || height == 0 || width > 32768 || height > 32768 || std::uint64_t(width) * height > 100'000'000)
        corrupt(name, "has a size of " + std::to_string(width) + " x " + std::to_string(height) +
                          " (1 to 32768 a side, at most 100 million pixels)");
    if (colour == 3 && (palette.empty() || palette.size() % 3 != 0))
        corrupt(name, "is a palette image without a valid palette");
    const std::size_t bitsPerPixel = static_cast<std::size_t>(channels) * depth;
    const std::size_t stride = (width * bitsPerPixel + 7) / 8, bpp = std::max<std::size_t>(1, bitsPerPixel / 8);
    const auto raw = inflateZlib(idat, height * (stride + 1), name);
    if (raw.size() != height * (stride + 1))
        corrupt(name, "its image data holds " + std::to_string(raw.size()) + " bytes, its size needs " +
                          std::to_string(height * (stride + 1)));
    // Row by row: each row is unfiltered against the one before and converted at once, so only two rows are kept
    // beside the inflated data (a 16-bit RGBA picture of 10,000 x 10,000 held a second 800 MB copy).
    Image8 img{static_cast<int>(height), static_cast<int>(width), std::vector<std::uint8_t>(static_cast<std::size_t>(height) * width * 3)};
    std::vector<std::uint8_t> previous(stride, 0), current(stride);
    const RowFormat format{colour, depth, channels, width};
    for (std::size_t y = 0; y < height; ++y) {
        unfilterRow(raw.data() + y * (stride + 1), previous.data(), current.data(), stride, bpp, y, name);
        convertRow(current.data(), format, palette, img.rgb.data() + y * width * 3, name);
        std::swap(previous, current);
    }
    return img;
}

Image8 readPng(const std::string& path)
{
    // Asked before it is opened: opening a FIFO blocks until a writer comes, and a folder has no size to read.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw Error(ErrorCode::Io, "is a folder, not a picture", path);
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
        throw Error(ErrorCode::Io, "not a regular file", path);
    std::ifstream f(path, std::ios::binary);
    if (!f)
        throw Error(ErrorCode::Io, "cannot open the picture", path);
    f.seekg(0, std::ios::end);
    const auto size = static_cast<std::size_t>(f.tellg());
    if (size > (std::size_t(1) << 30))
        throw Error(ErrorCode::BadInput, "a picture of more than 1 GiB is not read", path);
    f.seekg(0);
    std::vector<std::uint8_t> bytes(size);
    f.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
    if (!f)
        throw Error(ErrorCode::Io, "cannot read the picture", path);
    return decodePng(bytes, path);
}

} // namespace attnscope::core
