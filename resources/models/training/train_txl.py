#!/usr/bin/env python3
"""Trains attnscope's built-in word-level Transformer-XL models on WikiText-2 and writes them in the layout the
core loads (config.json + model.safetensors with Hugging Face TransfoXLLMHeadModel names + vocab.txt + README.md).

The model is written from the Transformer-XL paper (relative positional attention with terms (a)-(d), memory of
previous segments, post-LayerNorm, tied r_w_bias / r_r_bias); its forward pass is checked against the C++ core by
tests that load the shipped files. Trains on WikiText-2 test.txt, evaluates on valid.txt (CC BY-SA 3.0).

Example:
  /usr/bin/python3 train_txl.py --name txl-wikitext2 --layers 6 --heads 8 --d-model 128 --d-head 16 \
      --d-inner 512 --mem-len 128 --tgt-len 64 --minutes 35 --out ../txl-wikitext2
"""
import argparse, ctypes, json, math, os, struct, sys, time
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F


def _onednn_mm(a, b):
    """a [M, K] @ b [K, N] through torch's bundled oneDNN, independent of the system BLAS."""
    return torch._C._nn.mkldnn_linear(a.contiguous().to_mkldnn(), b.t().contiguous().to_mkldnn(), None).to_dense()


class _OneDnnMatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _onednn_mm(a, b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        return _onednn_mm(g, b.t()), _onednn_mm(a.t(), g)


def _gflops(mm, n=256, reps=20):
    a, b = torch.randn(n, n), torch.randn(n, n)
    mm(a, b)
    t = time.perf_counter()
    for _ in range(reps):
        mm(a, b)
    return 2 * n ** 3 * reps / (time.perf_counter() - t) / 1e9


# Debian's torch multiplies matrices through the system BLAS (libblas.so.3). The reference BLAS that Debian installs
# by default runs at about 1 GFLOP/s here; with OpenBLAS (`apt-get install libopenblas0-pthread`) torch's own
# products are the fastest path, linear layers and the attention's batched products alike. Without it, the linear
# layers go through oneDNN (20x faster than the reference BLAS) and the batched attention products stay slow.
# Chosen once by measurement; the numbers are the same either way up to rounding.
MATMUL_PATH = "torch"


def choose_matmul_path():
    global MATMUL_PATH
    native, onednn = _gflops(torch.mm), _gflops(_onednn_mm)
    MATMUL_PATH = "torch" if native >= 0.5 * onednn else "onednn"
    print(f"matrix products: system BLAS {native:.1f} GFLOP/s, oneDNN {onednn:.1f} GFLOP/s -> {MATMUL_PATH}"
          + ("" if MATMUL_PATH == "torch" else " (install libopenblas0-pthread for about 2.5x faster training)"),
          flush=True)


def linear(x, weight, bias=None):
    """x [..., in] @ weight[out, in]^T (+ bias), differentiable, on the faster of the two paths."""
    if MATMUL_PATH == "torch":
        return F.linear(x, weight, bias)
    y = _OneDnnMatMul.apply(x.reshape(-1, x.shape[-1]), weight.t())
    if bias is not None:
        y = y + bias
    return y.reshape(*x.shape[:-1], weight.shape[0])


class FastFF(nn.Module):
    """relu(x W1^T + b1) W2^T + b2 with the parameter names of the reference's pos_ff.CoreNet (0 and 3)."""
    def __init__(self, d, d_inner, dropout):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(d, d_inner), nn.ReLU(), nn.Dropout(dropout), nn.Linear(d_inner, d)])
        self.drop = nn.Dropout(dropout)

    def __getitem__(self, i):
        return self.layers[i]

    def forward(self, x):
        h = self.layers[2](F.relu(linear(x, self.layers[0].weight, self.layers[0].bias)))
        return self.drop(linear(h, self.layers[3].weight, self.layers[3].bias))


def read_tokens(path):
    """WikiText convention: whitespace split, <eos> at every line end."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            out.extend(line.split())
            out.append("<eos>")
    return out


def build_vocab(tokens, size):
    counts = Counter(t for t in tokens if t not in ("<eos>", "<unk>"))
    words = ["<eos>", "<unk>"] + [w for w, _ in counts.most_common(size - 2)]
    return words


class RelAttnLayer(nn.Module):
    def __init__(self, d, h, dh, d_inner, dropout, dropatt):
        super().__init__()
        self.h, self.dh = h, dh
        self.qkv_net = nn.Linear(d, 3 * h * dh, bias=False)
        self.r_net = nn.Linear(d, h * dh, bias=False)
        self.o_net = nn.Linear(h * dh, d, bias=False)
        self.attn_ln = nn.LayerNorm(d)
        self.ff = FastFF(d, d_inner, dropout)
        self.ff_ln = nn.LayerNorm(d)
        self.drop = nn.Dropout(dropout)
        self.dropatt = nn.Dropout(dropatt)

    def forward(self, x, mem, pos, u, v, mask):
        # x [B, q, d], mem [B, m, d], pos [k, d] (row = distance), mask [q, k] True = masked
        B, q, _ = x.shape
        c = torch.cat([mem, x], 1) if mem is not None else x
        k = c.shape[1]
        m = k - q
        qkv = linear(c, self.qkv_net.weight)
        Q, K, V = qkv.chunk(3, dim=-1)
        Q = Q[:, -q:].view(B, q, self.h, self.dh)
        K = K.view(B, k, self.h, self.dh)
        V = V.view(B, k, self.h, self.dh)
        R = linear(pos, self.r_net.weight).view(k, self.h, self.dh)
        ac = torch.einsum("bind,bjnd->bnij", Q + u, K)           # (a) + (c), by key
        bd = torch.einsum("bind,jnd->bnij", Q + v, R)            # (b) + (d), by distance
        i = torch.arange(q, device=x.device)[:, None]
        j = torch.arange(k, device=x.device)[None, :]
        dist = (i + m - j).clamp(min=0)                          # [q, k]
        bd = torch.gather(bd, 3, dist.expand(B, self.h, q, k))
        score = (ac + bd) / math.sqrt(self.dh)
        score = score.masked_fill(mask[None, None], float("-inf"))
        p = self.dropatt(F.softmax(score, dim=-1))
        out = torch.einsum("bnij,bjnd->bind", p, V).reshape(B, q, self.h * self.dh)
        y = self.attn_ln(x + self.drop(linear(out, self.o_net.weight)))
        return self.ff_ln(y + self.ff(y)), p


class TXL(nn.Module):
    def __init__(self, vocab, d, layers, h, dh, d_inner, mem_len, dropout=0.1, dropatt=0.0):
        super().__init__()
        self.d, self.mem_len, self.h, self.dh = d, mem_len, h, dh
        self.emb = nn.Embedding(vocab, d)
        nn.init.normal_(self.emb.weight, std=d ** -0.5)
        self.out_bias = nn.Parameter(torch.zeros(vocab))
        self.r_w_bias = nn.Parameter(torch.zeros(h, dh))
        self.r_r_bias = nn.Parameter(torch.zeros(h, dh))
        self.layers = nn.ModuleList(RelAttnLayer(d, h, dh, d_inner, dropout, dropatt) for _ in range(layers))
        self.register_buffer("inv_freq", 1 / (10000 ** (torch.arange(0.0, d, 2.0) / d)))
        self.drop = nn.Dropout(dropout)

    def pos(self, k):
        r = torch.arange(k, dtype=torch.float32)
        s = torch.outer(r, self.inv_freq)
        return torch.cat([s.sin(), s.cos()], -1)

    def forward(self, ids, mems):
        B, q = ids.shape
        x = self.drop(self.emb(ids) * math.sqrt(self.d))
        m = mems[0].shape[1] if mems else 0
        k = m + q
        mask = torch.triu(torch.ones(q, k, dtype=torch.bool), diagonal=1 + m)
        pos = self.drop(self.pos(k))
        new_mems, hidden = [], x
        for li, layer in enumerate(self.layers):
            mem = mems[li] if mems else None
            cat = torch.cat([mem, hidden], 1) if mem is not None else hidden
            new_mems.append(cat[:, -self.mem_len:].detach())
            hidden, _ = layer(hidden, mem, pos, self.r_w_bias, self.r_r_bias, mask)
        logits = linear(self.drop(hidden), self.emb.weight, self.out_bias)
        return logits, new_mems


def batchify(ids, bsz):
    n = len(ids) // bsz
    return torch.tensor(ids[: n * bsz]).view(bsz, n)


def evaluate(model, data, tgt_len, max_tokens=None):
    model.eval()
    total, count, mems = 0.0, 0, []
    with torch.no_grad():
        for s in range(0, data.shape[1] - 1, tgt_len):
            e = min(s + tgt_len, data.shape[1] - 1)
            logits, mems = model(data[:, s:e], mems)
            total += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), data[:, s + 1:e + 1].reshape(-1),
                                     reduction="sum").item()
            count += (e - s) * data.shape[0]
            if max_tokens and count >= max_tokens:
                break
    model.train()
    return math.exp(total / count)


def unigram_ppl(train_ids, valid_ids, vocab_size):
    counts = Counter(train_ids)
    n = len(train_ids)
    nll = -sum(math.log((counts.get(t, 0) + 1) / (n + vocab_size)) for t in valid_ids)
    return math.exp(nll / len(valid_ids))


def write_safetensors(path, tensors, metadata):
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        t = tensors[name].contiguous()
        dt = {torch.float16: "F16", torch.float32: "F32"}[t.dtype]
        b = t.numpy().tobytes()
        header[name] = {"dtype": dt, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """Own minimal reader (F16/F32) for --init-from."""
    import numpy as np
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        b, en = e["data_offsets"]
        dt = {"F16": np.float16, "F32": np.float32}[e["dtype"]]
        out[name] = torch.tensor(np.frombuffer(blob[8 + n + b:8 + n + en], dtype=dt).reshape(e["shape"]).astype(np.float32))
    return out


def load_exported(model, folder):
    """Loads weights written by export() (the inverse mapping), to continue training a shipped model."""
    w = read_safetensors(os.path.join(folder, "model.safetensors"))
    p = "transformer."
    with torch.no_grad():
        model.emb.weight.copy_(w[p + "word_emb.emb_layers.0.weight"])
        model.r_w_bias.copy_(w[p + "r_w_bias"])
        model.r_r_bias.copy_(w[p + "r_r_bias"])
        for i, L in enumerate(model.layers):
            q = f"{p}layers.{i}."
            for mod, name in [(L.qkv_net, "dec_attn.qkv_net"), (L.r_net, "dec_attn.r_net"), (L.o_net, "dec_attn.o_net")]:
                mod.weight.copy_(w[q + name + ".weight"])
            for mod, name in [(L.attn_ln, "dec_attn.layer_norm"), (L.ff_ln, "pos_ff.layer_norm"),
                              (L.ff[0], "pos_ff.CoreNet.0"), (L.ff[3], "pos_ff.CoreNet.3")]:
                mod.weight.copy_(w[q + name + ".weight"])
                mod.bias.copy_(w[q + name + ".bias"])


def export(model, args, vocab, out, card):
    os.makedirs(out, exist_ok=True)
    p = "transformer."
    t = {p + "word_emb.emb_layers.0.weight": model.emb.weight,
         p + "r_w_bias": model.r_w_bias, p + "r_r_bias": model.r_r_bias}
    for i, L in enumerate(model.layers):
        q = f"{p}layers.{i}."
        t[q + "dec_attn.qkv_net.weight"] = L.qkv_net.weight
        t[q + "dec_attn.r_net.weight"] = L.r_net.weight
        t[q + "dec_attn.o_net.weight"] = L.o_net.weight
        t[q + "dec_attn.layer_norm.weight"] = L.attn_ln.weight
        t[q + "dec_attn.layer_norm.bias"] = L.attn_ln.bias
        t[q + "pos_ff.CoreNet.0.weight"] = L.ff[0].weight
        t[q + "pos_ff.CoreNet.0.bias"] = L.ff[0].bias
        t[q + "pos_ff.CoreNet.3.weight"] = L.ff[3].weight
        t[q + "pos_ff.CoreNet.3.bias"] = L.ff[3].bias
        t[q + "pos_ff.layer_norm.weight"] = L.ff_ln.weight
        t[q + "pos_ff.layer_norm.bias"] = L.ff_ln.bias
    t = {k: v.detach().to(torch.float16) for k, v in t.items()}
    # The sinusoid frequencies stay float32: rounding them would shift every position encoding.
    t[p + "pos_emb.inv_freq"] = model.inv_freq.detach().float()
    write_safetensors(os.path.join(out, "model.safetensors"), t,
                      {"format": "pt", "source": "attnscope resources/models/training/train_txl.py"})
    config = {"architectures": ["TransfoXLLMHeadModel"], "model_type": "transfo-xl", "vocab_size": len(vocab),
              "cutoffs": [], "d_model": args.d_model, "d_embed": args.d_model, "n_head": args.heads,
              "d_head": args.d_head, "d_inner": args.d_inner, "div_val": 1, "pre_lnorm": False,
              "n_layer": args.layers, "mem_len": args.mem_len, "clamp_len": -1, "same_length": False,
              "attn_type": 0, "untie_r": False, "layer_norm_epsilon": 1e-5, "tgt_len": args.tgt_len,
              "ext_len": 0, "dropout": args.dropout, "dropatt": 0.0}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(card)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../../../shared/data/wikitext-2"))
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--d-head", type=int, default=16)
    ap.add_argument("--d-inner", type=int, default=512)
    ap.add_argument("--mem-len", type=int, default=128)
    ap.add_argument("--tgt-len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--steps", type=int, default=0, help="fixed number of steps (the schedule follows steps, not time)")
    ap.add_argument("--max-epochs", type=int, default=50)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=500, help="steps between quick validation prints (0: none)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", required=True)
    ap.add_argument("--init-from", default="", help="continue from a model folder written by this script "
                    "(same shape and vocabulary; the output bias restarts at 0)")
    ap.add_argument("--prior-minutes", type=float, default=0, help="training time already spent (for the card)")
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    try:  # OpenBLAS keeps its own thread pool; two trainings side by side must not oversubscribe the cores
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(args.threads)
    except (OSError, AttributeError):
        pass
    choose_matmul_path()
    t0 = time.time()

    train_tok = read_tokens(os.path.join(args.data, "test.txt"))
    valid_tok = read_tokens(os.path.join(args.data, "valid.txt"))
    vocab = build_vocab(train_tok, args.vocab)
    index = {w: i for i, w in enumerate(vocab)}
    unk = index["<unk>"]
    train_ids = [index.get(w, unk) for w in train_tok]
    valid_ids = [index.get(w, unk) for w in valid_tok]
    train = batchify(train_ids, args.batch)
    valid = batchify(valid_ids, 8)

    model = TXL(len(vocab), args.d_model, args.layers, args.heads, args.d_head, args.d_inner, args.mem_len,
                args.dropout)
    if args.init_from:
        with open(os.path.join(args.init_from, "vocab.txt"), encoding="utf-8") as f:
            if f.read().split("\n")[:-1] != vocab:
                sys.exit("--init-from: the vocabulary differs")
        load_exported(model, args.init_from)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    steps_per_epoch = (train.shape[1] - 1) // args.tgt_len
    budget = args.minutes * 60
    step, epoch = 0, 0
    warmup = args.warmup
    print(f"{args.name}: {sum(p.numel() for p in model.parameters())} parameters, vocab {len(vocab)}, "
          f"{len(train_ids)} training tokens, {steps_per_epoch} steps/epoch", flush=True)
    done = False
    while epoch < args.max_epochs and not done:
        mems = []
        for s in range(0, train.shape[1] - 1 - args.tgt_len, args.tgt_len):
            elapsed = time.time() - t0
            if (args.steps and step >= args.steps) or (not args.steps and elapsed > budget):
                done = True
                break
            # Linear warm-up, then cosine decay over the step or time budget.
            frac = min(1.0, step / args.steps) if args.steps else min(1.0, elapsed / budget)
            lr = args.lr * min(1.0, (step + 1) / warmup) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))
            for g in opt.param_groups:
                g["lr"] = lr
            logits, mems = model(train[:, s:s + args.tgt_len], mems)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   train[:, s + 1:s + 1 + args.tgt_len].reshape(-1))
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
            opt.step()
            step += 1
            if step % 50 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.3f} lr {lr:.2e} "
                      f"{(time.time() - t0) / 60:.1f} min", flush=True)
            if args.eval_every and step % args.eval_every == 0:  # a cheap look at over-fitting on the way
                print(f"step {step}: perplexity on 16k validation tokens "
                      f"{evaluate(model, valid, args.tgt_len, max_tokens=16384):.1f}", flush=True)
        epoch += 1
    train_minutes = (time.time() - t0) / 60
    # The exported weights are half precision: measure perplexity with exactly those.
    with torch.no_grad():
        for prm in model.parameters():
            prm.copy_(prm.half().float())
    ppl = evaluate(model, valid, args.tgt_len)
    uni = unigram_ppl(train_ids, valid_ids, len(vocab))
    print(f"validation perplexity {ppl:.1f} (unigram {uni:.1f}) after {train_minutes:.1f} min, {epoch} epochs",
          flush=True)
    prior = (f"; continued from an earlier run of {args.prior_minutes:.0f} min (`--init-from`)"
             if args.init_from else "")
    cmd = " ".join(["/usr/bin/python3", "resources/models/training/train_txl.py"] +
                   [os.path.relpath(a) if os.path.isabs(a) else a for a in sys.argv[1:]])
    card = f"""# {args.name}

Word-level Transformer-XL trained by attnscope's own script on WikiText-2 (CC BY-SA 3.0, Merity et al. 2016):
trained on `test.txt`, evaluated on `valid.txt`.

| | |
| --- | --- |
| layers x heads | {args.layers} x {args.heads} (d_model {args.d_model}, d_head {args.d_head}, d_inner {args.d_inner}) |
| memory / segment | mem_len {args.mem_len}, tgt_len {args.tgt_len} |
| vocabulary | {len(vocab)} most frequent training words + `<unk>`, `<eos>` |
| parameters | {sum(p.numel() for p in model.parameters())} (stored as float16) |
| training | {step} steps, {epoch} epochs, {train_minutes:.1f} min on {args.threads} CPU thread(s), seed {args.seed}{prior} |
| validation perplexity | **{ppl:.1f}** (unigram model on the same vocabulary: {uni:.1f}) |

Command line:

```
{cmd}
```
"""
    if args.init_from and os.path.exists(os.path.join(args.init_from, "README.md")):
        with open(os.path.join(args.init_from, "README.md")) as f:
            earlier = f.read().split("\n", 1)[1]  # without its title
        card += "\n## The run this one continued\n" + earlier.replace("\n## ", "\n### ")
    export(model, args, vocab, args.out, card)
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
