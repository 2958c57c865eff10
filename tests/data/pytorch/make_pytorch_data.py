"""Makes attnscope's PyTorch checkpoint test data with Debian's python3-torch (run outside the repository):
torch.save of the shared reference cases' state dicts, whole pickled Transformer-XL modules (the original code),
a vocab.pkl as the Transformer-XL Vocab saves its state, a dtype table, and hostile pickles."""
import io, json, os, pickle, struct, sys, zipfile, argparse, collections, pickletools
import torch

SHARED = "/work/shared/testdata"
ap = argparse.ArgumentParser(); ap.add_argument("--out", required=True); ap.add_argument("--txl-code", required=True)
args = ap.parse_args()
OUT = args.out
os.makedirs(OUT, exist_ok=True)

DT = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64, "I64": torch.int64}
def read_st(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n]); data = raw[8 + n:]
    out = collections.OrderedDict()
    for k, v in h.items():
        if k == "__metadata__": continue
        b, e = v["data_offsets"]
        t = torch.frombuffer(bytearray(data[b:e]), dtype=DT[v["dtype"]]) if e > b else torch.empty(0, dtype=DT[v["dtype"]])
        out[k] = t.reshape(v["shape"]).clone()
    return out

def save(obj, path, legacy=False):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    print("wrote", path, os.path.getsize(path))

# 1. Plain state dicts of every reference case (zip format, float32 as stored).
plain = ["gpt2-tiny", "llama-tiny", "llama-gqa", "gemma2-tiny", "gemma3-tiny", "qwen3-tiny", "phi3-tiny", "olmo2-tiny",
         "gptneox-tiny", "txl-tiny", "txl-samelen", "distilbert-tiny"]
for case in plain:
    sd = read_st(f"{SHARED}/{case}/model.safetensors")
    if case == "gpt2-tiny":
        # Tied output layer (one storage for two names) and a non-contiguous view (a transposed copy seen transposed).
        sd["lm_head.weight"] = sd["wte.weight"]
        w = sd["h.0.attn.c_attn.weight"]
        sd["h.0.attn.c_attn.weight"] = w.t().contiguous().t()
        assert not sd["h.0.attn.c_attn.weight"].is_contiguous()
    if case == "llama-tiny":
        # q, k and v of layer 0 as views into one storage (storage offsets).
        names = [f"model.layers.0.self_attn.{p}_proj.weight" for p in "qkv"]
        fused = torch.cat([sd[n] for n in names], 0)
        rows = 0
        for n in names:
            r = sd[n].shape[0]; sd[n] = fused[rows:rows + r]; rows += r
    save(sd, f"{OUT}/{case}/pytorch_model.bin")

# 2. Legacy format (before PyTorch 1.6) with the state dict under "state_dict"; prefixed BERT names (gamma/beta).
sd = read_st(f"{SHARED}/bert-tiny/model.prefixed.safetensors")
save({"state_dict": sd, "epoch": 3}, f"{OUT}/bert-tiny/pytorch_model.bin", legacy=True)
sd = read_st(f"{SHARED}/gpt2-tiny/model.safetensors")
sd["lm_head.weight"] = sd["wte.weight"]
save(sd, f"{OUT}/gpt2-tiny-legacy/pytorch_model.bin", legacy=True)
# Under "model", next to training state that is not tensors (an argparse namespace: a plain object).
import argparse as _ap
sd = read_st(f"{SHARED}/roberta-tiny/model.prefixed.safetensors")
save({"model": sd, "args": _ap.Namespace(lr=0.1, name="run"), "step": 10}, f"{OUT}/roberta-tiny/model.pt")

# 3. Sharded bf16 with an index, as Hugging Face writes pytorch_model-0000x-of-0000N.bin.
idx = json.load(open(f"{SHARED}/llama-bf16-sharded/model.safetensors.index.json"))
wm = {}
for i, shard in enumerate(sorted(set(idx["weight_map"].values()))):
    sd = read_st(f"{SHARED}/llama-bf16-sharded/{shard}")
    name = f"pytorch_model-{i + 1:05d}-of-00002.bin"
    save(sd, f"{OUT}/llama-bf16-sharded/{name}")
    for k in sd: wm[k] = name
json.dump({"metadata": {}, "weight_map": wm}, open(f"{OUT}/llama-bf16-sharded/pytorch_model.bin.index.json", "w"), indent=1)

# 4. Whole Transformer-XL modules pickled by the original code (torch.save(model)), as the paper's release did.
sys.path.insert(0, args.txl_code); sys.path.insert(0, args.txl_code + "/utils")
torch.version.cuda = torch.version.cuda or "0.0"  # the original proj_adaptive_softmax parses it at import
import mem_transformer
for case in ["txl-tiny", "txl-adaptive"]:
    cfg = json.load(open(f"{SHARED}/{case}/config.json"))
    m = mem_transformer.MemTransformerLM(cfg["vocab_size"], cfg["n_layer"], cfg["n_head"], cfg["d_model"], cfg["d_head"],
                                         cfg["d_inner"], 0.0, 0.0, tie_weight=True, d_embed=cfg["d_embed"],
                                         div_val=cfg["div_val"], tie_projs=[False] + [True] * len(cfg["cutoffs"]),
                                         pre_lnorm=cfg["pre_lnorm"], tgt_len=cfg["tgt_len"], ext_len=cfg["ext_len"],
                                         mem_len=cfg["mem_len"], cutoffs=cfg["cutoffs"], same_length=cfg["same_length"],
                                         attn_type=0, clamp_len=cfg["clamp_len"])
    sd = read_st(f"{SHARED}/{case}/model.safetensors")
    own = m.state_dict()
    loaded = 0
    with torch.no_grad():
        for k, v in sd.items():
            key = k[len("transformer."):] if k.startswith("transformer.") else k
            if ".dec_attn.r_w_bias" in key or ".dec_attn.r_r_bias" in key:
                continue  # untied per-layer pairs: not an option of the original code
            own[key].copy_(v); loaded += 1
    print(case, "module: loaded", loaded, "of", len(sd), "tensors")
    save(m, f"{OUT}/{case}-module/model.pt")

# 5. vocab.pkl as the Transformer-XL Vocab (and Hugging Face's TransfoXLTokenizer) keeps its state: its __dict__,
#    with a collections.Counter and an OrderedDict, written by torch.save (legacy format, as in 2019) and by pickle.
import vocabulary
v = vocabulary.Vocab(special=["<eos>"], lower_case=False)
v.count_file("/work/shared/data/wikitext-2/valid.txt", add_eos=True)
v.min_freq = 3
v.build_vocab()
v.unk_idx = v.sym2idx["<unk>"]
save(v.__dict__, f"{OUT}/txl-vocab/vocab.pkl", legacy=True)
with open(f"{OUT}/txl-vocab/vocab-protocol4.pkl", "wb") as f:
    pickle.dump(v.__dict__, f, protocol=4)
with open(f"{OUT}/txl-vocab/idx2sym.txt", "w", encoding="utf-8") as f:
    f.write("\n".join(v.idx2sym) + "\n")
print("vocab", len(v.idx2sym))

# 6. One tensor of every dtype with known values: element i of a tensor of n elements is (i - n // 2) * 0.5 for floats,
#    i - n // 2 for signed integers, i for uint8, i % 2 == 1 for bool; shapes [2, 3] (and a 0-d scalar).
def values(dt, n):
    i = torch.arange(n)
    if dt.is_floating_point: return ((i - n // 2).double() * 0.5).to(dt)
    if dt == torch.bool: return (i % 2 == 1)
    if dt == torch.uint8: return i.to(dt)
    return (i - n // 2).to(dt)
dts = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64, "i64": torch.int64,
       "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool}
table = collections.OrderedDict((k, values(d, 6).reshape(2, 3)) for k, d in dts.items())
table["scalar"] = torch.tensor(2.5)
table["strided"] = values(torch.float32, 24).reshape(4, 6)[::2, 1::2]  # offset 1, strides (12, 2)
save(table, f"{OUT}/dtypes/dtypes.pt")
save(table, f"{OUT}/dtypes/dtypes-legacy.pt", legacy=True)

# 7. Hostile files: each must be refused by name without running anything. Written opcode by opcode (pickle's
#    public opcode table), never by pickling a real object that would do harm.
H = f"{OUT}/hostile"
os.makedirs(H, exist_ok=True)
def raw(name, data):
    with open(f"{H}/{name}", "wb") as f: f.write(data)
def archive(name, pkl, entries=None, compress=False):
    with zipfile.ZipFile(f"{H}/{name}", "w", zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/version", "3\n")
        for k, v in (entries or {}).items(): z.writestr(f"archive/data/{k}", v)
def u(s):  # BINUNICODE
    b = s.encode(); return b"X" + struct.pack("<I", len(b)) + b
def tensor(key, numel, size, stride, offset=0, storage=b"ctorch\nFloatStorage\n"):
    tup = lambda xs: b"(" + b"".join(b"J" + struct.pack("<i", x) for x in xs) + b"t"
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + b"(" + u("storage") + storage + u(key) + u("cpu") +
            b"J" + struct.pack("<i", numel) + b"tQ" + b"J" + struct.pack("<i", offset) + tup(size) + tup(stride) +
            b"\x89ccollections\nOrderedDict\n)Rtr" if False else
            b"ctorch._utils\n_rebuild_tensor_v2\n(" + b"(" + u("storage") + storage + u(key) + u("cpu") +
            b"J" + struct.pack("<i", numel) + b"tQ" + b"J" + struct.pack("<i", offset) + tup(size) + tup(stride) +
            b"\x89ccollections\nOrderedDict\n)RtR")
def state(*items):  # {name: value, ...} as a protocol-2 pickle
    return b"\x80\x02}(" + b"".join(u(k) + v for k, v in items) + b"u."
floats = struct.pack("<12f", *range(12))
raw("os_system.pkl", b"cos\nsystem\n(S'echo attnscope-must-not-run-this'\ntR.")
raw("builtins_eval.pkl", b"\x80\x02cbuiltins\neval\n" + u("print('ran')") + b"\x85R.")
raw("stack_global_exec.pkl", b"\x80\x04" + b"\x8c\x08builtins\x8c\x04exec\x93" + u("1") + b"\x85R.")
raw("subprocess_in_state_dict.pkl", state(("w", b"csubprocess\ncheck_output\n(" + u("id") + b"t\x85R")))
raw("unknown_class_reduce.pkl", b"\x80\x02cmymodule\nEvilThing\n)R.")
raw("setitem_on_list.pkl", b"\x80\x02]" + u("k") + u("v") + b"s.")
raw("memo_get_missing.pkl", b"\x80\x02h\x07.")
raw("ext_opcode.pkl", b"\x80\x02\x82\x01.")
raw("inst_opcode.pkl", b"(S'echo x'\nios\nsystem\n.")
raw("truncated_pickle.pkl", b"\x80\x02}(" + u("a"))
raw("stack_underflow.pkl", b"\x80\x02t.")
raw("huge_string_length.pkl", b"\x80\x02X\xff\xff\xff\x7f" + b"abc.")
archive("storage_past_entry.pt", state(("w", tensor("0", 1000000, [1000, 1000], [1000, 1]))), {"0": floats})
archive("view_past_storage.pt", state(("w", tensor("0", 12, [4, 4], [4, 1]))), {"0": floats})
archive("offset_past_storage.pt", state(("w", tensor("0", 12, [2, 3], [3, 1], offset=10))), {"0": floats})
archive("negative_stride.pt", state(("w", tensor("0", 12, [3, 4], [-4, 1]))), {"0": floats})
archive("overlapping_view.pt", state(("w", tensor("0", 12, [3, 4], [0, 1]))), {"0": floats})
archive("missing_storage.pt", state(("w", tensor("7", 12, [3, 4], [4, 1]))), {"0": floats})
archive("unknown_storage_class.pt", state(("w", tensor("0", 12, [3, 4], [4, 1], storage=b"ctorch\nEvilStorage\n"))),
        {"0": floats})
archive("compressed_entry.pt", state(("w", tensor("0", 12, [3, 4], [4, 1]))), {"0": floats}, compress=True)
# A zip bomb: one deflated entry of 64 MiB of zeros declared in a small file.
with zipfile.ZipFile(f"{H}/zip_bomb.pt", "w", zipfile.ZIP_DEFLATED) as z:
    with z.open("archive/data.pkl", "w", force_zip64=True) as f:
        chunk = b"\0" * (1 << 20)
        for _ in range(64): f.write(chunk)
good = open(f"{OUT}/gpt2-tiny/pytorch_model.bin", "rb").read()
raw("truncated_archive.bin", good[:len(good) // 2])
legacy = open(f"{OUT}/gpt2-tiny-legacy/pytorch_model.bin", "rb").read()
raw("truncated_legacy.bin", legacy[:len(legacy) - 100])
print("hostile:", sorted(os.listdir(H)))
# A view whose extent wraps 64 bits: (size - 1) x stride = 2^24 x 2^40 = 2^64 (sizes and strides above 2^31 as LONG1).
def num(x): return b"J" + struct.pack("<i", x) if -2**31 <= x < 2**31 else b"\x8a\x08" + struct.pack("<q", x)
def tensor64(key, numel, size, stride, offset=0, storage=b"ctorch\nFloatStorage\n"):
    tup = lambda xs: b"(" + b"".join(num(x) for x in xs) + b"t"
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" + b"(" + u("storage") + storage + u(key) + u("cpu") +
            num(numel) + b"tQ" + num(offset) + tup(size) + tup(stride) + b"\x89ccollections\nOrderedDict\n)RtR")
archive("extent_wraps.pt", state(("w", tensor64("0", 12, [2**24 + 1], [2**40]))), {"0": floats})

# Shared submodules nested in each other (level k holds level k-1 twice): 62 levels are reached by 2^62 paths.
def put(i): return b"r" + struct.pack("<I", i)
def get(i): return b"j" + struct.pack("<I", i)
p = b"\x80\x02"
for k in range(62):
    p += b"c__main__\nM\n)\x81" + b"}(" + u("_modules") + b"}"
    if k > 0:
        p += b"(" + u("a") + get(k - 1) + u("b") + get(k - 1) + b"u"
    p += b"ub" + put(k)
raw("shared_module_paths.pkl", p + b".")
# One non-contiguous view (a transposed 3 x 4) listed under 30,000 names, as one memoised tensor (not hostile: it
# loads, gathered once).
t = tensor64("0", 12, [4, 3], [1, 4])
pkl = b"\x80\x02}(" + u("w0") + t + put(1000000) + b"".join(u(f"w{i}") + get(1000000) for i in range(1, 30000)) + b"u."
with zipfile.ZipFile(f"{OUT}/view-many-names.pt", "w", zipfile.ZIP_STORED) as z:
    z.writestr("archive/data.pkl", pkl)
    z.writestr("archive/version", "3\n")
    z.writestr("archive/data/0", floats)
# A Transformer-XL vocab.pkl listing one memoised 128 kB word 65,536 times (262 kB asking for 8.6 GB of words).
import pickle
word = "w" * 131072
os.makedirs(f"{OUT}/repeated-word", exist_ok=True)
with open(f"{OUT}/repeated-word/vocab.pkl", "wb") as f:
    pickle.dump({"idx2sym": [word] * 65536, "sym2idx": {word: 0}, "unk_idx": 0}, f, protocol=4)
