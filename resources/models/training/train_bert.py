#!/usr/bin/env python3
"""Trains attnscope's built-in BERT-shaped encoder with masked-language modelling on WikiText-2 and writes it as a
Hugging Face folder the core loads: config.json (model_type bert), model.safetensors (BertForMaskedLM names:
`bert.` prefix, `cls.predictions.*` head, decoder tied to the word embeddings), vocab.txt (bert-base-uncased's
WordPiece vocabulary, Apache-2.0), tokenizer_config.json, README.md and reference.json.

The model is written from the BERT paper and the Hugging Face config semantics: learned absolute positions, token
type embeddings, post-LayerNorm blocks (eps 1e-12), exact (erf) GELU, bidirectional attention. Training examples are
`[CLS] A [SEP] B [SEP]` with A and B two consecutive stretches of text (token types 0 and 1), 15% of the text pieces
masked (80% [MASK], 10% a random piece, 10% unchanged). The WordPiece tokenizer below is this script's own
(BasicTokenizer + greedy longest match, as the BERT paper's release describes it); WikiText's `<unk>` becomes
[UNK]. reference.json holds this script's masked-token loss on a validation example that the C++ core's test
reproduces. Trains on WikiText-2 test.txt, evaluates on valid.txt (CC BY-SA 3.0), like train_txl.py.

Example:
  /usr/bin/python3 train_bert.py --name bert-wikitext2 --layers 6 --heads 8 --hidden 256 --intermediate 1024 \
      --vocab-file ../../../../shared/testdata/tokenizers/bert-uncased/vocab.txt --minutes 40 --out ../bert-wikitext2
"""
import argparse, ctypes, json, math, os, random, shutil, sys, time, unicodedata

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_txl  # noqa: E402
from train_txl import linear, read_safetensors, write_safetensors  # noqa: E402


def is_cjk(cp):
    return any(lo <= cp <= hi for lo, hi in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
                                              (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))


def is_punct(ch):
    cp = ord(ch)
    return 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or unicodedata.category(ch).startswith("P")


def basic_words(text):
    """Clean, isolate CJK, lower-case, strip accents, split on white space and punctuation."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or (unicodedata.category(ch).startswith("C") and ch not in "\t\n\r"):
            continue
        if ch.isspace():
            out.append(" ")
        elif is_cjk(cp):
            out.append(" " + ch + " ")
        else:
            out.append(ch)
    text = unicodedata.normalize("NFD", "".join(out).lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    words = []
    for w in text.split():
        cur = ""
        for ch in w:
            if is_punct(ch):
                if cur:
                    words.append(cur)
                words.append(ch)
                cur = ""
            else:
                cur += ch
        if cur:
            words.append(cur)
    return words


class WordPiece:
    def __init__(self, vocab):
        self.vocab = vocab
        self.index = {p: i for i, p in enumerate(vocab)}
        self.unk = self.index["[UNK]"]
        self.cache = {}

    def word(self, w):
        if w in self.cache:
            return self.cache[w]
        if len(w) > 100:
            return [self.unk]
        ids, start = [], 0
        while start < len(w):
            end, found = len(w), None
            while start < end:
                piece = ("##" if start > 0 else "") + w[start:end]
                if piece in self.index:
                    found = self.index[piece]
                    break
                end -= 1
            if found is None:
                ids = [self.unk]
                break
            ids.append(found)
            start = end
        self.cache[w] = ids
        return ids

    def encode(self, text):
        ids = []
        for part_i, part in enumerate(text.split("<unk>")):  # WikiText's unknown word is BERT's [UNK]
            if part_i:
                ids.append(self.unk)
            for w in basic_words(part):
                ids.extend(self.word(w))
        return ids


def build_word_vocab(path, size):
    """BERT's special tokens, then the `size` most frequent words of the text as BERT's basic tokenizer splits them
    (lower-cased, punctuation apart; WikiText's <unk> left out): a WordPiece vocabulary of whole words, so an unknown
    word is [UNK] as in WikiText itself."""
    from collections import Counter
    counts = Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            for part in line.split("<unk>"):
                counts.update(basic_words(part))
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [w for w, _ in counts.most_common(size)]


def read_ids(path, wp):
    with open(path, encoding="utf-8") as f:
        return [i for line in f for i in wp.encode(line)]


class Block(nn.Module):
    def __init__(self, d, h, inter):
        super().__init__()
        self.h = h
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
        self.attn_out = nn.Linear(d, d)
        self.attn_norm = nn.LayerNorm(d, eps=1e-12)
        self.intermediate = nn.Linear(d, inter)
        self.output = nn.Linear(inter, d)
        self.out_norm = nn.LayerNorm(d, eps=1e-12)

    @staticmethod
    def lin(m, x):
        return linear(x, m.weight, m.bias)

    def forward(self, x, key_mask, dropout):
        B, T, C = x.shape
        dh = C // self.h
        q = self.lin(self.query, x).view(B, T, self.h, dh).transpose(1, 2)
        k = self.lin(self.key, x).view(B, T, self.h, dh).transpose(1, 2)
        v = self.lin(self.value, x).view(B, T, self.h, dh).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        if key_mask is not None:
            s = s.masked_fill(key_mask[:, None, None, :], float("-inf"))
        p = F.dropout(F.softmax(s, dim=-1), dropout, self.training)
        y = (p @ v).transpose(1, 2).reshape(B, T, C)
        a = self.attn_norm(x + F.dropout(self.lin(self.attn_out, y), dropout, self.training))
        f = self.lin(self.output, F.gelu(self.lin(self.intermediate, a)))  # exact erf GELU
        return self.out_norm(a + F.dropout(f, dropout, self.training))


class Bert(nn.Module):
    def __init__(self, vocab, d, layers, h, inter, positions, dropout, sinusoidal_positions=False):
        super().__init__()
        self.word = nn.Embedding(vocab, d)
        self.position = nn.Embedding(positions, d)
        self.token_type = nn.Embedding(2, d)
        for e in (self.word, self.position, self.token_type):
            nn.init.normal_(e.weight, std=0.02)
        if sinusoidal_positions:
            # Still learned, but started from the Transformer paper's sine/cosine table (at the words' scale): random
            # positions leave attention uniform for a long time on a corpus this small, and a bag of words fills
            # every [MASK] with "the".
            pos = torch.arange(positions, dtype=torch.float32)[:, None]
            freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
            table = torch.zeros(positions, d)
            table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
            with torch.no_grad():
                self.position.weight.copy_(table * 0.02 * math.sqrt(2.0))
        self.emb_norm = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList([Block(d, h, inter) for _ in range(layers)])
        self.head_dense = nn.Linear(d, d)
        self.head_norm = nn.LayerNorm(d, eps=1e-12)
        self.head_bias = nn.Parameter(torch.zeros(vocab))
        self.dropout = dropout

    def forward(self, ids, types, key_mask=None, select=None):
        T = ids.shape[1]
        x = self.word(ids) + self.position(torch.arange(T))[None] + self.token_type(types)
        x = F.dropout(self.emb_norm(x), self.dropout, self.training)
        for layer in self.layers:
            x = layer(x, key_mask, self.dropout)
        if select is not None:  # only the masked positions need the vocabulary product
            x = x[select]
        h = self.head_norm(F.gelu(linear(x, self.head_dense.weight, self.head_dense.bias)))
        return linear(h, self.word.weight, self.head_bias)  # decoder tied to the word embeddings


def make_example(ids, start, seq_len, rng, vocab_size, special, mask_rate=0.15, first_word=1000, unk=None):
    """[CLS] A [SEP] B [SEP] from ids[start:], A and B split at a random point; masked pieces and their targets
    (a random replacement is drawn from the ordinary pieces, ids first_word .. vocab_size - 1). With `unk` given,
    [UNK] pieces are never masked: a filler the model learnt to guess as "[UNK]" tells a reader nothing."""
    cls, sep, mask = special
    n = seq_len - 3
    piece = ids[start:start + n]
    cut = rng.randint(1, n - 1)
    tokens = [cls] + piece[:cut] + [sep] + piece[cut:] + [sep]
    types = [0] * (cut + 2) + [1] * (n - cut + 1)
    inputs, targets = list(tokens), [-100] * len(tokens)
    for i, t in enumerate(tokens):
        if t in (cls, sep, unk) or rng.random() >= mask_rate:
            continue
        targets[i] = t
        r = rng.random()
        inputs[i] = mask if r < 0.8 else (rng.randrange(first_word, vocab_size) if r < 0.9 else t)
    return inputs, types, targets


def evaluate(model, ids, seq_len, special, vocab_size, examples=None, first_word=1000, unk=None):
    """Mean masked-token loss over consecutive validation windows, masks drawn with a fixed seed."""
    model.eval()
    rng = random.Random(4321)
    total, n = 0.0, 0
    starts = list(range(0, len(ids) - seq_len, seq_len - 3))[:examples]
    with torch.no_grad():
        for s in starts:
            x, t, y = make_example(ids, s, seq_len, rng, vocab_size, special, 0.15, first_word, unk)
            y = torch.tensor([y])
            select = y != -100
            logits = model(torch.tensor([x]), torch.tensor([t]), select=select)
            total += F.cross_entropy(logits, y[select], reduction="sum").item()
            n += int(select.sum())
    model.train()
    return total / max(n, 1)


def hf_names(model):
    """The model's parameters under Hugging Face's BertForMaskedLM names (the decoder is tied: not listed)."""
    t = {"bert.embeddings.word_embeddings.weight": model.word.weight,
         "bert.embeddings.position_embeddings.weight": model.position.weight,
         "bert.embeddings.token_type_embeddings.weight": model.token_type.weight,
         "bert.embeddings.LayerNorm.weight": model.emb_norm.weight, "bert.embeddings.LayerNorm.bias": model.emb_norm.bias,
         "cls.predictions.transform.dense.weight": model.head_dense.weight,
         "cls.predictions.transform.dense.bias": model.head_dense.bias,
         "cls.predictions.transform.LayerNorm.weight": model.head_norm.weight,
         "cls.predictions.transform.LayerNorm.bias": model.head_norm.bias,
         "cls.predictions.bias": model.head_bias}
    names = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
             "attn_out": "attention.output.dense", "attn_norm": "attention.output.LayerNorm",
             "intermediate": "intermediate.dense", "output": "output.dense", "out_norm": "output.LayerNorm"}
    for i, layer in enumerate(model.layers):
        for attr, hf in names.items():
            m = getattr(layer, attr)
            t[f"bert.encoder.layer.{i}.{hf}.weight"] = m.weight
            t[f"bert.encoder.layer.{i}.{hf}.bias"] = m.bias
    return t


def export(model, args, vocab, out, card, reference):
    os.makedirs(out, exist_ok=True)
    t = hf_names(model)
    write_safetensors(os.path.join(out, "model.safetensors"), {k: v.detach().half() for k, v in t.items()},
                      {"format": "pt", "source": "attnscope train_bert.py"})
    config = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": model.word.weight.shape[0],
              "hidden_size": args.hidden, "intermediate_size": args.intermediate, "num_hidden_layers": args.layers,
              "num_attention_heads": args.heads, "max_position_embeddings": args.seq_len, "type_vocab_size": 2,
              "hidden_act": "gelu", "layer_norm_eps": 1e-12, "pad_token_id": 0,
              "position_embedding_type": "absolute", "tie_word_embeddings": True, "torch_dtype": "float16"}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(vocab) + "\n")
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "model_max_length": args.seq_len}, f, indent=2)
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference, f)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(card)


def load_exported(model, folder):
    """Loads weights written by export(), to continue training."""
    w = read_safetensors(os.path.join(folder, "model.safetensors"))
    with torch.no_grad():
        for name, prm in hf_names(model).items():
            prm.copy_(w[name])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../../../shared/data/wikitext-2"))
    ap.add_argument("--vocab-file", default="", help="a WordPiece vocab.txt (else --vocab-size words of the training text)")
    ap.add_argument("--vocab-size", type=int, default=8000)
    ap.add_argument("--mask-rate", type=float, default=0.15, help="share of pieces masked in training (evaluation: 0.15)")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--intermediate", type=int, default=1024)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--minutes", type=float, default=40)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--skip-unk", action="store_true", help="never mask [UNK] pieces (training and evaluation)")
    ap.add_argument("--position-init", choices=["normal", "sinusoidal"], default="normal",
                    help="start of the learned position embeddings")
    ap.add_argument("--short-seq-len", type=int, default=0,
                    help="train the first --short-fraction of the time on examples this long (as the BERT paper did "
                         "with 128 before 512): with fewer keys a query's attention leaves uniform sooner")
    ap.add_argument("--short-fraction", type=float, default=0.0)
    ap.add_argument("--eval-every", type=int, default=500, help="steps between validation estimates (100 windows)")
    ap.add_argument("--init-from", default="", help="continue from a model folder written by this script")
    ap.add_argument("--prior-minutes", type=float, default=0, help="training time of the --init-from run (model card)")
    ap.add_argument("--prior-steps", type=int, default=0, help="steps of the --init-from run (model card)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    try:  # OpenBLAS keeps its own thread pool
        ctypes.CDLL("libopenblas.so.0").openblas_set_num_threads(args.threads)
    except (OSError, AttributeError):
        pass
    train_txl.choose_matmul_path()
    t0 = time.time()
    if args.vocab_file:
        with open(args.vocab_file, encoding="utf-8") as f:
            vocab = [line.rstrip("\n") for line in f]
    else:
        vocab = build_word_vocab(os.path.join(args.data, "test.txt"), args.vocab_size)
    first_word = 999 if args.vocab_file else 5  # bert-base-uncased: [unused*] before id 999
    wp = WordPiece(vocab)
    special = (wp.index["[CLS]"], wp.index["[SEP]"], wp.index["[MASK]"])
    unk = wp.index["[UNK]"] if args.skip_unk else None
    train_ids = read_ids(os.path.join(args.data, "test.txt"), wp)
    valid_ids = read_ids(os.path.join(args.data, "valid.txt"), wp)
    model = Bert(len(vocab), args.hidden, args.layers, args.heads, args.intermediate, args.seq_len, args.dropout,
                 args.position_init == "sinusoidal")
    if args.init_from:
        load_exported(model, args.init_from)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    budget, step = args.minutes * 60, 0
    rng = random.Random(args.seed)
    print(f"{args.name}: {sum(p.numel() for p in model.parameters())} parameters, vocab {len(vocab)}, "
          f"{len(train_ids)} training pieces, {len(valid_ids)} validation pieces "
          f"({time.time() - t0:.0f} s to tokenize)", flush=True)
    while time.time() - t0 < budget:
        frac = min(1.0, (time.time() - t0) / budget)
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * frac)))
        for grp in opt.param_groups:
            grp["lr"] = lr
        short = args.short_seq_len > 0 and frac < args.short_fraction
        seq_len = args.short_seq_len if short else args.seq_len
        count = args.batch * args.seq_len // seq_len  # the same number of pieces per step
        batch = [make_example(train_ids, rng.randrange(0, len(train_ids) - seq_len), seq_len, rng,
                              len(vocab), special, args.mask_rate, first_word, unk) for _ in range(count)]
        x = torch.tensor([b[0] for b in batch])
        t = torch.tensor([b[1] for b in batch])
        y = torch.tensor([b[2] for b in batch])
        select = y != -100
        loss = F.cross_entropy(model(x, t, select=select), y[select])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % 50 == 0 or step == 5:
            print(f"step {step} loss {loss.item():.3f} lr {lr:.2e} {(time.time() - t0) / 60:.1f} min", flush=True)
        if step % args.eval_every == 0:
            print(f"step {step}: validation masked-token perplexity (100 windows) "
                  f"{math.exp(evaluate(model, valid_ids, args.seq_len, special, len(vocab), 100, first_word, unk)):.1f}", flush=True)
    minutes = (time.time() - t0) / 60
    # The exported weights are half precision: measure with exactly those.
    with torch.no_grad():
        for prm in model.parameters():
            prm.copy_(prm.half().float())
    ppl = math.exp(evaluate(model, valid_ids, args.seq_len, special, len(vocab), None, first_word, unk))
    # What the C++ core must reproduce: the loss on the masked pieces of the first validation window (as one text).
    x, types, y = make_example(valid_ids, 0, args.seq_len, random.Random(4321), len(vocab), special, 0.15, first_word, unk)
    model.eval()
    with torch.no_grad():
        logits = model(torch.tensor([x]), torch.tensor([types]))[0]
        loss = F.cross_entropy(logits, torch.tensor(y), ignore_index=-100).item()
    # The unigram model's perplexity on the same pieces: what a model that ignores the context reaches.
    from collections import Counter
    counts = Counter(train_ids)
    scored = [i for i in valid_ids if i != unk]
    uni = math.exp(-sum(math.log((counts[i] + 1) / (len(train_ids) + len(vocab))) for i in scored) / len(scored))
    reference = {"input_ids": x, "token_type_ids": types, "labels": y, "mean_masked_loss": loss}
    print(f"validation masked-token perplexity {ppl:.1f} after {minutes:.1f} min, {step} steps", flush=True)
    argv = sys.argv[1:]
    if "--out" in argv:
        argv[argv.index("--out") + 1] = "../" + args.name
    cmd = "cd resources/models/training && /usr/bin/python3 train_bert.py " + " ".join(argv)
    vocab_note = (f"`bert-base-uncased`'s WordPiece vocabulary ({len(vocab)} pieces, Apache-2.0; `vocab.txt`), lower-cased"
                  if args.vocab_file else
                  f"BERT's special tokens and the {len(vocab) - 5} most frequent training words, lower-cased, punctuation apart "
                  f"(a WordPiece `vocab.txt` of whole words: another word is [UNK], as in WikiText)")
    prior = (f"; {args.prior_steps} steps / {args.prior_minutes:.0f} min of them an earlier run continued with `--init-from`"
             if args.init_from else "")
    short = (f", the first {100 * args.short_fraction:.0f}% of the time as {args.batch * args.seq_len // args.short_seq_len} x "
             f"{args.short_seq_len}; positions started from a sine/cosine table" if args.short_seq_len > 0 else "")
    card = f"""# {args.name}

BERT-shaped encoder trained by attnscope's own script with masked-language modelling on WikiText-2 (CC BY-SA 3.0,
Merity et al. 2016): trained on `test.txt`, evaluated on `valid.txt`. It is here so encoders, sentence pairs and
[MASK] prediction work without a download.

| | |
| --- | --- |
| layers x heads | {args.layers} x {args.heads} (hidden {args.hidden}, head size {args.hidden // args.heads}, GELU {args.intermediate}), post-LayerNorm |
| positions | learned absolute, {args.seq_len}; token types 0 / 1 (sentence A / B) |
| vocabulary | {vocab_note} |
| head | masked-language-model head (`cls.predictions.*`), decoder tied to the word embeddings |
| parameters | {sum(p.numel() for p in model.parameters())} (stored as float16) |
| training | {step + args.prior_steps} steps of {args.batch} x {args.seq_len} pieces{short} (`[CLS] A [SEP] B [SEP]`, {100 * args.mask_rate:.0f}% masked), {minutes + args.prior_minutes:.1f} min on {args.threads} CPU thread(s), seed {args.seed}{prior} |
| validation | masked-piece perplexity **{ppl:.1f}** over {len(valid_ids)} validation pieces (15% masked{"; [UNK] never masked" if unk is not None else ""}; a unigram model: {uni:.1f}) |

`reference.json`: the first validation window with its masked pieces (`labels`, -100 elsewhere) and this script's
mean loss on them, which the core's test reproduces.

Command line:

```
{cmd}
```
"""
    export(model, args, vocab, args.out, card, reference)
    print(f"wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
