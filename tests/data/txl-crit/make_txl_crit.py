"""Transformer-XL with its projected adaptive softmax, from the original code (kimiyoung/transformer-xl, not copied):
log-probabilities of every vocabulary entry after every position, for attnscope's read-out test."""
import sys, os, json, struct, collections, argparse
import torch
ap = argparse.ArgumentParser(); ap.add_argument("--txl-code", required=True); ap.add_argument("--out", required=True)
a = ap.parse_args()
sys.path.insert(0, a.txl_code); sys.path.insert(0, a.txl_code + "/utils")
torch.version.cuda = torch.version.cuda or "0.0"
import mem_transformer
torch.manual_seed(2024)
cfg = dict(n_token=40, n_layer=2, n_head=2, d_model=12, d_head=6, d_inner=24, d_embed=16, div_val=2, cutoffs=[10, 25],
           tgt_len=5, mem_len=6, ext_len=0, same_length=False, clamp_len=-1)
m = mem_transformer.MemTransformerLM(cfg["n_token"], cfg["n_layer"], cfg["n_head"], cfg["d_model"], cfg["d_head"],
                                     cfg["d_inner"], 0.0, 0.0, tie_weight=True, d_embed=cfg["d_embed"],
                                     div_val=cfg["div_val"], tie_projs=[False, True, True], pre_lnorm=False,
                                     tgt_len=cfg["tgt_len"], ext_len=0, mem_len=cfg["mem_len"], cutoffs=cfg["cutoffs"],
                                     same_length=False, attn_type=0, clamp_len=-1)
with torch.no_grad():
    for name, p in m.named_parameters():
        if "layer_norm.weight" in name:
            p.copy_(1 + 0.15 * torch.randn_like(p))
        elif "emb_layers" in name:
            p.normal_(0, 1.0)
        elif "emb_projs" in name or "out_projs" in name:
            p.normal_(0, 1.0 / (p.shape[0] * p.shape[1]) ** 0.5)
        else:
            p.normal_(0, 0.45)
m.eval()
ids = torch.randint(0, cfg["n_token"], (15,), generator=torch.Generator().manual_seed(7))
segments = [ids[i:i + 5] for i in range(0, 15, 5)]
logprobs, mems = [], tuple()
with torch.no_grad():
    for seg in segments:
        data = seg.view(-1, 1)
        # The hidden states the loss is computed from: the model's own forward (_forward), as forward() does.
        if not mems:
            mems = m.init_mems()
        hidden, new_mems = m._forward(data, mems=mems)
        pred_hid = hidden[-data.size(0):].view(-1, hidden.size(-1))
        V = cfg["n_token"]
        # crit(hidden, target) gives -log p(target); every target for every row (keep_order keeps row order).
        lp = torch.zeros(pred_hid.size(0), V)
        for v in range(V):
            target = torch.full((pred_hid.size(0),), v, dtype=torch.long)
            lp[:, v] = -m.crit(pred_hid, target, keep_order=True)
        logprobs.append(lp)
        mems = new_mems
os.makedirs(a.out, exist_ok=True)
def write_st(path, tensors):
    header, off, blobs = {}, 0, []
    for k, t in tensors.items():
        b = t.detach().contiguous().float().numpy().tobytes()
        header[k] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        off += len(b); blobs.append(b)
    h = json.dumps(header).encode(); h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h))); f.write(h); [f.write(b) for b in blobs]
sd = m.state_dict()
hf = collections.OrderedDict()
for k, v in sd.items():
    if k.startswith("crit."):
        # As Hugging Face stores a tied model: the output tables and tied projections are the input's, left out.
        if ".out_layers." in k and k.endswith(".weight"):
            continue
        if ".out_projs." in k and not k.endswith("out_projs.0"):
            continue
        hf[k] = v
    else:
        hf["transformer." + k] = v
write_st(os.path.join(a.out, "model.safetensors"), hf)
write_st(os.path.join(a.out, "expected.safetensors"), {f"seg{s}.logprobs": lp for s, lp in enumerate(logprobs)})
torch.save(m, os.path.join(a.out, "model.pt"))
json.dump({"architectures": ["TransfoXLLMHeadModel"], "model_type": "transfo-xl", "vocab_size": 40, "cutoffs": [10, 25],
           "d_model": 12, "d_embed": 16, "n_head": 2, "d_head": 6, "d_inner": 24, "div_val": 2, "pre_lnorm": False,
           "n_layer": 2, "mem_len": 6, "clamp_len": -1, "same_length": False, "attn_type": 0, "untie_r": False,
           "tie_projs": [False, True, True], "layer_norm_epsilon": 1e-5, "tgt_len": 5, "ext_len": 0},
          open(os.path.join(a.out, "config.json"), "w"), indent=1)
json.dump({"segments": [s.tolist() for s in segments], "token_ids": ids.tolist(), "mem_len": 6, "tgt_len": 5},
          open(os.path.join(a.out, "input.json"), "w"))
print("sum of p per row (should be 1):", [float(lp.exp().sum(1).max()) for lp in logprobs])
