#!/usr/bin/python3
"""Random-weight Granite-MoE reference case: config.json, model.safetensors, input.json (outside attnscope)."""
import json, struct, sys, os
import numpy as np

def write_atomically(path, data):
    """Writes bytes to path through a temporary file renamed over it once flushed."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def write_safetensors(path, tensors, meta=None):
    header = {}
    off = 0
    blobs = []
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        dt = {np.float32: "F32", np.int32: "I32", np.uint8: "U8"}[a.dtype.type]
        b = a.tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    if meta:
        header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    write_atomically(path, struct.pack("<Q", len(h)) + h + b"".join(blobs))

def main():
    # kind: 0 Granite-MoE, 1 Granite-MoE with a shared expert, 2 dense Granite
    out, seed, kind = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    shared, dense = kind == 1, kind == 2
    L, C, H, KV, I, E, K, V, T = 3, 48, 4, 2, 32, 8, 2, 288, 16
    d = C // H
    rng = np.random.default_rng(seed)
    cfg = {
        "architectures": ["GraniteForCausalLM" if dense else "GraniteMoeSharedForCausalLM" if shared else "GraniteMoeForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attention_multiplier": 0.2,
        "bos_token_id": V - 3,
        "embedding_multiplier": 6.0,
        "eos_token_id": V - 2,
        "hidden_act": "silu",
        "hidden_size": C,
        "initializer_range": 0.02,
        "intermediate_size": I,
        "logits_scaling": 4.0,
        "max_position_embeddings": 4096,
        "model_type": "granite" if dense else "granitemoeshared" if shared else "granitemoe",
        "num_attention_heads": H,
        "num_experts_per_tok": K,
        "num_hidden_layers": L,
        "num_key_value_heads": KV,
        "num_local_experts": E,
        "output_router_logits": False,
        "pad_token_id": V - 1,
        "residual_multiplier": 0.5,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "router_aux_loss_coef": 0.001,
        "tie_word_embeddings": True,
        "torch_dtype": "float32",
        "transformers_version": "4.56.0",
        "use_cache": True,
        "vocab_size": V,
    }
    S = 40
    if shared:
        cfg["shared_intermediate_size"] = S
    if dense:  # GraniteConfig: no experts; an MLP of width 64, biases keyed by mlp_bias
        for k in ("num_experts_per_tok", "num_local_experts", "output_router_logits", "router_aux_loss_coef"):
            del cfg[k]
        cfg["intermediate_size"] = I = 64
        cfg["mlp_bias"] = False
    def mat(o, i, gain):
        return (rng.standard_normal((o, i)) * gain / np.sqrt(i)).astype(np.float32)
    def norm():
        return (1 + 0.1 * rng.standard_normal(C)).astype(np.float32)
    w = {"model.embed_tokens.weight": rng.standard_normal((V, C)).astype(np.float32)}
    for l in range(L):
        p = f"model.layers.{l}."
        w[p + "input_layernorm.weight"] = norm()
        w[p + "self_attn.q_proj.weight"] = mat(H * d, C, 1.6)
        w[p + "self_attn.k_proj.weight"] = mat(KV * d, C, 1.6)
        w[p + "self_attn.v_proj.weight"] = mat(KV * d, C, 1.0)
        w[p + "self_attn.o_proj.weight"] = mat(C, H * d, 0.8)
        w[p + "post_attention_layernorm.weight"] = norm()
        if dense:
            w[p + "mlp.gate_proj.weight"] = mat(I, C, 1.0)
            w[p + "mlp.up_proj.weight"] = mat(I, C, 1.0)
            w[p + "mlp.down_proj.weight"] = mat(C, I, 0.8)
            continue
        w[p + "block_sparse_moe.router.layer.weight"] = mat(E, C, 2.0)
        w[p + "block_sparse_moe.input_linear.weight"] = np.stack([mat(2 * I, C, 1.0) for _ in range(E)])
        w[p + "block_sparse_moe.output_linear.weight"] = np.stack([mat(C, I, 0.8) for _ in range(E)])
        if shared:
            w[p + "shared_mlp.input_linear.weight"] = mat(2 * S, C, 1.0)
            w[p + "shared_mlp.output_linear.weight"] = mat(C, S, 0.8)
    w["model.norm.weight"] = norm()
    os.makedirs(out, exist_ok=True)
    write_atomically(os.path.join(out, "config.json"), (json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode())
    write_safetensors(os.path.join(out, "model.safetensors"), w, {"format": "pt"})
    trng = np.random.default_rng(seed + 10)
    ids = [int(x) for x in trng.integers(0, V - 3, T)]
    what = ("Granite multipliers (embedding 6, attention 0.2 instead of 1/sqrt(12), residual 0.5, logits / 4), "
            "GQA 4/2, tied read-out, " + ("a SwiGLU MLP of width 64" if dense else
            "MoE 8 experts top-2 weighted by a softmax over the chosen logits, fused expert "
            "input projection [E, 2I, C] (gate rows then up rows)" + (", shared expert of width 40" if shared else "")))
    write_atomically(os.path.join(out, "input.json"),
                     json.dumps({"token_ids": ids, "positions": list(range(T)), "batch": 1, "exercises": what}).encode())

if __name__ == "__main__":
    main()
