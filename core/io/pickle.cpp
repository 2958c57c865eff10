// Restricted unpickler: one loop over opcodes, a value stack with marks, a memo; calls become symbolic nodes or are
// refused (see pickle.h).
#include "io/pickle.h"

#include "util/error.h"
#include "util/message_text.h"
#include "util/memory_info.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <unordered_map>

namespace attnscope::core {

using Kind = PickleNode::Kind;

const PickleNode* PickleNode::get(const std::string& key) const
{
    if (kind != Kind::Dict)
        return nullptr;
    const PickleNode* found = nullptr;
    for (std::size_t i = 0; i + 1 < items.size(); i += 2)
        if (items[i]->kind == Kind::Str && items[i]->text == key)
            found = items[i + 1];
    return found;
}

std::string PickleNode::describe() const
{
    switch (kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int:
    case Kind::BigInt: return "an integer";
    case Kind::Float: return "a float";
    case Kind::Str: return "a string";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "a tuple";
    case Kind::List: return "a list";
    case Kind::Dict: return "a dict";
    case Kind::Set: return "a set";
    case Kind::Global: return "the global " + text;
    case Kind::Object: return "an object of class " + (cls ? cls->text : std::string("?"));
    case Kind::Extension: return "a tensor or storage";
    }
    return "a value";
}

PickleNode* PickleDocument::make(Kind kind)
{
    m_arena.emplace_back();
    m_arena.back().kind = kind;
    return &m_arena.back();
}

namespace {

// Modules whose globals exist to run code, open files or processes, or load more code: refused as soon as a pickle
// names them, whatever it would do with them.
bool isCodeModule(const std::string& module)
{
    static const std::set<std::string> modules = {
        "os", "posix", "nt", "subprocess", "builtins", "__builtin__", "sys", "shutil", "socket", "importlib",
        "runpy", "pickle", "_pickle", "marshal", "ctypes", "code", "codeop", "pty", "webbrowser", "types",
        "functools", "operator", "inspect", "pdb", "timeit", "multiprocessing", "threading", "signal", "platform",
        "tempfile", "io", "_io", "pathlib", "glob", "zipimport", "imp", "torch.hub", "torch.jit", "torch.package",
        "torch.serialization", "numpy.testing", "dill", "cloudpickle", "joblib"};
    // The module or any package it is inside ("os.path", "torch.jit._script").
    for (std::size_t end = module.find('.');; end = module.find('.', end + 1)) {
        if (modules.count(module.substr(0, end)))
            return true;
        if (end == std::string::npos)
            return false;
    }
}

// Harmless builtins a pickle may name: containers rebuilt from their items.
bool isAllowedBuiltin(const std::string& global)
{
    return global == "builtins.set" || global == "__builtin__.set" || global == "builtins.frozenset" ||
           global == "__builtin__.frozenset" || global == "builtins.object" || global == "__builtin__.object" ||
           global == "builtins.bytearray" || global == "__builtin__.bytearray";
}

class Unpickler {
public:
    Unpickler(PickleDocument& doc, const std::uint8_t* data, std::size_t size, const std::string& file,
              const PickleHooks& hooks)
        : m_doc(doc), m_data(data), m_size(size), m_file(file), m_hooks(hooks)
    {
    }

    void run()
    {
        while (true) {
            m_opStart = m_pos;
            const std::uint8_t op = byte();
            if (op == '.') { // STOP
                if (m_stack.empty())
                    corrupt("STOP with an empty stack");
                m_doc.root = m_stack.back();
                m_doc.consumed = m_pos;
                return;
            }
            step(op);
        }
    }

private:
    [[noreturn]] void corrupt(const std::string& what) const
    {
        throw Error(ErrorCode::CorruptFile, "pickle: " + what + " (opcode at byte " + std::to_string(m_opStart) + ")",
                    m_file);
    }
    [[noreturn]] void unsafe(const std::string& what) const
    {
        throw Error(ErrorCode::Unsafe,
                    "refused: " + what + " (opcode at byte " + std::to_string(m_opStart) +
                        "). attnscope never runs code from a model file; nothing was executed",
                    m_file);
    }

    std::uint8_t byte()
    {
        if (m_pos >= m_size)
            corrupt("the pickle ends before its STOP opcode (truncated file?)");
        return m_data[m_pos++];
    }
    const std::uint8_t* take(std::uint64_t n)
    {
        if (n > m_size - m_pos)
            corrupt("a length of " + std::to_string(n) + " bytes runs past the end of the data (truncated file?)");
        const std::uint8_t* p = m_data + m_pos;
        m_pos += static_cast<std::size_t>(n);
        return p;
    }
    std::uint64_t le(int bytes)
    {
        const std::uint8_t* p = take(static_cast<std::uint64_t>(bytes));
        std::uint64_t v = 0;
        for (int i = bytes - 1; i >= 0; --i)
            v = (v << 8) | p[i];
        return v;
    }
    std::string line()
    {
        const std::size_t start = m_pos;
        while (m_pos < m_size && m_data[m_pos] != '\n')
            ++m_pos;
        if (m_pos >= m_size)
            corrupt("a text argument has no end of line (truncated file?)");
        std::string s(reinterpret_cast<const char*>(m_data + start), m_pos - start);
        ++m_pos;
        return s;
    }

    PickleNode* node(Kind k)
    {
        if (++m_nodes % kBudgetCheckEvery == 0)
            checkBudget();
        if (m_nodes > kMaxValues)
            corrupt("more than " + std::to_string(kMaxValues) + " values: more than any checkpoint or vocabulary "
                    "pickle holds (a 70B model's has thousands, a 267,000-word vocabulary about 1.3 million)");
        return m_doc.make(k);
    }
    // The values one opcode byte makes that never change (an empty tuple, None, True, False): one node each, shared,
    // so a file of millions of them costs its stack, not a node per byte.
    const PickleNode* shared(Kind k, std::int64_t value)
    {
        const PickleNode*& slot = k == Kind::Tuple ? m_emptyTuple : k == Kind::None ? m_none : m_bools[value != 0];
        if (!slot) {
            PickleNode* n = node(k);
            n->integer = value;
            slot = n;
        }
        return slot;
    }
    const PickleNode* m_emptyTuple = nullptr;
    const PickleNode* m_none = nullptr;
    const PickleNode* m_bools[2] = {nullptr, nullptr};
    static constexpr std::size_t kMaxValues = std::size_t(1) << 22;
    // Values cost far more than the bytes that make them (one opcode byte: a node of ~150 bytes and its place in a
    // list). Every kBudgetCheckEvery values the cost so far is extrapolated to the whole pickle at the rate seen, and
    // refused with both figures before it is reached.
    void checkBudget() const
    {
        const double perValue = sizeof(PickleNode) + 2 * sizeof(void*); // the node, its slot in a list and the stack
        const double projected = static_cast<double>(m_nodes) * perValue * static_cast<double>(m_size) /
                                 static_cast<double>(std::max<std::size_t>(m_pos, 1));
        checkFits(static_cast<std::uint64_t>(projected),
                  "unpickling " + std::to_string(m_size) + " bytes (" + std::to_string(m_nodes) + " values from the first " +
                      std::to_string(m_pos) + ")",
                  "the file is not a checkpoint attnscope can hold", m_file);
    }
    static constexpr std::size_t kBudgetCheckEvery = 1 << 16;
    std::size_t m_nodes = 0;
    void push(const PickleNode* n) { m_stack.push_back(n); }
    const PickleNode* pop()
    {
        if (m_stack.empty() || (!m_marks.empty() && m_stack.size() <= m_marks.back()))
            corrupt("the stack is empty where a value was expected");
        const PickleNode* n = m_stack.back();
        m_stack.pop_back();
        return n;
    }
    const PickleNode* top()
    {
        if (m_stack.empty() || (!m_marks.empty() && m_stack.size() <= m_marks.back()))
            corrupt("the stack is empty where a value was expected");
        return m_stack.back();
    }
    std::vector<const PickleNode*> popMark()
    {
        if (m_marks.empty())
            corrupt("no MARK before an opcode that needs one");
        const std::size_t mark = m_marks.back();
        m_marks.pop_back();
        std::vector<const PickleNode*> items(m_stack.begin() + static_cast<std::ptrdiff_t>(mark), m_stack.end());
        m_stack.resize(mark);
        return items;
    }
    // The only way a node's children change: exact depths, and nothing changes once nested.
    PickleNode* mutableContainer(const PickleNode* n, const char* opcode, Kind a, Kind b = Kind::None)
    {
        if (n->kind != a && (b == Kind::None || n->kind != b))
            corrupt(std::string(opcode) + " on " + n->describe());
        if (n->adopted)
            corrupt(std::string(opcode) + " changes a container already nested in another (a cycle, or a crafted file)");
        return const_cast<PickleNode*>(n);
    }
    void adopt(PickleNode* parent, const PickleNode* child)
    {
        const_cast<PickleNode*>(child)->adopted = true;
        parent->depth = std::max(parent->depth, child->depth + 1);
        if (parent->depth > PickleDocument::kMaxDepth)
            corrupt("values nested more than " + std::to_string(PickleDocument::kMaxDepth) + " deep");
        parent->items.push_back(child);
    }
    const PickleNode* container(Kind k, const std::vector<const PickleNode*>& items)
    {
        PickleNode* n = node(k);
        for (const auto* c : items)
            adopt(n, c);
        return n;
    }
    const PickleNode* integer(std::int64_t v)
    {
        PickleNode* n = node(Kind::Int);
        n->integer = v;
        return n;
    }
    const PickleNode* text(Kind k, const std::uint8_t* p, std::uint64_t n)
    {
        PickleNode* s = node(k);
        s->text.assign(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
        return s;
    }
    // LONG1 / LONG4: little-endian two's complement of any length.
    const PickleNode* longInt(std::uint64_t n)
    {
        const std::uint8_t* p = take(n);
        if (n <= 8) {
            std::uint64_t v = 0;
            for (std::uint64_t i = n; i-- > 0;)
                v = (v << 8) | p[i];
            if (n > 0 && n < 8 && (p[n - 1] & 0x80))
                v |= ~std::uint64_t(0) << (8 * n);
            return integer(static_cast<std::int64_t>(v));
        }
        return text(Kind::BigInt, p, n);
    }
    const PickleNode* decimal(const std::string& s)
    {
        std::string digits = s;
        if (!digits.empty() && digits.back() == 'L')
            digits.pop_back();
        if (digits == "00" || digits == "01") { // protocol 0 spells booleans this way
            PickleNode* b = node(Kind::Bool);
            b->integer = digits == "01";
            return b;
        }
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(digits.c_str(), &end, 10);
        if (digits.empty() || *end != '\0' || errno == ERANGE)
            corrupt("\"" + excerpt(s, 40) + "\" is not an integer this reader accepts");
        return integer(v);
    }
    // Protocol 0's quoted STRING argument: the repr of a byte string.
    const PickleNode* quoted(const std::string& s)
    {
        if (s.size() < 2 || (s.front() != '\'' && s.front() != '"') || s.back() != s.front())
            corrupt("a STRING argument is not quoted");
        std::string out;
        for (std::size_t i = 1; i + 1 < s.size(); ++i) {
            char c = s[i];
            if (c == '\\' && i + 2 < s.size()) {
                const char e = s[++i];
                if (e == 'n') c = '\n';
                else if (e == 't') c = '\t';
                else if (e == 'r') c = '\r';
                else if (e == 'x') { // \xHH: exactly two hex digits
                    auto hex = [](char h) {
                        return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    };
                    if (i + 2 >= s.size() - 1 || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0)
                        corrupt("a STRING argument with a malformed \\x escape");
                    c = static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
                    i += 2;
                } else c = e;
            }
            out += c;
        }
        PickleNode* n = node(Kind::Str);
        n->text = std::move(out);
        return n;
    }

    void global(const std::string& module, const std::string& name)
    {
        const std::string full = module + "." + name;
        if (module.empty() || name.empty())
            corrupt("a global without module or name");
        if (isCodeModule(module) && !isAllowedBuiltin(full))
            unsafe("the pickle names " + full + ", which runs code");
        PickleNode* g = node(Kind::Global);
        g->text = full;
        push(g);
    }

    // REDUCE: callable(*args). Only reductions that rebuild data are known; any other call is refused.
    void reduce()
    {
        const PickleNode* args = pop();
        const PickleNode* callable = pop();
        if (callable->kind != Kind::Global)
            corrupt("REDUCE of " + callable->describe());
        if (args->kind != Kind::Tuple)
            corrupt("REDUCE with arguments that are " + args->describe());
        const std::string& g = callable->text;
        const auto& a = args->items;
        const_cast<PickleNode*>(args)->adopted = true;
        if (m_hooks.reduce)
            if (const PickleNode* r = m_hooks.reduce(m_doc, g, *args)) {
                push(r);
                return;
            }
        if (g == "collections.OrderedDict" || g == "collections.Counter" || g == "collections.defaultdict") {
            PickleNode* d = node(Kind::Dict);
            if (g != "collections.defaultdict" && a.size() == 1 && a[0]->kind == Kind::Dict) {
                for (const auto* c : a[0]->items)
                    adopt(d, c);
            } else if (g == "collections.OrderedDict" && a.size() == 1 && a[0]->kind == Kind::List) {
                for (const auto* pair : a[0]->items) {
                    if (pair->kind != Kind::Tuple && pair->kind != Kind::List)
                        corrupt("OrderedDict from something other than pairs");
                    if (pair->items.size() != 2)
                        corrupt("OrderedDict from something other than pairs");
                    adopt(d, pair->items[0]);
                    adopt(d, pair->items[1]);
                }
            } else if (!(a.empty() || (g == "collections.defaultdict" && a.size() == 1)))
                corrupt(g + " with arguments it does not take");
            push(d);
            return;
        }
        if (isAllowedBuiltin(g) && (g.find("set") != std::string::npos)) {
            if (a.size() > 1 || (a.size() == 1 && a[0]->kind != Kind::List && a[0]->kind != Kind::Tuple))
                corrupt(g + " with arguments it does not take");
            push(container(Kind::Set, a.empty() ? std::vector<const PickleNode*>{} : a[0]->items));
            return;
        }
        if (g == "_codecs.encode" && a.size() == 2 && a[0]->kind == Kind::Str && a[1]->kind == Kind::Str &&
            (a[1]->text == "latin1" || a[1]->text == "latin-1")) { // protocol 2's spelling of a bytes object
            std::string out;
            const std::string& s = a[0]->text;
            for (std::size_t i = 0; i < s.size();) { // UTF-8 code points below 256 back to bytes
                const auto c = static_cast<unsigned char>(s[i]);
                if (c < 0x80) { out += static_cast<char>(c); ++i; }
                else if ((c & 0xE0) == 0xC0 && i + 1 < s.size()) {
                    const unsigned cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
                    if (cp > 0xFF)
                        corrupt("_codecs.encode of a character outside Latin-1");
                    out += static_cast<char>(cp);
                    i += 2;
                } else corrupt("_codecs.encode of a character outside Latin-1");
            }
            PickleNode* b = node(Kind::Bytes);
            b->text = std::move(out);
            push(b);
            return;
        }
        if (g == "copyreg._reconstructor" || g == "copy_reg._reconstructor") { // plain object, protocols 0 and 1
            if (a.size() != 3 || a[0]->kind != Kind::Global)
                corrupt(g + " with arguments it does not take");
            PickleNode* o = node(Kind::Object);
            o->cls = a[0];
            push(o);
            return;
        }
        unsafe("the pickle calls " + g + ", which attnscope does not know to be harmless");
    }

    void step(std::uint8_t op)
    {
        switch (op) {
        case 0x80: { // PROTO
            const auto v = byte();
            if (v > 5)
                corrupt("pickle protocol " + std::to_string(v) + " is newer than any this reader knows");
            return;
        }
        case 0x95: take(8); return;   // FRAME: a size hint
        case '(': m_marks.push_back(m_stack.size()); return; // MARK
        case '0': pop(); return;                              // POP
        case '1': popMark(); return;                          // POP_MARK
        case '2': push(top()); return;                        // DUP
        case 'N': push(shared(Kind::None, 0)); return;
        case 0x88:
        case 0x89: push(shared(Kind::Bool, op == 0x88)); return; // NEWTRUE, NEWFALSE
        case 'I': push(decimal(line())); return;
        case 'L': push(decimal(line())); return;
        case 'J': push(integer(static_cast<std::int32_t>(le(4)))); return; // BININT
        case 'K': push(integer(static_cast<std::int64_t>(le(1)))); return;
        case 'M': push(integer(static_cast<std::int64_t>(le(2)))); return;
        case 0x8a: { const auto n = le(1); push(longInt(n)); return; } // LONG1
        case 0x8b: {                                                  // LONG4
            const auto n = static_cast<std::int32_t>(le(4));
            if (n < 0)
                corrupt("LONG4 with a negative length");
            push(longInt(static_cast<std::uint64_t>(n)));
            return;
        }
        case 'F': { // FLOAT (text)
            const std::string s = line();
            char* end = nullptr;
            PickleNode* f = node(Kind::Float);
            f->real = std::strtod(s.c_str(), &end);
            if (s.empty() || *end != '\0')
                corrupt("\"" + excerpt(s, 40) + "\" is not a float");
            push(f);
            return;
        }
        case 'G': { // BINFLOAT: big-endian
            const std::uint8_t* p = take(8);
            std::uint64_t bits = 0;
            for (int i = 0; i < 8; ++i)
                bits = (bits << 8) | p[i];
            PickleNode* f = node(Kind::Float);
            std::memcpy(&f->real, &bits, 8);
            push(f);
            return;
        }
        case 'S': push(quoted(line())); return; // STRING
        case 'T': { const auto n = static_cast<std::int32_t>(le(4)); if (n < 0) corrupt("negative length");
                    push(text(Kind::Str, take(static_cast<std::uint64_t>(n)), static_cast<std::uint64_t>(n))); return; }
        case 'U': { const auto n = le(1); push(text(Kind::Str, take(n), n)); return; }     // SHORT_BINSTRING
        case 'V': { const std::string s = line(); push(text(Kind::Str, reinterpret_cast<const std::uint8_t*>(s.data()), s.size())); return; }
        case 'X': { const auto n = le(4); push(text(Kind::Str, take(n), n)); return; }     // BINUNICODE
        case 0x8c: { const auto n = le(1); push(text(Kind::Str, take(n), n)); return; }    // SHORT_BINUNICODE
        case 0x8d: { const auto n = le(8); push(text(Kind::Str, take(n), n)); return; }    // BINUNICODE8
        case 'B': { const auto n = le(4); push(text(Kind::Bytes, take(n), n)); return; }   // BINBYTES
        case 'C': { const auto n = le(1); push(text(Kind::Bytes, take(n), n)); return; }   // SHORT_BINBYTES
        case 0x8e:                                                                        // BINBYTES8
        case 0x96: { const auto n = le(8); push(text(Kind::Bytes, take(n), n)); return; }  // BYTEARRAY8
        case ')': push(shared(Kind::Tuple, 0)); return; // EMPTY_TUPLE
        case 't': push(container(Kind::Tuple, popMark())); return;
        case 0x85: { const auto* a = pop(); push(container(Kind::Tuple, {a})); return; }
        case 0x86: { const auto* b = pop(); const auto* a = pop(); push(container(Kind::Tuple, {a, b})); return; }
        case 0x87: {
            const auto* c = pop(); const auto* b = pop(); const auto* a = pop();
            push(container(Kind::Tuple, {a, b, c}));
            return;
        }
        case ']': push(node(Kind::List)); return;
        case 'l': push(container(Kind::List, popMark())); return;
        case '}': push(node(Kind::Dict)); return;
        case 'd': {
            const auto items = popMark();
            if (items.size() % 2)
                corrupt("DICT with an odd number of items");
            push(container(Kind::Dict, items));
            return;
        }
        case 0x8f: push(node(Kind::Set)); return; // EMPTY_SET
        case 0x91: push(container(Kind::Set, popMark())); return; // FROZENSET
        case 'a': { // APPEND
            const auto* v = pop();
            PickleNode* list = mutableContainer(top(), "APPEND", Kind::List);
            adopt(list, v);
            return;
        }
        case 'e': { // APPENDS
            const auto items = popMark();
            PickleNode* list = mutableContainer(top(), "APPENDS", Kind::List);
            for (const auto* v : items)
                adopt(list, v);
            return;
        }
        case 0x90: { // ADDITEMS
            const auto items = popMark();
            PickleNode* set = mutableContainer(top(), "ADDITEMS", Kind::Set);
            for (const auto* v : items)
                adopt(set, v);
            return;
        }
        case 's': { // SETITEM
            const auto* v = pop();
            const auto* k = pop();
            PickleNode* dict = mutableContainer(top(), "SETITEM", Kind::Dict);
            adopt(dict, k);
            adopt(dict, v);
            return;
        }
        case 'u': { // SETITEMS
            const auto items = popMark();
            if (items.size() % 2)
                corrupt("SETITEMS with an odd number of items");
            PickleNode* dict = mutableContainer(top(), "SETITEMS", Kind::Dict);
            for (const auto* v : items)
                adopt(dict, v);
            return;
        }
        case 'c': { // GLOBAL
            const std::string module = line();
            const std::string name = line();
            global(module, name);
            return;
        }
        case 0x93: { // STACK_GLOBAL
            const auto* name = pop();
            const auto* module = pop();
            if (!module->isStr() || !name->isStr())
                corrupt("STACK_GLOBAL of values that are not strings");
            global(module->text, name->text);
            return;
        }
        case 'R': reduce(); return;
        case 0x81: { // NEWOBJ: cls.__new__(cls, *args), kept symbolic
            const auto* args = pop();
            const auto* cls = pop();
            if (cls->kind != Kind::Global)
                corrupt("NEWOBJ of " + cls->describe());
            PickleNode* o = node(Kind::Object);
            o->cls = cls;
            o->args = args;
            const_cast<PickleNode*>(args)->adopted = true;
            push(o);
            return;
        }
        case 0x92: { // NEWOBJ_EX
            pop(); // kwargs
            const auto* args = pop();
            const auto* cls = pop();
            if (cls->kind != Kind::Global)
                corrupt("NEWOBJ_EX of " + cls->describe());
            PickleNode* o = node(Kind::Object);
            o->cls = cls;
            o->args = args;
            push(o);
            return;
        }
        case 'b': { // BUILD: obj.__setstate__(state) or obj.__dict__.update(state), kept symbolic
            const auto* state = pop();
            PickleNode* obj = mutableContainer(top(), "BUILD", Kind::Object, Kind::Dict);
            if (obj->state)
                corrupt("BUILD twice on one object");
            obj->state = state;
            obj->depth = std::max(obj->depth, state->depth + 1);
            const_cast<PickleNode*>(state)->adopted = true;
            if (obj->depth > PickleDocument::kMaxDepth)
                corrupt("values nested more than " + std::to_string(PickleDocument::kMaxDepth) + " deep");
            return;
        }
        case 'i': { // INST: calls the class
            const std::string module = line();
            const std::string name = line();
            unsafe("the INST opcode would call " + module + "." + name);
        }
        case 'o': unsafe("the OBJ opcode would call a class");
        case 0x82:
        case 0x83:
        case 0x84: unsafe("an EXT opcode would look up code in the extension registry");
        case 0x97:
        case 0x98: corrupt("out-of-band buffers are not part of a file");
        case 'P': { // PERSID: the id as a line of text
            const std::string s = line();
            persistent(text(Kind::Str, reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
            return;
        }
        case 'Q': persistent(pop()); return; // BINPERSID
        case 'p': memo(std::stoull(digitsOf(line()))); return; // PUT
        case 'q': memo(le(1)); return;
        case 'r': memo(le(4)); return;
        case 0x94: memo(m_memo.size()); return; // MEMOIZE
        case 'g': recall(std::stoull(digitsOf(line()))); return; // GET
        case 'h': recall(le(1)); return;
        case 'j': recall(le(4)); return;
        default: {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", op);
            corrupt(std::string("unknown opcode ") + hex);
        }
        }
    }
    void persistent(const PickleNode* id)
    {
        const PickleNode* r = m_hooks.persistentLoad ? m_hooks.persistentLoad(m_doc, *id) : nullptr;
        if (!r)
            corrupt("a persistent id where none is expected (or one this reader does not know)");
        push(r);
    }
    std::string digitsOf(const std::string& s)
    {
        if (s.empty() || s.size() > 18 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
            corrupt("a memo index that is not a number");
        return s;
    }
    void memo(std::uint64_t key) { m_memo[key] = top(); }
    void recall(std::uint64_t key)
    {
        const auto it = m_memo.find(key);
        if (it == m_memo.end())
            corrupt("GET of memo entry " + std::to_string(key) + ", which was never stored");
        push(it->second);
    }

    PickleDocument& m_doc;
    const std::uint8_t* m_data;
    std::size_t m_size;
    const std::string& m_file;
    const PickleHooks& m_hooks;
    std::size_t m_pos = 0, m_opStart = 0;
    std::vector<const PickleNode*> m_stack;
    std::vector<std::size_t> m_marks;
    std::unordered_map<std::uint64_t, const PickleNode*> m_memo;
};

} // namespace

void unpickle(PickleDocument& doc, const std::uint8_t* data, std::size_t size, const std::string& file,
              const PickleHooks& hooks)
{
    Unpickler(doc, data, size, file, hooks).run();
}

} // namespace attnscope::core
