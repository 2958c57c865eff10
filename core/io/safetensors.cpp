// safetensors: validation of every header field, and the F32 writer.
#include "io/safetensors.h"

#include "util/checked_size.h"

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text_file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

namespace attnscope::core {

std::string shapeToString(const Shape& s)
{
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i)
            out += ", ";
        out += std::to_string(s[i]);
    }
    return out + "]";
}

std::int64_t shapeNumel(const Shape& s)
{
    // Shapes come from files: a product past int64 is reported as the largest value (every reader then finds it
    // larger than its data) instead of overflowing.
    std::int64_t n = 1;
    for (auto d : s)
        if (d < 0 || __builtin_mul_overflow(n, d, &n))
            return std::numeric_limits<std::int64_t>::max();
    return n;
}

namespace {

std::uint64_t readLe64(const std::uint8_t* p)
{
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}

// Parses one header entry; every field checked with a message naming the tensor.
TensorInfo parseEntry(const std::string& file, const std::string& name, const nlohmann::json& e,
                      std::uint64_t dataSize)
{
    auto corrupt = [&](const std::string& msg) { return Error(ErrorCode::CorruptFile, msg, file, name); };
    if (!e.is_object())
        throw corrupt("header entry is not an object");
    TensorInfo t;
    t.name = name;

    const auto dt = e.find("dtype");
    if (dt == e.end() || !dt->is_string())
        throw corrupt("header entry has no \"dtype\" string");
    const auto parsed = parseDType(dt->get<std::string>());
    if (!parsed)
        throw Error(ErrorCode::UnsupportedDtype,
                    "unknown dtype \"" + dt->get<std::string>() +
                        "\" (known: F64, F32, F16, BF16, F8_E4M3, F8_E5M2, I64..I8, U64..U8, BOOL)",
                    file, name);
    t.dtype = *parsed;

    const auto sh = e.find("shape");
    if (sh == e.end() || !sh->is_array())
        throw corrupt("header entry has no \"shape\" array");
    // numel bounded by the data size, so the product cannot overflow before we check it.
    std::uint64_t numel = 1;
    for (const auto& d : *sh) {
        if (!d.is_number_integer() || d.get<std::int64_t>() < 0)
            throw corrupt("shape " + jsonPreview(*sh) + " has a non-integer or negative dimension");
        const auto dim = d.get<std::uint64_t>();
        t.shape.push_back(static_cast<std::int64_t>(dim));
        if (dim != 0 && numel > std::numeric_limits<std::uint64_t>::max() / dim)
            throw corrupt("shape " + jsonPreview(*sh) + " is too large");
        numel *= dim;
    }

    const auto off = e.find("data_offsets");
    if (off == e.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
        !(*off)[1].is_number_unsigned())
        throw corrupt("\"data_offsets\" must be two non-negative integers");
    const auto begin = (*off)[0].get<std::uint64_t>();
    const auto end = (*off)[1].get<std::uint64_t>();
    if (begin > end)
        throw corrupt("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] are reversed");
    if (end > dataSize)
        throw corrupt("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                      "] lie outside the data section of " + std::to_string(dataSize) +
                      " bytes (file truncated?)");
    const std::uint64_t elemSize = dtypeSize(t.dtype);
    if (const auto need = productOrMax(numel, elemSize); need != end - begin)
        throw corrupt("shape " + shapeToString(t.shape) + " x " + std::string(dtypeName(t.dtype)) + " needs " +
                      sizeText(need) + " bytes but data_offsets give " + std::to_string(end - begin));
    t.begin = static_cast<std::size_t>(begin);
    t.end = static_cast<std::size_t>(end);
    return t;
}

} // namespace

SafetensorsFile::SafetensorsFile(const std::string& path)
    : m_map(path)
{
    const auto size = static_cast<std::uint64_t>(m_map.size());
    if (size < 8)
        throw Error(ErrorCode::CorruptFile,
                    "file is " + std::to_string(size) + " bytes, too short for a safetensors header", path);
    const std::uint64_t headerLen = readLe64(m_map.data());
    if (headerLen > kMaxHeaderBytes)
        throw Error(ErrorCode::CorruptFile,
                    "header length " + std::to_string(headerLen) + " exceeds the limit of " +
                        std::to_string(kMaxHeaderBytes) + " bytes (not a safetensors file?)",
                    path);
    if (8 + headerLen > size)
        throw Error(ErrorCode::CorruptFile,
                    "header length " + std::to_string(headerLen) + " points past the end of the file (" +
                        std::to_string(size) + " bytes; truncated?)",
                    path);
    const char* hdr = reinterpret_cast<const char*>(m_map.data() + 8);
    const nlohmann::json header = parseJson(std::string_view(hdr, static_cast<std::size_t>(headerLen)), path, "the header");
    if (!header.is_object())
        throw Error(ErrorCode::CorruptFile, "header is not a JSON object", path);

    m_dataStart = m_map.data() + 8 + headerLen;
    const std::uint64_t dataSize = size - 8 - headerLen;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (!it->is_object())
                throw Error(ErrorCode::CorruptFile, "__metadata__ is not an object", path);
            for (auto m = it->begin(); m != it->end(); ++m)
                if (m->is_string())
                    m_metadata[m.key()] = m->get<std::string>();
            continue;
        }
        m_tensors.push_back(parseEntry(path, it.key(), it.value(), dataSize));
    }

    // Ranges must not overlap (two tensors sharing bytes would be a hostile or broken file).
    std::vector<const TensorInfo*> byOffset;
    for (const auto& t : m_tensors)
        if (t.end > t.begin)
            byOffset.push_back(&t);
    std::sort(byOffset.begin(), byOffset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
    for (std::size_t i = 1; i < byOffset.size(); ++i)
        if (byOffset[i]->begin < byOffset[i - 1]->end)
            throw Error(ErrorCode::CorruptFile,
                        "data ranges of '" + byOffset[i - 1]->name + "' and '" + byOffset[i]->name + "' overlap",
                        path, byOffset[i]->name);

    for (std::size_t i = 0; i < m_tensors.size(); ++i)
        m_index[m_tensors[i].name] = i;
}

void SafetensorsFile::requireFormat(const std::string& format, const std::string& what) const
{
    const auto it = m_metadata.find("format");
    if (it == m_metadata.end() || it->second != format)
        throw Error(ErrorCode::CorruptFile, "not " + what + " (metadata format is not " + format + ")", path());
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const
{
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_tensors[it->second];
}

std::vector<float> readAsFloat(const SafetensorsFile& file, const TensorInfo& t)
{
    const auto n = static_cast<std::size_t>(shapeNumel(t.shape));
    std::vector<float> out(n);
    const std::uint8_t* p = file.bytes(t);
    if (n == 0)
        return out; // an empty tensor: nothing to copy (and no data pointer to copy from)
    switch (t.dtype) {
    case DType::F32:
        std::memcpy(out.data(), p, n * 4);
        break;
    case DType::F16:
    case DType::BF16:
        for (std::size_t i = 0; i < n; ++i) {
            std::uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            out[i] = t.dtype == DType::F16 ? halfToFloat(h) : bfloat16ToFloat(h);
        }
        break;
    case DType::F64:
        for (std::size_t i = 0; i < n; ++i) {
            double d;
            std::memcpy(&d, p + 8 * i, 8);
            out[i] = static_cast<float>(d);
        }
        break;
    default:
        throw Error(ErrorCode::UnsupportedDtype,
                    "dtype " + std::string(dtypeName(t.dtype)) + " cannot be used as weights (need F32, F16 or BF16)",
                    file.path(), t.name);
    }
    return out;
}

std::vector<double> readAsDouble(const SafetensorsFile& file, const TensorInfo& t)
{
    if (t.dtype == DType::F64) {
        std::vector<double> out(static_cast<std::size_t>(shapeNumel(t.shape)));
        if (!out.empty())
            std::memcpy(out.data(), file.bytes(t), out.size() * sizeof(double));
        return out;
    }
    const auto f = readAsFloat(file, t);
    return std::vector<double>(f.begin(), f.end());
}

void writeSafetensors(const std::string& path, const std::vector<OutputTensor>& tensors,
                      const std::map<std::string, std::string>& metadata)
{
    std::vector<const OutputTensor*> sorted;
    for (const auto& t : tensors) {
        const std::size_t have = t.storeAs == DType::F64 ? t.data64.size() : t.data.size();
        if (static_cast<std::size_t>(shapeNumel(t.shape)) != have)
            throw Error(ErrorCode::BadInput,
                        "tensor data size " + std::to_string(t.data.size()) + " does not match shape " +
                            shapeToString(t.shape),
                        path, t.name);
        sorted.push_back(&t);
    }
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->name < b->name; });

    nlohmann::ordered_json header;
    if (!metadata.empty()) {
        nlohmann::ordered_json meta = nlohmann::ordered_json::object();
        for (const auto& [k, v] : metadata)
            meta[k] = v;
        header["__metadata__"] = meta;
    }
    std::uint64_t offset = 0;
    for (const auto* t : sorted) {
        if (t->storeAs != DType::F32 && t->storeAs != DType::F16 && t->storeAs != DType::BF16 &&
            t->storeAs != DType::F64)
            throw Error(ErrorCode::UnsupportedDtype, "can only write F64, F32, F16 or BF16", path, t->name);
        const std::uint64_t bytes = productOrMax(static_cast<std::uint64_t>(shapeNumel(t->shape)), dtypeSize(t->storeAs));
        header[t->name] = {{"dtype", std::string(dtypeName(t->storeAs))},
                           {"shape", t->shape},
                           {"data_offsets", {offset, offset + bytes}}};
        offset += bytes;
    }
    std::string hdr = header.dump();
    while (hdr.size() % 8 != 0)
        hdr.push_back(' ');

    AtomicFile out(path); // the previous file stays intact until this one is complete
    std::uint8_t len[8];
    std::uint64_t n = hdr.size();
    for (int i = 0; i < 8; ++i) {
        len[i] = static_cast<std::uint8_t>(n & 0xFF);
        n >>= 8;
    }
    out.write(len, 8);
    out.write(hdr.data(), hdr.size());
    for (const auto* t : sorted) {
        if (t->storeAs == DType::F64) {
            out.write(t->data64.data(), t->data64.size() * sizeof(double));
            continue;
        }
        if (t->storeAs == DType::F32) {
            out.write(t->data.data(), t->data.size() * sizeof(float));
            continue;
        }
        std::vector<std::uint16_t> half(t->data.size());
        for (std::size_t i = 0; i < half.size(); ++i)
            half[i] = t->storeAs == DType::F16 ? floatToHalf(t->data[i])
                                               : static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(t->data[i]) >> 16);
        out.write(half.data(), half.size() * 2);
    }
    out.commit();
}

} // namespace attnscope::core
