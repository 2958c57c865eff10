#!/usr/bin/python3
"""expected.safetensors from the llama.cpp dump, checked against an own numpy forward written from Hugging Face's
GraniteMoe description (config.json + model.safetensors, not the GGUF)."""
import json, struct, sys, os
import numpy as np
sys.path.insert(0, os.path.dirname(__file__))
from readdump import read
from make_case import write_safetensors

def load_st(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        base = 8 + n
        data = f.read()
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        out[k] = np.frombuffer(data[a:b], dtype=np.float32).reshape(v["shape"])
    return out

def forward(case, dtype=np.float64, drop=None):
    cfg = json.load(open(os.path.join(case, "config.json")))
    W = {k: v.astype(dtype) for k, v in load_st(os.path.join(case, "model.safetensors")).items()}
    ids = json.load(open(os.path.join(case, "input.json")))["token_ids"]
    T, C, H, KV = len(ids), cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d, E, K, I = C // H, cfg.get("num_local_experts", 0), cfg.get("num_experts_per_tok", 0), cfg["intermediate_size"]
    eps = cfg["rms_norm_eps"]
    emb_m = 1.0 if drop == "embedding" else cfg["embedding_multiplier"]
    att_m = 1 / np.sqrt(d) if drop == "attention" else cfg["attention_multiplier"]
    res_m = 1.0 if drop == "residual" else cfg["residual_multiplier"]
    log_s = 1.0 if drop == "logits" else cfg["logits_scaling"]
    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + dtype(eps)) * w
    inv = 1.0 / (cfg["rope_theta"] ** (np.arange(0, d, 2, dtype=dtype) / d))
    ang = np.arange(T, dtype=dtype)[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, -1).astype(dtype)
    sin = np.concatenate([np.sin(ang)] * 2, -1).astype(dtype)
    def rope(x):  # [T, heads, d], rotate_half
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        rot = np.concatenate([-x2, x1], -1)
        return x * cos[:, None, :] + rot * sin[:, None, :]
    h = W["model.embed_tokens.weight"][ids] * dtype(emb_m)
    out = {}
    mask = np.triu(np.ones((T, T), bool), 1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = rms(h, W[p + "input_layernorm.weight"])
        q = (a @ W[p + "self_attn.q_proj.weight"].T).reshape(T, H, d)
        k = (a @ W[p + "self_attn.k_proj.weight"].T).reshape(T, KV, d)
        v = (a @ W[p + "self_attn.v_proj.weight"].T).reshape(T, KV, d)
        q, k = rope(q), rope(k)
        g = H // KV
        probs = np.zeros((H, T, T), dtype)
        heads = np.zeros((T, H, d), dtype)
        for hh in range(H):
            s = (q[:, hh] @ k[:, hh // g].T) * dtype(att_m)
            s[mask] = -np.inf
            s = s - s.max(-1, keepdims=True)
            e = np.exp(s)
            pr = e / e.sum(-1, keepdims=True)
            probs[hh] = pr
            heads[:, hh] = pr @ v[:, hh // g]
        out[f"layer{l}.attn_prob"] = probs
        h = h + (heads.reshape(T, C) @ W[p + "self_attn.o_proj.weight"].T) * dtype(res_m)
        m = rms(h, W[p + "post_attention_layernorm.weight"])
        if E == 0:  # dense Granite: Llama's SwiGLU MLP
            g_, u_ = m @ W[p + "mlp.gate_proj.weight"].T, m @ W[p + "mlp.up_proj.weight"].T
            if drop == "gate_up_order":
                g_, u_ = u_, g_
            h = h + ((g_ / (1 + np.exp(-g_)) * u_) @ W[p + "mlp.down_proj.weight"].T) * dtype(res_m)
            out[f"layer{l}.hidden"] = h
            continue
        logits = m @ W[p + "block_sparse_moe.router.layer.weight"].T
        z = logits - logits.max(-1, keepdims=True)
        pr = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
        top = np.argsort(-logits, -1, kind="stable")[:, :K]
        chosen = np.take_along_axis(logits, top, -1)
        if drop == "topk_softmax":  # weights = plain router probabilities, not renormalised
            wts = np.take_along_axis(pr, top, -1)
        else:  # HF: softmax over the chosen logits
            cz = chosen - chosen.max(-1, keepdims=True)
            wts = np.exp(cz) / np.exp(cz).sum(-1, keepdims=True)
        out[f"layer{l}.router_logits"] = logits
        out[f"layer{l}.router_probs"] = pr
        out[f"layer{l}.expert_ids"] = top.astype(dtype)
        out[f"layer{l}.expert_weights"] = wts
        inl = W[p + "block_sparse_moe.input_linear.weight"]
        outl = W[p + "block_sparse_moe.output_linear.weight"]
        moe = np.zeros((T, C), dtype)
        for t in range(T):
            for kk in range(K):
                e_ = top[t, kk]
                gu = inl[e_] @ m[t]
                gate, up = (gu[:I], gu[I:]) if drop != "gate_up_order" else (gu[I:], gu[:I])
                act = gate / (1 + np.exp(-gate)) * up
                moe[t] += wts[t, kk] * (outl[e_] @ act)
        if p + "shared_mlp.input_linear.weight" in W and drop != "shared":
            S = cfg["shared_intermediate_size"]
            gu = m @ W[p + "shared_mlp.input_linear.weight"].T
            gate, up = gu[:, :S], gu[:, S:]
            moe = moe + (gate / (1 + np.exp(-gate)) * up) @ W[p + "shared_mlp.output_linear.weight"].T
        h = h + moe * dtype(res_m)
        out[f"layer{l}.hidden"] = h
    hn = rms(h, W["model.norm.weight"])
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    out["logits"] = (hn @ head.T) / dtype(log_s)
    return out, cfg, T, H

def main():
    case = sys.argv[1]
    dump = read(os.path.join(case, "dump.bin"))
    ref, cfg, T, H = forward(case)
    L, K = cfg["num_hidden_layers"], cfg.get("num_experts_per_tok", 0)
    exp = {}
    for l in range(L):
        kq = dump[f"kq_soft_max-{l}"]  # [H, T, n_kv]
        assert np.all(kq[:, :, T:] == 0), "cache columns beyond T not zero"
        ap = kq[:, :, :T].copy()
        assert np.all(ap[:, np.triu(np.ones((T, T), bool), 1)] == 0)
        exp[f"layer{l}.attn_prob"] = ap
        exp[f"layer{l}.hidden"] = dump[f"l_out-{l}"]
        if K == 0:
            continue
        exp[f"layer{l}.router_logits"] = dump[f"ffn_moe_logits-{l}"]
        exp[f"layer{l}.router_probs"] = dump[f"ffn_moe_probs-{l}"]
        exp[f"layer{l}.expert_ids"] = dump[f"ffn_moe_topk-{l}"].reshape(T, K)
        exp[f"layer{l}.expert_weights"] = dump[f"ffn_moe_weights_norm-{l}"].reshape(T, K)
    exp["logits"] = dump["logits"]
    exp = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in exp.items()}
    report = {}
    for name in sorted(exp):
        kind = name.split(".")[-1]
        report.setdefault(kind, 0.0)
        report[kind] = max(report[kind], float(np.abs(exp[name] - ref[name]).max()))
    print("float64 forward vs llama.cpp:", {k: f"{v:.2g}" for k, v in report.items()})
    r32, *_ = forward(case, np.float32)
    rep32 = {}
    for name in exp:
        kind = name.split(".")[-1]
        rep32[kind] = max(rep32.get(kind, 0.0), float(np.abs(exp[name] - r32[name]).max()))
    print("float32 forward vs llama.cpp:", {k: f"{v:.2g}" for k, v in sorted(rep32.items())})
    for drop in ["embedding", "attention", "residual", "logits", "topk_softmax", "gate_up_order", "shared"]:
        if (drop == "shared" and "shared_intermediate_size" not in cfg) or (drop == "topk_softmax" and K == 0):
            continue
        rd, *_ = forward(case, drop=drop)
        worst = {kk: max(float(np.abs(exp[n] - rd[n]).max()) for n in exp if n.split(".")[-1] == kk)
                 for kk in ["attn_prob", "logits"]}
        print(f"without {drop}:", {k: f"{v:.2g}" for k, v in worst.items()})
    # selection gaps and loads
    gaps, loads = [1.0], np.zeros(max(E_ := cfg.get("num_local_experts", 0), 1), int)
    for l in range(L if K else 0):
        pr = exp[f"layer{l}.router_probs"]
        srt = -np.sort(-pr, -1)
        gaps.append(float((srt[:, K - 1] - srt[:, K]).min()))
        for e in exp[f"layer{l}.expert_ids"].astype(int).ravel():
            loads[e] += 1
        assert np.array_equal(exp[f"layer{l}.expert_ids"], ref[f"layer{l}.expert_ids"].astype(np.float32))
    print("smallest selection gap", f"{min(gaps):.3g}", "loads", loads.tolist())
    rows = [exp[f"layer{l}.attn_prob"] for l in range(L)]
    print("row sums max |1 - s|", max(float(np.abs(r.sum(-1) - 1).max()) for r in rows))
    print("mean max prob rows 1..", [round(float(r[:, 1:, :].max(-1).mean()), 2) for r in rows])
    print("largest |hidden|", max(float(np.abs(exp[f'layer{l}.hidden']).max()) for l in range(L)),
          "|logits|", float(np.abs(exp["logits"]).max()))
    write_safetensors(os.path.join(case, "expected.safetensors"), exp,
                      {"source": "llama.cpp 3f545beccee69d9975f466ec7e45fd9aacd8ba90 CPU, own driver"})

main()
