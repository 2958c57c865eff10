// PytorchFile: zip / legacy / plain pickle detection, storages located in the map, rebuilds of tensors validated
// against their storages, the state dict found and named.
#include "io/pytorch_file.h"

#include "io/safetensors.h"
#include "io/zip_archive.h"
#include "util/error.h"
#include "util/message_text.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <set>

namespace attnscope::core {

using Kind = PickleNode::Kind;

namespace {
constexpr int kMaxModuleDepth = 64;
// Module visits of one state-dict walk: far above any model's modules (an 8B model has a few thousand).
constexpr std::uint64_t kMaxModuleVisits = 1'000'000;

// The storage classes torch.save names, CUDA ones included (their bytes on disk are the same).
std::optional<DType> storageDType(std::string cls)
{
    if (cls.rfind("torch.cuda.", 0) == 0)
        cls = "torch." + cls.substr(11);
    static const std::map<std::string, DType> types = {
        {"torch.FloatStorage", DType::F32},   {"torch.DoubleStorage", DType::F64}, {"torch.HalfStorage", DType::F16},
        {"torch.BFloat16Storage", DType::BF16}, {"torch.LongStorage", DType::I64}, {"torch.IntStorage", DType::I32},
        {"torch.ShortStorage", DType::I16},   {"torch.CharStorage", DType::I8},    {"torch.ByteStorage", DType::U8},
        {"torch.BoolStorage", DType::Bool},   {"torch.UntypedStorage", DType::U8},
        {"torch.storage.UntypedStorage", DType::U8}, {"torch.storage._UntypedStorage", DType::U8}};
    const auto it = types.find(cls);
    return it == types.end() ? std::nullopt : std::optional<DType>(it->second);
}

const std::string& str(const PickleNode* n, const char* what, const std::string& file)
{
    if (!n || n->kind != Kind::Str)
        throw Error(ErrorCode::CorruptFile, std::string("PyTorch checkpoint: ") + what + " is not a string", file);
    return n->text;
}

std::int64_t integer(const PickleNode* n, const char* what, const std::string& file)
{
    if (!n || n->kind != Kind::Int)
        throw Error(ErrorCode::CorruptFile, std::string("PyTorch checkpoint: ") + what + " is not an integer", file);
    return n->integer;
}

std::vector<std::int64_t> ints(const PickleNode* n, const char* what, const std::string& file)
{
    if (!n || (n->kind != Kind::Tuple && n->kind != Kind::List))
        throw Error(ErrorCode::CorruptFile, std::string("PyTorch checkpoint: ") + what + " is not a tuple", file);
    if (n->items.size() > 16)
        throw Error(ErrorCode::CorruptFile, std::string("PyTorch checkpoint: ") + what + " has more than 16 dimensions",
                    file);
    std::vector<std::int64_t> out;
    for (const auto* v : n->items)
        out.push_back(integer(v, what, file));
    return out;
}
} // namespace

bool TorchTensor::contiguous() const
{
    std::int64_t expected = 1;
    for (std::size_t d = shape.size(); d-- > 0;) {
        if (shape[d] != 1 && strides[d] != expected)
            return false;
        expected *= shape[d];
    }
    return true;
}

bool PytorchFile::hasCheckpointExtension(const std::string& path)
{
    const auto ext = std::filesystem::path(path).extension().string();
    return ext == ".bin" || ext == ".pt" || ext == ".pth" || ext == ".ckpt" || ext == ".pkl";
}

PytorchFile::PytorchFile(const std::string& path)
    : m_map(path)
{
    if (ZipArchive::looksLikeZip(m_map.data(), m_map.size())) {
        readZip();
        return;
    }
    if (m_map.size() >= 262 && std::string(reinterpret_cast<const char*>(m_map.data()) + 257, 5) == "ustar")
        throw Error(ErrorCode::UnsupportedDtype,
                    "a tar-format checkpoint (PyTorch before 0.4); load and save it again with a newer PyTorch", path);
    // Legacy torch.save starts with a pickled magic number; anything else is read as a plain pickle.
    PickleDocument first;
    unpickle(first, m_map.data(), m_map.size(), path, {});
    const std::string magic = {'\x6c', '\xfc', '\x9c', '\x46', '\xf9', '\x20', '\x6a', '\xa8', '\x50', '\x19'};
    if (first.root->kind == Kind::BigInt && first.root->text == magic) {
        readLegacy();
        return;
    }
    m_doc = std::move(first);
}

PickleHooks PytorchFile::hooks(bool legacy)
{
    PickleHooks h;
    const std::string& file = path();
    h.persistentLoad = [this, legacy, &file](PickleDocument& doc, const PickleNode& id) -> const PickleNode* {
        // ('storage', storage class, key, location, elements[, legacy view metadata])
        if (id.kind != Kind::Tuple || id.items.size() != (legacy ? 6u : 5u) || !id.items[0]->isStr() ||
            id.items[0]->text != "storage")
            return nullptr;
        const PickleNode* cls = id.items[1];
        if (cls->kind != Kind::Global)
            throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: a storage whose type is " + cls->describe(), file);
        const auto dtype = storageDType(cls->text);
        if (!dtype)
            throw Error(ErrorCode::UnsupportedDtype,
                        "storage class " + cls->text + " is not one attnscope reads (float, integer and bool storages)",
                        file);
        Storage s;
        s.dtype = *dtype;
        s.key = str(id.items[2], "a storage key", file);
        const std::int64_t count = integer(id.items[4], "a storage size", file);
        if (count < 0)
            throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: a storage of negative size", file, s.key);
        s.elements = static_cast<std::uint64_t>(count);
        if (legacy && id.items[5]->kind != Kind::None) { // (view key, offset, view size) into the root storage
            const PickleNode* view = id.items[5];
            if (view->kind != Kind::Tuple || view->items.size() != 3)
                throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: malformed storage view", file, s.key);
            s.rootKey = s.key;
            s.key = str(view->items[0], "a storage view key", file);
            const std::int64_t off = integer(view->items[1], "a storage view offset", file);
            const std::int64_t size = integer(view->items[2], "a storage view size", file);
            if (off < 0 || size < 0 || static_cast<std::uint64_t>(off) + static_cast<std::uint64_t>(size) > s.elements)
                throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: a storage view past its storage", file, s.key);
            s.viewOffset = static_cast<std::uint64_t>(off);
            s.elements = static_cast<std::uint64_t>(size);
        }
        // One node per key: tensors sharing a storage (tied weights) share it.
        for (std::size_t i = 0; i < m_storages.size(); ++i)
            if (m_storages[i].key == s.key) {
                if (m_storages[i].dtype != s.dtype || m_storages[i].elements != s.elements)
                    throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: one storage key with two types or sizes",
                                file, s.key);
                PickleNode* n = doc.make(Kind::Extension);
                n->text = "storage";
                n->integer = static_cast<std::int64_t>(i);
                return n;
            }
        m_storages.push_back(s);
        PickleNode* n = doc.make(Kind::Extension);
        n->text = "storage";
        n->integer = static_cast<std::int64_t>(m_storages.size() - 1);
        return n;
    };
    h.reduce = [this, &file](PickleDocument& doc, const std::string& global, const PickleNode& args) -> const PickleNode* {
        const auto& a = args.items;
        if (global == "torch._utils._rebuild_tensor_v2" || global == "torch._utils._rebuild_tensor") {
            if (a.size() < 4 || a[0]->kind != Kind::Extension || a[0]->text != "storage")
                throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: " + global + " without a storage", file);
            RawTensor t;
            t.storage = static_cast<std::size_t>(a[0]->integer);
            t.offset = integer(a[1], "a storage offset", file);
            t.shape = ints(a[2], "a tensor size", file);
            t.strides = ints(a[3], "a tensor stride", file);
            if (t.shape.size() != t.strides.size())
                throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: a tensor with " +
                                                        std::to_string(t.shape.size()) + " sizes and " +
                                                        std::to_string(t.strides.size()) + " strides", file);
            m_tensors.push_back(std::move(t));
            PickleNode* n = doc.make(Kind::Extension);
            n->text = "tensor";
            n->integer = static_cast<std::int64_t>(m_tensors.size() - 1);
            return n;
        }
        if (global == "torch._utils._rebuild_parameter" || global == "torch._utils._rebuild_parameter_with_state") {
            if (a.empty() || a[0]->kind != Kind::Extension || a[0]->text != "tensor")
                throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: " + global + " without a tensor", file);
            return a[0];
        }
        return nullptr;
    };
    return h;
}

void PytorchFile::readZip()
{
    const std::string& file = path();
    const ZipArchive zip(m_map.data(), m_map.size(), file);
    const ZipArchive::Entry* pkl = nullptr;
    for (const auto& e : zip.entries()) {
        const auto slash = e.name.find('/');
        if (slash != std::string::npos && e.name.substr(slash) == "/data.pkl") {
            if (pkl)
                throw Error(ErrorCode::CorruptFile, "PyTorch checkpoint: two data.pkl entries", file, e.name);
            pkl = &e;
        }
    }
    if (!pkl)
        throw Error(ErrorCode::CorruptFile, "a ZIP archive without <name>/data.pkl: not a torch.save file", file);
    const std::string prefix = pkl->name.substr(0, pkl->name.size() - std::string("data.pkl").size());
    if (const auto* order = zip.find(prefix + "byteorder")) {
        const std::string value(reinterpret_cast<const char*>(zip.bytes(*order)), order->size);
        if (value != "little")
            throw Error(ErrorCode::UnsupportedDtype, "a big-endian checkpoint (byteorder \"" + excerpt(value, 16) +
                                                         "\"); attnscope reads little-endian files", file);
    }
    unpickle(m_doc, zip.bytes(*pkl), pkl->size, file + ":" + pkl->name, hooks(false));
    for (auto& s : m_storages) {
        const auto* entry = zip.find(prefix + "data/" + s.key);
        if (!entry)
            throw Error(ErrorCode::CorruptFile, "the pickle names storage '" + s.key + "', which the archive lacks",
                        file, prefix + "data/" + s.key);
        if (s.elements > (std::uint64_t(1) << 50)) // its byte count would wrap ("needs 0 bytes")
            throw Error(ErrorCode::CorruptFile,
                        "storage of " + std::to_string(s.elements) + " elements is more than any checkpoint holds", file,
                        entry->name);
        const std::uint64_t need = s.elements * dtypeSize(s.dtype);
        if (entry->size < need)
            throw Error(ErrorCode::CorruptFile,
                        "storage of " + std::to_string(s.elements) + " elements needs " + std::to_string(need) +
                            " bytes; the archive holds " + std::to_string(entry->size),
                        file, entry->name);
        s.bytes = zip.bytes(*entry);
    }
}

void PytorchFile::readLegacy()
{
    const std::string& file = path();
    const std::uint8_t* data = m_map.data();
    std::size_t pos = 0;
    auto next = [&](PickleDocument& doc, const PickleHooks& h) {
        unpickle(doc, data + pos, m_map.size() - pos, file, h);
        pos += doc.consumed;
    };
    PickleDocument magic, protocol, sysInfo, keys;
    next(magic, {});
    next(protocol, {});
    if (protocol.root->kind != Kind::Int || protocol.root->integer != 1001)
        throw Error(ErrorCode::CorruptFile, "legacy PyTorch checkpoint with an unknown protocol version", file);
    next(sysInfo, {});
    if (const auto* little = sysInfo.root->get("little_endian"); little && little->kind == Kind::Bool && !little->integer)
        throw Error(ErrorCode::UnsupportedDtype, "a big-endian checkpoint; attnscope reads little-endian files", file);
    next(m_doc, hooks(true));
    next(keys, {});
    if (keys.root->kind != Kind::List)
        throw Error(ErrorCode::CorruptFile, "legacy PyTorch checkpoint: the storage key list is missing", file);
    // Each root storage follows in the order of the list: its element count (int64), then its bytes.
    std::map<std::string, const std::uint8_t*> located;
    std::map<std::string, std::uint64_t> sizes;
    for (const auto* k : keys.root->items) {
        const std::string& key = str(k, "a storage key", file);
        if (m_map.size() - pos < 8)
            throw Error(ErrorCode::CorruptFile, "legacy PyTorch checkpoint ends before storage '" + key +
                                                    "' (truncated file?)", file);
        std::uint64_t n = 0;
        for (int i = 7; i >= 0; --i)
            n = (n << 8) | data[pos + static_cast<std::size_t>(i)];
        pos += 8;
        DType dtype = DType::U8;
        bool known = false;
        for (const auto& s : m_storages)
            if ((s.rootKey.empty() ? s.key : s.rootKey) == key) {
                // A storage has one element type: views of it in two types would size it by one and read by the
                // other (a double view 8x past a byte storage).
                if (known && s.dtype != dtype)
                    throw Error(ErrorCode::CorruptFile, "legacy PyTorch checkpoint: storage '" + key +
                                                            "' is viewed with two element types", file);
                dtype = s.dtype;
                known = true;
            }
        if (!known)
            throw Error(ErrorCode::CorruptFile, "legacy PyTorch checkpoint lists storage '" + key +
                                                    "', which no tensor uses", file);
        const std::uint64_t bytes = n * dtypeSize(dtype);
        if (n > (std::uint64_t(1) << 50) || bytes > m_map.size() - pos)
            throw Error(ErrorCode::CorruptFile, "storage '" + key + "' of " + std::to_string(n) +
                                                    " elements runs past the end of the file (truncated file?)", file);
        located[key] = data + pos;
        sizes[key] = n;
        pos += static_cast<std::size_t>(bytes);
    }
    for (auto& s : m_storages) {
        const std::string& root = s.rootKey.empty() ? s.key : s.rootKey;
        const auto it = located.find(root);
        if (it == located.end())
            throw Error(ErrorCode::CorruptFile, "the pickle names storage '" + root + "', which the file lacks", file);
        const std::uint64_t rootSize = sizes[root];
        std::uint64_t end = 0;
        if (__builtin_add_overflow(s.viewOffset, s.elements, &end) || end > rootSize)
            throw Error(ErrorCode::CorruptFile, "storage '" + s.key + "' is larger than the file's copy of it", file);
        s.bytes = it->second + s.viewOffset * dtypeSize(s.dtype);
    }
}

bool PytorchFile::isTensor(const PickleNode* n) const
{
    return n && n->kind == Kind::Extension && n->text == "tensor";
}

TorchTensor PytorchFile::resolve(const std::string& name, const PickleNode& node) const
{
    const std::string& file = path();
    const RawTensor& raw = m_tensors.at(static_cast<std::size_t>(node.integer));
    const Storage& s = m_storages.at(raw.storage);
    if (!s.bytes)
        throw Error(ErrorCode::CorruptFile, "a tensor on a storage the file does not hold", file, name);
    TorchTensor t;
    t.name = name;
    t.dtype = s.dtype;
    t.shape = raw.shape;
    t.strides = raw.strides;
    t.offset = raw.offset;
    t.storage = s.bytes;
    t.storageElements = s.elements;
    auto refuse = [&](const std::string& why) { throw Error(ErrorCode::CorruptFile, why, file, name); };
    if (raw.offset < 0)
        refuse("negative storage offset");
    // The last element the view reaches must lie inside the storage; products never overflow on the way.
    std::uint64_t last = static_cast<std::uint64_t>(raw.offset), numel = 1;
    for (std::size_t d = 0; d < raw.shape.size(); ++d) {
        if (raw.shape[d] < 0 || raw.shape[d] > (std::int64_t(1) << 40))
            refuse("size " + std::to_string(raw.shape[d]) + " in dimension " + std::to_string(d));
        if (raw.strides[d] < 0 || raw.strides[d] > (std::int64_t(1) << 40))
            refuse("stride " + std::to_string(raw.strides[d]) + " in dimension " + std::to_string(d) +
                   " (negative or absurd strides are refused)");
        numel *= static_cast<std::uint64_t>(raw.shape[d]);
        if (numel > (std::uint64_t(1) << 50))
            refuse("more elements than any storage can hold");
        // (size - 1) x stride can pass 2^64 (both up to 2^40): checked, so a wrapped extent never looks small.
        std::uint64_t step = 0;
        if (raw.shape[d] > 0 &&
            (__builtin_mul_overflow(static_cast<std::uint64_t>(raw.shape[d] - 1), static_cast<std::uint64_t>(raw.strides[d]), &step) ||
             __builtin_add_overflow(last, step, &last)))
            refuse("shape " + shapeToString(raw.shape) + " with strides " + shapeToString(raw.strides) +
                   " reaches past any storage");
    }
    if (numel > 0 && last >= s.elements)
        refuse("shape " + shapeToString(raw.shape) + " with offset " + std::to_string(raw.offset) +
               " and these strides reaches element " + std::to_string(last) + " of a storage of " +
               std::to_string(s.elements));
    if (numel > 0 && !t.contiguous()) {
        // A weight whose elements overlap (stride 0, an expanded view) is no weight a model stores.
        std::vector<std::size_t> order(raw.shape.size());
        std::iota(order.begin(), order.end(), 0);
        std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return raw.strides[a] < raw.strides[b]; });
        std::uint64_t extent = 0;
        for (const auto d : order) {
            if (raw.shape[d] <= 1)
                continue;
            if (static_cast<std::uint64_t>(raw.strides[d]) <= extent)
                refuse("its elements overlap (strides " + shapeToString(raw.strides) + " for shape " +
                       shapeToString(raw.shape) + ")");
            std::uint64_t step = 0;
            if (__builtin_mul_overflow(static_cast<std::uint64_t>(raw.shape[d] - 1), static_cast<std::uint64_t>(raw.strides[d]), &step) ||
                __builtin_add_overflow(extent, step, &extent))
                refuse("its strides reach past any storage");
        }
    }
    return t;
}

void PytorchFile::collect(const PickleNode& node, const std::string& prefix, int depth,
                          std::vector<TorchTensor>& out) const
{
    // Shared (memoised) modules are walked once per path, as torch's state_dict names them; a graph whose paths
    // multiply (2^60 from a 6.5 kB file) is refused when the walk passes a bound no model comes near.
    if (++m_visits > kMaxModuleVisits)
        throw Error(ErrorCode::CorruptFile,
                    "its modules are reached by more than " + std::to_string(kMaxModuleVisits) +
                        " paths (shared submodules nested in each other): no model is built so",
                    path(), prefix);
    if (depth > kMaxModuleDepth)
        throw Error(ErrorCode::CorruptFile, "modules nested more than " + std::to_string(kMaxModuleDepth) + " deep",
                    path(), prefix);
    if (node.kind == Kind::Dict) { // a state dict: name -> tensor
        for (std::size_t i = 0; i + 1 < node.items.size(); i += 2)
            if (node.items[i]->isStr() && isTensor(node.items[i + 1]))
                out.push_back(resolve(prefix + node.items[i]->text, *node.items[i + 1]));
        return;
    }
    // A torch.nn.Module: its __dict__ holds _parameters and _buffers (name -> tensor or None) and _modules.
    const PickleNode* state = node.state;
    if (!state || state->kind != Kind::Dict)
        return;
    for (const char* table : {"_parameters", "_buffers"})
        if (const auto* d = state->get(table); d && d->kind == Kind::Dict)
            collect(*d, prefix, depth + 1, out);
    if (const auto* modules = state->get("_modules"); modules && modules->kind == Kind::Dict)
        for (std::size_t i = 0; i + 1 < modules->items.size(); i += 2)
            if (modules->items[i]->isStr() && modules->items[i + 1]->kind == Kind::Object)
                collect(*modules->items[i + 1], prefix + modules->items[i]->text + ".", depth + 1, out);
}

std::vector<TorchTensor> PytorchFile::stateDict() const
{
    m_visits = 0;
    const PickleNode* node = m_doc.root;
    auto holdsTensors = [&](const PickleNode* n) {
        if (n->kind != Kind::Dict)
            return false;
        for (std::size_t i = 1; i < n->items.size(); i += 2)
            if (isTensor(n->items[i]))
                return true;
        return false;
    };
    auto isModule = [](const PickleNode* n) {
        return n->kind == Kind::Object && n->state && n->state->get("_modules") != nullptr;
    };
    for (int hop = 0; hop < 4 && node && !holdsTensors(node) && !isModule(node); ++hop) {
        const PickleNode* inner = nullptr;
        for (const char* key : {"state_dict", "model_state_dict", "model", "module", "net"})
            if (!inner && node->kind == Kind::Dict)
                if (const auto* v = node->get(key); v && (v->kind == Kind::Dict || v->kind == Kind::Object))
                    inner = v;
        node = inner;
    }
    if (!node)
        throw Error(ErrorCode::CorruptFile,
                    "no state dict (name -> tensor) at the top level or under \"state_dict\", \"model\", "
                    "\"model_state_dict\" or \"module\", and no pickled torch.nn.Module; the file holds " +
                        m_doc.root->describe(),
                    path());
    std::vector<TorchTensor> out;
    collect(*node, "", 0, out);
    std::set<std::string> seen;
    for (const auto& t : out)
        if (!seen.insert(t.name).second)
            throw Error(ErrorCode::CorruptFile, "two tensors share a name", path(), t.name);
    if (out.empty())
        throw Error(ErrorCode::CorruptFile, "the checkpoint holds no tensors", path());
    return out;
}

} // namespace attnscope::core
