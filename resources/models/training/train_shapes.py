#!/usr/bin/env python3
"""Trains the built-in vision model shapes-vit: a small ViT that names the shape in a picture (disc, square, triangle,
cross) on pictures this script draws itself (no data set, no licence to carry), and writes it as a Hugging Face ViT
folder (ViTForImageClassification names, config.json, preprocessor_config.json) plus sample pictures.

    python3 train_shapes.py --minutes 12 --out ../shapes-vit

PyTorch is used here only; attnscope reads the folder with its own code.
"""
import argparse, json, math, os, struct, time, zlib

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPES = ["disc", "square", "triangle", "cross"]
SIZE, PATCH, HIDDEN, HEADS, LAYERS, FFN = 48, 6, 48, 4, 3, 96


def draw(rng, size, shape=None, supersample=2, box=None):
    """One RGB picture (uint8 [size, size, 3]) with one shape on a noisy gradient, and the shape's index; `box`, a
    list, receives the shape's bounding box (x0, y0, x1, y1) as fractions of the side."""
    s = size * supersample
    yy, xx = np.mgrid[0:s, 0:s].astype(np.float32) / s
    angle = rng.uniform(0, 2 * math.pi)
    base = rng.uniform(0.15, 0.55, 3)
    tilt = rng.uniform(-0.25, 0.25, 3)
    g = (math.cos(angle) * xx + math.sin(angle) * yy)[..., None]
    img = base + tilt * g
    k = SHAPES.index(shape) if shape else int(rng.integers(len(SHAPES)))
    r = rng.uniform(0.12, 0.24)
    cx, cy = rng.uniform(r + 0.04, 1 - r - 0.04, 2)
    if box is not None:
        box[:] = [float(cx - r), float(cy - r), float(cx + r), float(cy + r)]
    dx, dy = xx - cx, yy - cy
    if k == 0:
        mask = dx * dx + dy * dy <= r * r
    elif k == 1:
        mask = (np.abs(dx) <= r * 0.85) & (np.abs(dy) <= r * 0.85)
    elif k == 2:  # pointing up
        mask = (dy <= r * 0.8) & (dy >= -r) & (np.abs(dx) <= (dy + r) * 0.6)
    else:
        w = r * 0.3
        mask = ((np.abs(dx) <= r) & (np.abs(dy) <= w)) | ((np.abs(dy) <= r) & (np.abs(dx) <= w))
    colour = rng.uniform(0.55, 1.0, 3)
    colour[rng.integers(3)] *= rng.uniform(0.1, 0.5)  # a saturated colour, never grey
    img = np.where(mask[..., None], colour, img)
    img = img.reshape(size, supersample, size, supersample, 3).mean(axis=(1, 3))
    img = img + rng.normal(0, 0.03, img.shape)
    return (np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8), k


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(HIDDEN, eps=1e-12), nn.LayerNorm(HIDDEN, eps=1e-12)
        self.q, self.k, self.v, self.o = (nn.Linear(HIDDEN, HIDDEN) for _ in range(4))
        self.fc1, self.fc2 = nn.Linear(HIDDEN, FFN), nn.Linear(FFN, HIDDEN)

    def forward(self, x):
        b, n, _ = x.shape
        a = self.ln1(x)
        split = lambda t: t.view(b, n, HEADS, HIDDEN // HEADS).transpose(1, 2)
        q, k, v = split(self.q(a)), split(self.k(a)), split(self.v(a))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(HIDDEN // HEADS), dim=-1)
        x = x + self.o((p @ v).transpose(1, 2).reshape(b, n, HIDDEN))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x)))), p


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        g = SIZE // PATCH
        self.patch = nn.Conv2d(3, HIDDEN, PATCH, PATCH)
        self.cls = nn.Parameter(torch.randn(1, 1, HIDDEN) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, 1 + g * g, HIDDEN) * 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.head = nn.Linear(HIDDEN, len(SHAPES))

    def forward(self, px):
        x = self.patch(px).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        probs = []
        for blk in self.blocks:
            x, p = blk(x)
            probs.append(p)
        return self.head(self.ln(x)[:, 0]), probs


def pixels(batch_u8):
    return (torch.from_numpy(batch_u8).float().permute(0, 3, 1, 2) / 255.0 - 0.5) / 0.5


def hf_state(m):
    """The ViTForImageClassification names (vit. prefix, classifier)."""
    out = {"vit.embeddings.cls_token": m.cls, "vit.embeddings.position_embeddings": m.pos,
           "vit.embeddings.patch_embeddings.projection.weight": m.patch.weight,
           "vit.embeddings.patch_embeddings.projection.bias": m.patch.bias,
           "vit.layernorm.weight": m.ln.weight, "vit.layernorm.bias": m.ln.bias,
           "classifier.weight": m.head.weight, "classifier.bias": m.head.bias}
    for l, b in enumerate(m.blocks):
        p = f"vit.encoder.layer.{l}."
        for name, mod in [("layernorm_before", b.ln1), ("layernorm_after", b.ln2),
                          ("attention.attention.query", b.q), ("attention.attention.key", b.k),
                          ("attention.attention.value", b.v), ("attention.output.dense", b.o),
                          ("intermediate.dense", b.fc1), ("output.dense", b.fc2)]:
            out[p + name + ".weight"], out[p + name + ".bias"] = mod.weight, mod.bias
    return {k: v.detach().float().contiguous().numpy() for k, v in out.items()}


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name in sorted(tensors):
        data = tensors[name].astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensors[name].shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(path + ".tmp", path)


def write_png(path, rgb):
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def write_samples(out):
    """Sample pictures, drawn at four times the model's size (the processor shrinks them as it would a photo), and
    samples.json: each one's shape and bounding box (fractions of the side), what the drawing put there."""
    samples = np.random.default_rng(2026)
    listed = []
    for shape in SHAPES:
        box = []
        img, _ = draw(samples, SIZE * 4, shape, supersample=1, box=box)
        write_png(os.path.join(out, f"sample-{shape}.png"), img)
        listed.append({"file": f"sample-{shape}.png", "shape": shape, "box": box})
    with open(os.path.join(out, "samples.json"), "w") as f:
        json.dump(listed, f, indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=12)
    ap.add_argument("--out", default="../shapes-vit")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--samples-only", action="store_true", help="write the sample pictures and samples.json only")
    args = ap.parse_args()
    if args.samples_only:
        os.makedirs(args.out, exist_ok=True)
        write_samples(args.out)
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(7)
    rng = np.random.default_rng(7)
    model = ViT()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    start, step = time.time(), 0
    while time.time() - start < args.minutes * 60:
        imgs, labels = zip(*(draw(rng, SIZE) for _ in range(args.batch)))
        logits, _ = model(pixels(np.stack(imgs)))
        loss = F.cross_entropy(logits, torch.tensor(labels))
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 100 == 0:
            print(f"step {step} loss {loss.item():.3f} ({time.time() - start:.0f} s)", flush=True)
    model.eval()
    test = np.random.default_rng(12345)
    with torch.no_grad():
        imgs, labels = zip(*(draw(test, SIZE) for _ in range(1000)))
        acc = (model(pixels(np.stack(imgs)))[0].argmax(-1) == torch.tensor(labels)).float().mean().item()
    print(f"held-out accuracy {acc:.3f} after {step} steps")
    os.makedirs(args.out, exist_ok=True)
    write_safetensors(os.path.join(args.out, "model.safetensors"), hf_state(model))
    config = {"architectures": ["ViTForImageClassification"], "model_type": "vit", "hidden_size": HIDDEN,
              "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "intermediate_size": FFN,
              "hidden_act": "gelu", "layer_norm_eps": 1e-12, "image_size": SIZE, "patch_size": PATCH,
              "num_channels": 3, "qkv_bias": True, "id2label": {str(i): s for i, s in enumerate(SHAPES)},
              "label2id": {s: i for i, s in enumerate(SHAPES)}}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    pre = {"image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": SIZE, "width": SIZE},
           "resample": 2, "do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
           "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}
    with open(os.path.join(args.out, "preprocessor_config.json"), "w") as f:
        json.dump(pre, f, indent=1)
    write_samples(args.out)
    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump({"steps": step, "minutes": args.minutes, "threads": args.threads, "batch": args.batch,
                   "held_out_accuracy": acc}, f, indent=1)


if __name__ == "__main__":
    main()
