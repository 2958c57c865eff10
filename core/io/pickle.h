// A restricted unpickler: it reads Python's pickle format (protocols 0-5, from the opcode table the format documents)
// into a symbolic value tree and never calls anything. Python's own unpickler runs whatever callable the file names;
// this one knows a short list of reductions by name (OrderedDict, Counter, set, bytes, plain-object reconstruction)
// and lets its caller add more (PyTorch's tensor rebuilds, io/pytorch_file.h). A global that would run code (os,
// subprocess, builtins.eval, ...), the call of any other global, INST/OBJ/EXT opcodes and out-of-band buffers are
// refused with Error(Unsafe) naming the file, the byte offset and the global. Objects built with NEWOBJ (how pickle
// stores plain class instances, e.g. a whole torch.nn.Module) stay symbolic: a class name and its state.
//
// Limits that keep a hostile file cheap: every node comes from one opcode (memory grows with the file's size, about
// 170 bytes per value, and a pickle whose values would pass half the available memory is refused as they are made), a
// container may not be changed after it was put inside another (so recorded depths are exact) and nesting deeper
// than kMaxDepth is refused as it is built; nodes live in one arena (no recursive destruction).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace attnscope::core {

struct PickleNode {
    enum class Kind { None, Bool, Int, BigInt, Float, Str, Bytes, Tuple, List, Dict, Set, Global, Object, Extension };
    Kind kind = Kind::None;
    std::int64_t integer = 0; // Bool, Int; Extension: the caller's index
    double real = 0;          // Float
    std::string text;         // Str (UTF-8), Bytes, BigInt (little-endian two's complement); Global: "module.name"
    std::vector<const PickleNode*> items; // Tuple, List, Set; Dict: key, value, key, value, ...
    const PickleNode* cls = nullptr;      // Object: its class (a Global)
    const PickleNode* args = nullptr;     // Object: NEWOBJ's arguments
    const PickleNode* state = nullptr;    // Object, Dict: what BUILD gave it (a module's __dict__)
    int depth = 1;                        // 1 + the deepest child's depth
    bool adopted = false;                 // inside another container: may no longer change

    bool isStr() const { return kind == Kind::Str; }
    // Dict: the value under a string key (the last one if repeated), or null.
    const PickleNode* get(const std::string& key) const;
    // "a dict", "a list", "the global torch.FloatStorage": for messages.
    std::string describe() const;
};

class PickleDocument {
public:
    static constexpr int kMaxDepth = 1000;
    const PickleNode* root = nullptr;
    // Bytes the pickle took (a file may hold several pickles one after another: PyTorch's legacy format).
    std::size_t consumed = 0;

    PickleNode* make(PickleNode::Kind kind);

private:
    std::deque<PickleNode> m_arena;
};

struct PickleHooks {
    // PyTorch's persistent ids (storages). Returns the node that stands for the id; null: not allowed here.
    std::function<const PickleNode*(PickleDocument&, const PickleNode& id)> persistentLoad;
    // A call of `global` ("module.name") with `args` (a tuple) the caller understands; null: not one of them.
    std::function<const PickleNode*(PickleDocument&, const std::string& global, const PickleNode& args)> reduce;
};

// Unpickles the pickle starting at `data` (up to `size` bytes; STOP ends it). `file` names the source in messages.
// Throws Error(Unsafe) for code it will not run and Error(CorruptFile) for a malformed or truncated pickle.
void unpickle(PickleDocument& doc, const std::uint8_t* data, std::size_t size, const std::string& file,
              const PickleHooks& hooks = {});

} // namespace attnscope::core
