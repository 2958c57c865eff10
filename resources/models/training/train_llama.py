#!/usr/bin/env python3
"""Trains attnscope's built-in word-level Llama-family model on WikiText-2 and writes it as a Hugging Face folder the
core loads (config.json with model_type llama + model.safetensors with LlamaForCausalLM names + vocab.txt +
README.md + reference.json).

The model is written from the Hugging Face Llama conventions: RMSNorm, rotary position embedding in the rotate_half
layout (theta 10000), grouped-query attention, SwiGLU, tied input and output embeddings, no biases. It gives the app a
rotary model with real attention (previous-token and sink heads, frequency bands that differ) that ships with it.
reference.json holds this script's own next-token loss on a validation slice, which a test of the C++ core
reproduces. Trains on WikiText-2 test.txt, evaluates on valid.txt (CC BY-SA 3.0), like train_txl.py.

The placeholder <unk> is never a target (its loss is not counted, in training or in the printed perplexity), so the
model does not learn to predict it. --repeat-fraction mixes in rows that are a span written twice (half of them random
words), and every evaluation prints the best head's induction score (the atlas's: random words written twice).

Example:
  /usr/bin/python3 train_llama.py --name llama-wikitext2 --layers 6 --heads 8 --kv-heads 2 --hidden 192 \
      --intermediate 512 --seq-len 128 --batch 8 --minutes 55 --repeat-fraction 0.3 --out ../llama-wikitext2
"""
import argparse, ctypes, json, math, os, shlex, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_txl import build_vocab, read_safetensors, read_tokens, unigram_ppl, write_safetensors  # noqa: E402
import write_stories  # noqa: E402


def story_tokens(count, seed):
    """The stories write_stories.py writes, as WikiText-style tokens (a story per line, <eos> at its end)."""
    rng = write_stories.random.Random(seed)
    out = []
    for _ in range(count):
        out.extend(write_stories.story(rng).split())
        out.append("<eos>")
    return out


# What each corpus is, for the model card.
CORPUS_ABOUT = {
    "wikitext2": "on WikiText-2 (CC BY-SA 3.0, Merity et al.\n2016): trained on `test.txt`, evaluated on `valid.txt`",
    "stories": "on short stories for young readers that\n`training/write_stories.py` writes from a small grammar "
               "(no corpus is read; trained on its stories of seed {seed}, evaluated on\nthose of seed {seed} + 1)",
}


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Block(nn.Module):
    def __init__(self, d, h, kv, dh, inter, eps):
        super().__init__()
        self.h, self.kv, self.dh = h, kv, dh
        self.kept = None  # a list when induction_scores() wants the attention probabilities
        self.input_layernorm = RMSNorm(d, eps)
        self.q_proj = nn.Linear(d, h * dh, bias=False)
        self.k_proj = nn.Linear(d, kv * dh, bias=False)
        self.v_proj = nn.Linear(d, kv * dh, bias=False)
        self.o_proj = nn.Linear(h * dh, d, bias=False)
        self.post_attention_layernorm = RMSNorm(d, eps)
        self.gate_proj = nn.Linear(d, inter, bias=False)
        self.up_proj = nn.Linear(d, inter, bias=False)
        self.down_proj = nn.Linear(inter, d, bias=False)

    def forward(self, x, cos, sin, dropout):
        B, T, _ = x.shape
        a = self.input_layernorm(x)
        q = self.q_proj(a).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.k_proj(a).view(B, T, self.kv, self.dh).transpose(1, 2)
        v = self.v_proj(a).view(B, T, self.kv, self.dh).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.h // self.kv, dim=1)  # query head n reads kv head n // (h / kv)
        v = v.repeat_interleave(self.h // self.kv, dim=1)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(self.dh)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        p = F.dropout(F.softmax(s, dim=-1), dropout, self.training)
        if self.kept is not None:
            self.kept.append(p.detach())
        y = (p @ v).transpose(1, 2).reshape(B, T, self.h * self.dh)
        x = x + F.dropout(self.o_proj(y), dropout, self.training)
        m = self.post_attention_layernorm(x)
        return x + F.dropout(self.down_proj(F.silu(self.gate_proj(m)) * self.up_proj(m)), dropout, self.training)


class Llama(nn.Module):
    def __init__(self, vocab, d, layers, h, kv, dh, inter, theta, eps=1e-5, dropout=0.1):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        nn.init.normal_(self.embed_tokens.weight, std=0.02)
        self.layers = nn.ModuleList([Block(d, h, kv, dh, inter, eps) for _ in range(layers)])
        self.norm = RMSNorm(d, eps)
        self.dh, self.theta, self.dropout = dh, theta, dropout
        # Float32 angles, as Hugging Face computes them.
        self.register_buffer("inv_freq", 1.0 / (theta ** (torch.arange(0, dh, 2, dtype=torch.float32) / dh)), persistent=False)

    def forward(self, ids):
        T = ids.shape[1]
        freqs = torch.outer(torch.arange(T, dtype=torch.float32), self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        x = F.dropout(self.embed_tokens(ids), self.dropout, self.training)
        for layer in self.layers:
            x = layer(x, cos, sin, self.dropout)
        return self.norm(x) @ self.embed_tokens.weight.t()  # tied output embedding


def induction_scores(model, vocab_size, repeat, rows=8, seed=7):
    """Each head's induction score, as the atlas measures it: on rows of `repeat` random word ids written twice, the
    mean attention a query in the second copy pays to the token after its earlier occurrence. [layer][head]."""
    g = torch.Generator().manual_seed(seed)
    first = torch.randint(2, vocab_size, (rows, repeat), generator=g)  # ids 0 and 1 are <eos> and <unk>
    ids = torch.cat((first, first), dim=1)
    for layer in model.layers:
        layer.kept = []
    was_training = model.training
    model.eval()
    with torch.no_grad():
        model(ids)
    model.train(was_training)
    scores = []
    for layer in model.layers:
        p = layer.kept[0]  # [rows, heads, T, T]
        layer.kept = None
        q = torch.arange(repeat, 2 * repeat)
        scores.append(p[:, :, q, q - repeat + 1].mean(dim=(0, 2)).tolist())
    return scores


def best_induction(scores):
    return max((s, l, h) for l, row in enumerate(scores) for h, s in enumerate(row))


def evaluate(model, ids, seq_len, max_tokens=None, ignore=-100):
    """Mean next-token loss over chunks of seq_len tokens, each a text of its own (as attnscope runs segments);
    targets equal to `ignore` (the placeholder <unk>) are not counted."""
    model.eval()
    ids = ids[:max_tokens] if max_tokens else ids
    total, n = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(ids) - 1, seq_len):
            chunk = torch.tensor(ids[s:s + seq_len + 1])
            if len(chunk) < 2:
                break
            logits = model(chunk[:-1].unsqueeze(0))[0]
            total += F.cross_entropy(logits, chunk[1:], reduction="sum", ignore_index=ignore).item()
            n += int((chunk[1:] != ignore).sum())
    model.train()
    return total / n


def greedy(model, ids, steps, context, eos):
    """Greedy continuation (argmax each step, stops at <eos>): what the app's Generate writes at temperature 0."""
    model.eval()
    ids = list(ids)
    with torch.no_grad():
        for _ in range(steps):
            ids.append(int(model(torch.tensor([ids[-context:]]))[0, -1].argmax()))
            if ids[-1] == eos:
                break
    return ids


def greedy_reference(folder, prompt, steps=60):
    """Adds the greedy continuation of `prompt` by the exported float16 weights to FOLDER/reference.json (for a
    model exported before the training script wrote it)."""
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    with open(os.path.join(folder, "vocab.txt"), encoding="utf-8") as f:
        vocab = f.read().split("\n")[:c["vocab_size"]]
    model = Llama(c["vocab_size"], c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"],
                  c["num_key_value_heads"], c["head_dim"], c["intermediate_size"], c["rope_theta"])
    weights = {k: torch.as_tensor(v).float() for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    state = {"embed_tokens.weight": weights["model.embed_tokens.weight"], "norm.weight": weights["model.norm.weight"]}
    for k, v in weights.items():
        if k.startswith("model.layers."):
            i, rest = k[len("model.layers."):].split(".", 1)
            state[f"layers.{i}." + rest.replace("self_attn.", "").replace("mlp.", "")] = v
    model.load_state_dict(state)
    index = {w: i for i, w in enumerate(vocab)}
    with open(os.path.join(folder, "reference.json")) as f:
        reference = json.load(f)
    reference["greedy"] = greedy_record(model, index, vocab, prompt, steps, c["max_position_embeddings"])
    with open(os.path.join(folder, "reference.json"), "w") as f:
        json.dump(reference, f)
    return reference["greedy"]


def greedy_record(model, index, vocab, prompt, steps, context):
    ids = [index.get(w, index["<unk>"]) for w in prompt.split()]
    out = greedy(model, ids, steps, context, index["<eos>"])
    return {"prompt_ids": ids, "continuation_ids": out[len(ids):], "text": " ".join(vocab[i] for i in out)}


def training_batch(data, args, g, vocab_size):
    """A batch of rows of seq_len + 1 tokens: most are running text, a fraction (--repeat-fraction) a span written
    twice, so that copying what followed an earlier occurrence pays (what induction heads do) in a corpus too small for
    it to pay often on its own. Of those spans, --random-share are random vocabulary words (nothing but the copy
    predicts their second half: the clearest lesson), the rest spans of the text."""
    rows = []
    half = (args.seq_len + 1 + 1) // 2
    for _ in range(args.batch):
        if torch.rand(1, generator=g).item() < args.repeat_fraction:
            if torch.rand(1, generator=g).item() < args.random_share:
                span = torch.randint(2, vocab_size, (half,), generator=g)  # not <eos> or <unk>
            else:
                s = int(torch.randint(0, len(data) - half, (1,), generator=g))
                span = data[s:s + half]
            rows.append(torch.cat((span, span))[:args.seq_len + 1])
        else:
            s = int(torch.randint(0, len(data) - args.seq_len - 1, (1,), generator=g))
            rows.append(data[s:s + args.seq_len + 1])
    rows = torch.stack(rows)
    return rows[:, :-1], rows[:, 1:]


def export(model, args, vocab, out, card, reference):
    os.makedirs(out, exist_ok=True)
    t = {"model.embed_tokens.weight": model.embed_tokens.weight, "model.norm.weight": model.norm.weight}
    for i, layer in enumerate(model.layers):
        p = f"model.layers.{i}."
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            t[p + "self_attn." + name + ".weight"] = getattr(layer, name).weight
        for name in ("gate_proj", "up_proj", "down_proj"):
            t[p + "mlp." + name + ".weight"] = getattr(layer, name).weight
        t[p + "input_layernorm.weight"] = layer.input_layernorm.weight
        t[p + "post_attention_layernorm.weight"] = layer.post_attention_layernorm.weight
    write_safetensors(os.path.join(out, "model.safetensors"), {k: v.detach().half() for k, v in t.items()},
                      {"format": "pt", "source": "attnscope train_llama.py"})
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": len(vocab),
              "hidden_size": args.hidden, "intermediate_size": args.intermediate, "num_hidden_layers": args.layers,
              "num_attention_heads": args.heads, "num_key_value_heads": args.kv_heads,
              "head_dim": args.hidden // args.heads, "max_position_embeddings": args.seq_len * 2,
              "rms_norm_eps": 1e-5, "rope_theta": args.theta, "tie_word_embeddings": True,
              "hidden_act": "silu", "attention_bias": False, "mlp_bias": False, "torch_dtype": "float16"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(card)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True)
    ap.add_argument("--corpus", choices=sorted(CORPUS_ABOUT), default="wikitext2")
    ap.add_argument("--stories", type=int, default=12000, help="stories to train on (--corpus stories)")
    ap.add_argument("--prompt", default="", help="the model card shows the greedy continuation of this text")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../../../shared/data/wikitext-2"))
    ap.add_argument("--vocab", type=int, default=8000)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=192)
    ap.add_argument("--intermediate", type=int, default=512)
    ap.add_argument("--theta", type=float, default=10000.0)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--repeat-fraction", type=float, default=0.0,
                    help="share of training rows that are a span written twice (teaches induction heads)")
    ap.add_argument("--random-share", type=float, default=0.5,
                    help="of those spans, the share made of random vocabulary words rather than the text")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=40)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", required=True)
    ap.add_argument("--greedy-reference-only", action="store_true",
                    help="only add the greedy continuation of --prompt by the model already in --out to its reference.json")
    args = ap.parse_args()
    if args.greedy_reference_only:
        print(greedy_reference(args.out, args.prompt)["text"])
        return
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    try:  # OpenBLAS keeps its own thread pool
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(args.threads)
    except (OSError, AttributeError):
        pass
    t0 = time.time()
    if args.corpus == "stories":
        train_tok = story_tokens(args.stories, args.seed)
        valid_tok = story_tokens(max(200, args.stories // 20), args.seed + 1)
    else:
        train_tok = read_tokens(os.path.join(args.data, "test.txt"))
        valid_tok = read_tokens(os.path.join(args.data, "valid.txt"))
    vocab = build_vocab(train_tok, args.vocab)
    index = {w: i for i, w in enumerate(vocab)}
    unk = index["<unk>"]
    train_ids = [index.get(w, unk) for w in train_tok]
    valid_ids = [index.get(w, unk) for w in valid_tok]
    model = Llama(len(vocab), args.hidden, args.layers, args.heads, args.kv_heads, args.hidden // args.heads,
                  args.intermediate, args.theta, dropout=args.dropout)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    data = torch.tensor(train_ids)
    budget, step = args.minutes * 60, 0
    print(f"{args.name}: {sum(p.numel() for p in model.parameters())} parameters, vocab {len(vocab)}, "
          f"{len(train_ids)} training tokens", flush=True)
    g = torch.Generator().manual_seed(args.seed)
    repeat = min(50, args.seq_len // 2)  # the atlas's repeated-random-tokens length for this context
    while time.time() - t0 < budget:
        frac = min(1.0, (time.time() - t0) / budget)
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))
        for grp in opt.param_groups:
            grp["lr"] = lr
        x, y = training_batch(data, args, g, len(vocab))
        # The placeholder is never a target: a model that predicts "<unk>" tells a class nothing.
        loss = F.cross_entropy(model(x).reshape(-1, len(vocab)), y.reshape(-1), ignore_index=unk)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.3f} lr {lr:.2e} {(time.time() - t0) / 60:.1f} min", flush=True)
        if step % 250 == 0:
            print(f"step {step}: validation perplexity (16k tokens) "
                  f"{math.exp(evaluate(model, valid_ids, args.seq_len, 16384, unk)):.1f}; best induction score "
                  "%.3f (L%d H%d)" % best_induction(induction_scores(model, len(vocab), repeat)), flush=True)
    minutes = (time.time() - t0) / 60
    # The exported weights are half precision: measure with exactly those.
    with torch.no_grad():
        for prm in model.parameters():
            prm.copy_(prm.half().float())
    ppl = math.exp(evaluate(model, valid_ids, args.seq_len, ignore=unk))
    uni = unigram_ppl(train_ids, valid_ids, len(vocab))
    # What the C++ core must reproduce: this implementation's loss on the first validation tokens, as many as the
    # context holds, run as one segment (float32 forward of the float16 weights).
    ref_ids = valid_ids[:args.seq_len * 2]
    reference = {"token_ids": ref_ids, "segment_length": len(ref_ids),
                 "mean_next_token_loss": evaluate(model, ref_ids, len(ref_ids))}
    induction = best_induction(induction_scores(model, len(vocab), repeat))
    print(f"validation perplexity {ppl:.1f} (unigram {uni:.1f}) after {minutes:.1f} min, {step} steps; best "
          "induction score %.3f (L%d H%d)" % induction, flush=True)
    continuation = ""
    if args.prompt:
        reference["greedy"] = greedy_record(model, index, vocab, args.prompt, 60, args.seq_len * 2)
        continuation = (f"\nGreedy continuation of `{args.prompt}` (float16 weights, as the app generates it):\n\n> "
                        + reference["greedy"]["text"] + "\n")
        print(continuation, flush=True)
    # As typed from this folder, the model written beside it (where the built-ins live).
    argv = sys.argv[1:]
    if "--out" in argv:
        argv[argv.index("--out") + 1] = "../" + args.name
    cmd = "cd resources/models/training && /usr/bin/python3 train_llama.py " + shlex.join(argv)
    card = f"""# {args.name}

Word-level Llama-family decoder trained by attnscope's own script {CORPUS_ABOUT[args.corpus].format(seed=args.seed)}.
It is here so the Llama-family views (rotary frequency bands, attention sinks, rollout, head ablation, grouped-query
heads) show real attention without a download.

| | |
| --- | --- |
| layers x heads | {args.layers} x {args.heads} query heads sharing {args.kv_heads} key/value heads (hidden {args.hidden}, head size {args.hidden // args.heads}, SwiGLU {args.intermediate}) |
| positions | rotary, theta {args.theta:g}, trained on sequences of {args.seq_len} tokens (context in config: {args.seq_len * 2}) |
| vocabulary | {len(vocab) - 2} {"most frequent " if len(vocab) - 2 < len(set(train_tok) - {"<eos>", "<unk>"}) else ""}training words + `<unk>`, `<eos>` (no BOS) |
| parameters | {sum(p.numel() for p in model.parameters())} (stored as float16, embeddings tied) |
| training | {step} steps of {args.batch} x {args.seq_len} tokens, {minutes:.1f} min on {args.threads} CPU thread(s), seed {args.seed} |
| validation perplexity | **{ppl:.1f}** in chunks of {args.seq_len}, over every target but `<unk>` (unigram model on the same vocabulary: {uni:.1f}) |
| induction | best head L{induction[1]} H{induction[2]}: score {induction[0]:.2f} on {repeat} random words written twice |

{continuation}
`reference.json`: the training script's mean next-token loss on the first {args.seq_len * 2} validation tokens (the context), which the core's
test reproduces.

Command line:

```
{cmd}
```
"""
    export(model, args, vocab, args.out, card, reference)
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
