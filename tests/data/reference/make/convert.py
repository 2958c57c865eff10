#!/usr/bin/python3
"""Runs llama.cpp's convert_hf_to_gguf.py unmodified, with stand-ins for what Debian's Python lacks here:
a transformers module whose AutoConfig fails (the converter then reads config.json itself), float8 dtype names absent
in torch 1.13, and an own vocabulary step (a toy GPT-2 vocabulary; token ids are given by the cases)."""
import sys, types, runpy
LLAMA = "/work/ref/llama.cpp"
sys.path.insert(0, LLAMA)
sys.path.insert(0, LLAMA + "/gguf-py")

tf = types.ModuleType("transformers")
class _AutoConfig:
    @staticmethod
    def from_pretrained(*a, **k):
        raise OSError("stub: no transformers here")
class _AutoTokenizer:
    @staticmethod
    def from_pretrained(*a, **k):
        raise OSError("stub: no transformers here")
tf.AutoConfig = _AutoConfig
tf.AutoTokenizer = _AutoTokenizer
sys.modules["transformers"] = tf

import torch
for n in ("float8_e4m3fn", "float8_e5m2"):
    if not hasattr(torch, n):
        setattr(torch, n, type(n, (), {})())

import gguf
import conversion.llama as cl
import conversion.base as cb

def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]

def toy_vocab(self):
    V = self.hparams["vocab_size"]
    syms = bytes_to_unicode()
    tokens = list(syms)
    merges = []
    letters = "etaoinshrdlucmfwypvb"
    for i in range(20):
        a, b = letters[i], letters[(i + 1) % 20]
        merges.append(f"{a} {b}")
        tokens.append(a + b)
    types_ = [gguf.TokenType.NORMAL] * len(tokens)
    while len(tokens) < V - 3:
        tokens.append(f"[PAD{len(tokens)}]")
        types_.append(gguf.TokenType.UNUSED)
    for t in ("<|bos|>", "<|eos|>", "<|pad|>"):
        tokens.append(t)
        types_.append(gguf.TokenType.CONTROL)
    w = self.gguf_writer
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types_)
    w.add_token_merges(merges)
    w.add_bos_token_id(V - 3)
    w.add_eos_token_id(V - 2)
    w.add_pad_token_id(V - 1)

cl.LlamaModel.set_vocab = toy_vocab
cb.TextModel.set_vocab = toy_vocab

sys.argv = [LLAMA + "/convert_hf_to_gguf.py"] + sys.argv[1:]
runpy.run_path(LLAMA + "/convert_hf_to_gguf.py", run_name="__main__")
