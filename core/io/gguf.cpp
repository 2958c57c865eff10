// GGUF reader: a bounds-checked cursor over the mapped bytes; every read names the field it belongs to.
#include "io/gguf.h"

#include "util/error.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace attnscope::core {

namespace {

enum ValueType : std::uint32_t {
    U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7, STRING = 8, ARRAY = 9, U64 = 10, I64 = 11,
    F64 = 12,
};

class Cursor {
public:
    Cursor(const std::uint8_t* data, std::uint64_t size, const std::string& file)
        : m_data(data)
        , m_size(size)
        , m_file(file)
    {
    }
    std::uint64_t pos() const { return m_pos; }

    [[noreturn]] void fail(const std::string& field, const std::string& msg) const
    {
        throw Error(ErrorCode::CorruptFile, msg + " (at byte " + std::to_string(m_pos) + ")", m_file, field);
    }
    void need(std::uint64_t n, const std::string& field) const
    {
        if (n > m_size - m_pos)
            fail(field, "needs " + std::to_string(n) + " more bytes but the file ends after " +
                            std::to_string(m_size - m_pos) + " (truncated?)");
    }
    template <typename T> T read(const std::string& field)
    {
        need(sizeof(T), field);
        T v;
        std::memcpy(&v, m_data + m_pos, sizeof(T)); // GGUF is little-endian, as is every machine we build for
        m_pos += sizeof(T);
        return v;
    }
    std::string string(const std::string& field)
    {
        const auto len = read<std::uint64_t>(field);
        if (len > GgufFile::kMaxStringBytes)
            fail(field, "string length " + std::to_string(len) + " exceeds the limit of " +
                            std::to_string(GgufFile::kMaxStringBytes) + " bytes");
        need(len, field);
        std::string s(reinterpret_cast<const char*>(m_data + m_pos), static_cast<std::size_t>(len));
        m_pos += len;
        return s;
    }

private:
    const std::uint8_t* m_data;
    std::uint64_t m_size;
    std::uint64_t m_pos = 0;
    const std::string& m_file;
};

GgufValue::Kind kindOf(std::uint32_t t)
{
    switch (t) {
    case U8: case U16: case U32: case U64: return GgufValue::Kind::UInt;
    case I8: case I16: case I32: case I64: return GgufValue::Kind::Int;
    case F32: case F64: return GgufValue::Kind::Float;
    case BOOL: return GgufValue::Kind::Bool;
    case STRING: return GgufValue::Kind::String;
    default: return GgufValue::Kind::Array;
    }
}

// A scalar of type t into v (integers widened).
void readScalar(Cursor& c, std::uint32_t t, GgufValue& v, const std::string& key)
{
    v.kind = kindOf(t);
    switch (t) {
    case U8: v.u = c.read<std::uint8_t>(key); break;
    case U16: v.u = c.read<std::uint16_t>(key); break;
    case U32: v.u = c.read<std::uint32_t>(key); break;
    case U64: v.u = c.read<std::uint64_t>(key); break;
    case I8: v.i = c.read<std::int8_t>(key); break;
    case I16: v.i = c.read<std::int16_t>(key); break;
    case I32: v.i = c.read<std::int32_t>(key); break;
    case I64: v.i = c.read<std::int64_t>(key); break;
    case F32: v.f = c.read<float>(key); break;
    case F64: v.f = c.read<double>(key); break;
    case BOOL: {
        const auto b = c.read<std::uint8_t>(key);
        if (b > 1)
            c.fail(key, "boolean value " + std::to_string(b) + " is neither 0 nor 1");
        v.b = b == 1;
        break;
    }
    case STRING: v.s = c.string(key); break;
    default: c.fail(key, "unknown value type " + std::to_string(t));
    }
}

std::size_t scalarBytes(std::uint32_t t)
{
    switch (t) {
    case U8: case I8: case BOOL: return 1;
    case U16: case I16: return 2;
    case U32: case I32: case F32: return 4;
    case U64: case I64: case F64: return 8;
    default: return 0;
    }
}

GgufValue readValue(Cursor& c, const std::string& key)
{
    const auto t = c.read<std::uint32_t>(key);
    GgufValue v;
    if (t != ARRAY) {
        readScalar(c, t, v, key);
        return v;
    }
    v.kind = GgufValue::Kind::Array;
    const auto et = c.read<std::uint32_t>(key);
    const auto n = c.read<std::uint64_t>(key);
    if (et == ARRAY)
        c.fail(key, "arrays of arrays are not supported");
    if (et > F64)
        c.fail(key, "unknown array element type " + std::to_string(et));
    if (n > GgufFile::kMaxArrayElements)
        c.fail(key, "array of " + std::to_string(n) + " elements exceeds the limit of " +
                        std::to_string(GgufFile::kMaxArrayElements));
    // Fixed-size elements must fit in what is left of the file before anything is allocated for them.
    if (et != STRING)
        c.need(n * scalarBytes(et), key);
    v.elementKind = kindOf(et);
    for (std::uint64_t k = 0; k < n; ++k) {
        GgufValue e;
        readScalar(c, et, e, key);
        switch (e.kind) {
        case GgufValue::Kind::String: v.strings.push_back(std::move(e.s)); break;
        case GgufValue::Kind::UInt:
            v.ints.push_back(static_cast<std::int64_t>(e.u));
            v.numbers.push_back(static_cast<double>(e.u));
            break;
        case GgufValue::Kind::Int:
            v.ints.push_back(e.i);
            v.numbers.push_back(static_cast<double>(e.i));
            break;
        case GgufValue::Kind::Float: v.numbers.push_back(e.f); break;
        case GgufValue::Kind::Bool: v.ints.push_back(e.b ? 1 : 0); v.numbers.push_back(e.b ? 1 : 0); break;
        default: break;
        }
    }
    return v;
}

} // namespace

std::size_t GgufValue::arraySize() const
{
    return elementKind == Kind::String ? strings.size() : numbers.size();
}

std::vector<std::int64_t> GgufTensor::shape() const
{
    return {dims.rbegin(), dims.rend()};
}

std::int64_t GgufTensor::numel() const
{
    std::int64_t n = 1;
    for (auto d : dims)
        n *= d;
    return n;
}

bool looksLikeGguf(const std::string& path)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) // a FIFO would block the read
        return false;
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    return in.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

GgufFile::GgufFile(const std::string& path)
    : m_map(path)
{
    const std::uint64_t size = m_map.size();
    Cursor c(m_map.data(), size, path);
    if (size < 24 || std::memcmp(m_map.data(), "GGUF", 4) != 0)
        throw Error(ErrorCode::CorruptFile, "not a GGUF file (it does not start with the magic \"GGUF\")", path, "magic");
    c.read<std::uint32_t>("magic");
    m_version = c.read<std::uint32_t>("version");
    if (m_version != 2 && m_version != 3)
        throw Error(ErrorCode::CorruptFile,
                    "GGUF version " + std::to_string(m_version) + " is not supported (versions 2 and 3 are)", path,
                    "version");
    const auto nTensors = c.read<std::uint64_t>("tensor_count");
    const auto nKv = c.read<std::uint64_t>("metadata_kv_count");
    if (nTensors > kMaxTensors)
        c.fail("tensor_count", std::to_string(nTensors) + " tensors exceed the limit of " + std::to_string(kMaxTensors));
    if (nKv > kMaxMetadata)
        c.fail("metadata_kv_count", std::to_string(nKv) + " metadata entries exceed the limit of " +
                                        std::to_string(kMaxMetadata));

    for (std::uint64_t k = 0; k < nKv; ++k) {
        const std::string key = c.string("metadata key #" + std::to_string(k));
        if (key.empty())
            c.fail("metadata key #" + std::to_string(k), "empty key");
        GgufValue v = readValue(c, key);
        if (!m_metadata.emplace(key, std::move(v)).second)
            c.fail(key, "metadata key appears twice");
    }
    if (const auto* a = value("general.alignment")) {
        if (a->kind != GgufValue::Kind::UInt || a->u == 0 || (a->u & (a->u - 1)) != 0 || a->u > (1u << 20))
            throw Error(ErrorCode::CorruptFile, "must be a power of two up to 1 MiB", path, "general.alignment");
        m_alignment = a->u;
    }

    m_tensors.reserve(static_cast<std::size_t>(nTensors));
    for (std::uint64_t k = 0; k < nTensors; ++k) {
        GgufTensor t;
        t.name = c.string("tensor #" + std::to_string(k) + " name");
        const auto nDims = c.read<std::uint32_t>(t.name);
        if (nDims == 0 || nDims > 4)
            c.fail(t.name, "has " + std::to_string(nDims) + " dimensions (1 to 4 expected)");
        std::uint64_t numel = 1;
        for (std::uint32_t d = 0; d < nDims; ++d) {
            const auto dim = c.read<std::int64_t>(t.name);
            if (dim <= 0)
                c.fail(t.name, "dimension " + std::to_string(d) + " is " + std::to_string(dim) + " (must be positive)");
            if (static_cast<std::uint64_t>(dim) > size * 64 / numel) // 64 elements per byte is beyond any type
                c.fail(t.name, "dimensions describe more elements than the file could hold");
            numel *= static_cast<std::uint64_t>(dim);
            t.dims.push_back(dim);
        }
        const auto typeId = c.read<std::uint32_t>(t.name);
        const auto info = ggmlTypeInfo(typeId);
        if (!info)
            throw Error(ErrorCode::UnsupportedDtype, "unknown tensor type id " + std::to_string(typeId), path, t.name);
        // A type attnscope cannot decode (IQ, ternary, integers) is refused when a model asks for that tensor, so
        // an unused one does not refuse the whole file.
        t.type = static_cast<GgmlType>(typeId);
        if (static_cast<std::uint64_t>(t.dims[0]) % info->blockSize != 0)
            c.fail(t.name, "row length " + std::to_string(t.dims[0]) + " is not a multiple of the " + info->name +
                               " block size " + std::to_string(info->blockSize));
        t.bytes = numel / info->blockSize * info->typeSize;
        t.offset = c.read<std::uint64_t>(t.name);
        if (t.offset % m_alignment != 0)
            c.fail(t.name, "data offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                               std::to_string(m_alignment));
        if (m_index.count(t.name))
            c.fail(t.name, "tensor name appears twice");
        m_index[t.name] = m_tensors.size();
        m_tensors.push_back(std::move(t));
    }
    // The data section starts at the next multiple of the alignment. A file without tensors (llama.cpp's vocab-only
    // files) ends right after its metadata, without the padding: it has no data section to check.
    if (m_tensors.empty()) {
        m_dataStart = m_map.data() + std::min<std::uint64_t>(c.pos(), size);
        return;
    }
    const std::uint64_t dataStart = (c.pos() + m_alignment - 1) / m_alignment * m_alignment;
    if (dataStart > size)
        throw Error(ErrorCode::CorruptFile, "the tensor data section would start past the end of the file (truncated?)",
                    path, "tensor data");
    const std::uint64_t dataSize = size - dataStart;
    m_dataStart = m_map.data() + dataStart;
    for (const auto& t : m_tensors)
        if (t.offset > dataSize || t.bytes > dataSize - t.offset)
            throw Error(ErrorCode::CorruptFile,
                        "data [" + std::to_string(t.offset) + ", " + std::to_string(t.offset + t.bytes) +
                            ") lies outside the data section of " + std::to_string(dataSize) + " bytes (truncated?)",
                        path, t.name);
}

const GgufTensor* GgufFile::find(const std::string& name) const
{
    const auto it = m_index.find(name);
    return it == m_index.end() ? nullptr : &m_tensors[it->second];
}

const GgufValue* GgufFile::value(const std::string& key) const
{
    const auto it = m_metadata.find(key);
    return it == m_metadata.end() ? nullptr : &it->second;
}

std::string GgufFile::string(const std::string& key) const
{
    const auto s = stringOr(key);
    if (!s)
        throw Error(ErrorCode::BadConfig, value(key) ? "must be a string" : "required metadata key is missing", path(), key);
    return *s;
}

std::uint64_t GgufFile::uint(const std::string& key) const
{
    const auto v = uintOr(key);
    if (!v)
        throw Error(ErrorCode::BadConfig, value(key) ? "must be a non-negative integer" : "required metadata key is missing",
                    path(), key);
    return *v;
}

double GgufFile::number(const std::string& key) const
{
    const auto v = numberOr(key);
    if (!v)
        throw Error(ErrorCode::BadConfig, value(key) ? "must be a number" : "required metadata key is missing", path(), key);
    return *v;
}

std::optional<std::uint64_t> GgufFile::uintOr(const std::string& key) const
{
    const auto* v = value(key);
    if (!v)
        return std::nullopt;
    if (v->kind == GgufValue::Kind::UInt)
        return v->u;
    if (v->kind == GgufValue::Kind::Int && v->i >= 0)
        return static_cast<std::uint64_t>(v->i);
    throw Error(ErrorCode::BadConfig, "must be a non-negative integer", path(), key);
}

std::optional<double> GgufFile::numberOr(const std::string& key) const
{
    const auto* v = value(key);
    if (!v)
        return std::nullopt;
    switch (v->kind) {
    case GgufValue::Kind::UInt: return static_cast<double>(v->u);
    case GgufValue::Kind::Int: return static_cast<double>(v->i);
    case GgufValue::Kind::Float: return v->f;
    default: throw Error(ErrorCode::BadConfig, "must be a number", path(), key);
    }
}

std::optional<std::string> GgufFile::stringOr(const std::string& key) const
{
    const auto* v = value(key);
    if (!v)
        return std::nullopt;
    if (v->kind != GgufValue::Kind::String)
        throw Error(ErrorCode::BadConfig, "must be a string", path(), key);
    return v->s;
}

std::optional<bool> GgufFile::boolOr(const std::string& key) const
{
    const auto* v = value(key);
    if (!v)
        return std::nullopt;
    if (v->kind != GgufValue::Kind::Bool)
        throw Error(ErrorCode::BadConfig, "must be true or false", path(), key);
    return v->b;
}

} // namespace attnscope::core
