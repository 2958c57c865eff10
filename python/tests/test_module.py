"""The Python module against the C++ path and the reference data (run by `make test` through ctest).

Every reference case: `attnscope.load(folder)`, `m.run(ids=...)` (an encoder-decoder model's source with
`target_ids=...`, a vision model's `image=...`) and `cap.attention(layer)` (layer from 1) equal what `attnscope-cli
dump` writes for the same input bit for bit, and the reference implementation's probabilities within the data's
tolerance. A case of a kind the core does not open is skipped, not failed.
"""

import gc
import json
import os
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

import attnscope

SOURCE = Path(os.environ.get("ATTNSCOPE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
TESTDATA = Path(os.environ.get("ATTNSCOPE_TESTDATA", SOURCE.parent / "shared" / "testdata"))
CLI = os.environ.get("ATTNSCOPE_CLI", str(SOURCE / "build" / "app" / "cli" / "attnscope-cli"))


def read_safetensors(path):
    """Every tensor of a safetensors file as float32 numpy arrays (F32, F16, BF16 and I64 stored)."""
    raw = Path(path).read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        data = raw[8 + n + a:8 + n + b]
        if t["dtype"] == "F32":
            arr = np.frombuffer(data, dtype="<f4")
        elif t["dtype"] == "F16":
            arr = np.frombuffer(data, dtype="<f2").astype(np.float32)
        elif t["dtype"] == "BF16":
            arr = (np.frombuffer(data, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] == "I64":  # ids and row indices, as the numbers they are
            arr = np.frombuffer(data, dtype="<i8").astype(np.float32)
        else:
            continue
        out[name] = arr.reshape(t["shape"])
    return out


def opens(folder):
    """Whether the core opens the case's model: cases of kinds it does not run yet are left out, not failed."""
    try:
        attnscope.load(folder)
        return True
    except attnscope.Error as e:
        if "is not supported" in str(e):
            return False
        raise


def one_stream_cases():
    """(folder, input) of the cases whose input.json is token ids of one stream."""
    cases = []
    for d in sorted(TESTDATA.iterdir()) if TESTDATA.is_dir() else []:
        if not (d / "input.json").is_file() or not (d / "expected.safetensors").is_file():
            continue
        spec = json.loads((d / "input.json").read_text())
        if "decoder_input_ids" in spec or "image" in spec or "pixel_values" in spec:
            continue  # encoder-decoder pairs and pictures: not through run(ids=...) yet
        if (d / "pixel_values.safetensors").is_file() or not opens(d):
            continue  # a vision-language case (a picture and a prompt), or a family the core does not open yet
        if "token_ids" not in spec and "input_ids" not in spec and "segments" not in spec:
            continue
        cases.append(pytest.param(d, spec, id=d.name))
    return cases


def dump(folder):
    """What the C++ path (attnscope-cli dump) computes for the case's input."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "dump.safetensors"
        subprocess.run([CLI, "dump", "--model", str(folder), "--input", str(folder / "input.json"), "--out", str(out)],
                       check=True, capture_output=True)
        return read_safetensors(out)


def test_import_says_how_to_use_it():
    assert "attention" in attnscope.Capture.attention.__doc__
    assert "from 1" in attnscope.Capture.attention.__doc__
    assert attnscope.load.__doc__


@pytest.mark.parametrize("folder,spec", one_stream_cases())
def test_attention_equals_the_cpp_path_and_the_reference(folder, spec):
    try:
        m = attnscope.load(folder)
    except attnscope.Error as e:
        if "unknown model type" in str(e).lower() or "not supported" in str(e).lower():
            pytest.skip(f"{folder.name}: a kind the core does not open ({e})")
        raise
    cpp = dump(folder)
    expected = read_safetensors(folder / "expected.safetensors")
    layers = m.info["layers"]
    cap, segments = run_case(m, spec)
    if m.info["family"] == "Transformer-XL" or "segments" in spec:
        ids = [t for s in case_segments(spec) for t in s]
        names = [(s + 1, f"seg{s}.layer{{}}.attn_prob") for s in range(segments)]
    else:
        ids = spec.get("token_ids", spec.get("input_ids"))
        names = [(None, "layer{}.attn_prob")]
    assert cap.ids == list(ids)
    for segment, pattern in names:
        for layer in range(1, layers + 1):
            a = cap.attention(layer, segment=segment)
            name = pattern.format(layer - 1)
            if cap.sites[layer - 1]["mixer"] != "attention":  # a hybrid's convolution or scan: its implicit map
                name = name.replace("attn_prob", "implicit_attn")
            assert a.dtype == np.float32
            assert a.shape == cpp[name].shape
            if m.info["family"] == "Transformer-XL":
                # The dump keeps the four score terms apart (a + b + c + d summed after), the run the score whole:
                # the same numbers to the last few bits (1.01e-6 in the sanitizer build's code).
                assert np.allclose(a, cpp[name], atol=2e-6, rtol=0), f"{name}: max |diff| {np.abs(a - cpp[name]).max()}"
            else:
                assert np.array_equal(a, cpp[name]), f"{name}: max |diff| {np.abs(a - cpp[name]).max()}"
            if name in expected:
                assert np.allclose(a, expected[name].reshape(a.shape), atol=1e-4, rtol=1e-3), name
            one = cap.attention(layer, head=cap.sites[layer - 1]["heads"], segment=segment)  # the site's last head
            assert np.array_equal(one[0], a[-1])


def test_errors_arrive_as_exceptions_naming_the_problem(tmp_path):
    with pytest.raises(attnscope.Error, match="no-such-folder"):
        attnscope.load(tmp_path / "no-such-folder")
    (tmp_path / "config.json").write_text("{ not json")
    with pytest.raises(attnscope.Error, match="config.json"):
        attnscope.load(tmp_path)
    m = attnscope.load(TESTDATA / "gpt2-tiny")
    cap = m.run(ids=[1, 2, 3])
    with pytest.raises(attnscope.Error, match="layers are 1"):
        cap.attention(0)
    with pytest.raises(attnscope.Error, match="heads are 1"):
        cap.attention(1, head=99)
    with pytest.raises(attnscope.Error, match="one of them"):
        m.run("text", ids=[1])
    with pytest.raises(attnscope.Error):
        m.run(ids=[10 ** 6])


def test_arrays_are_read_only_and_outlive_their_model():
    m = attnscope.load(TESTDATA / "gpt2-tiny")
    a = m.run(ids=[5, 6, 7, 8]).attention(2)
    with pytest.raises(ValueError):
        a[0, 0, 0] = 1.0
    del m
    gc.collect()
    assert np.allclose(a.sum(axis=-1), 1.0, atol=1e-5)


def test_a_text_through_the_tokenizer():
    m = attnscope.load("builtin:llama-wikitext2")
    cap = m.run("the war ended in 1945")
    assert cap.tokens[:3] == ["the", "war", "ended"]
    a = cap.attention(1)
    assert a.shape == (m.info["heads"], len(cap.tokens), len(cap.tokens))
    assert np.allclose(np.triu(a[0], 1), 0)  # causal


def test_patching_equals_the_cli(tmp_path):
    folder = TESTDATA / "llama-gqa"
    clean = [14, 67, 46, 14, 0, 12, 25, 38, 73, 70]
    corrupt = [14, 67, 46, 14, 0, 12, 25, 38, 9, 70]
    r = attnscope.load(folder).patch(clean, corrupt, 5, 6, component="k")
    out = tmp_path / "patch.json"
    subprocess.run([CLI, "patch", "--model", str(folder), "--clean-ids", " ".join(map(str, clean)), "--corrupt-ids",
                    " ".join(map(str, corrupt)), "--answer", "5", "--wrong", "6", "--component", "k", "--out", str(out)],
                   check=True, capture_output=True)
    cli = json.loads(out.read_text())
    assert r["axes"] == cli["axes"] == ["layer", "group"]
    assert np.allclose(r["scores"], np.array(cli["scores"], dtype=np.float32))


@pytest.mark.parametrize("freeze", [False, True])
def test_path_patching_equals_the_cli_both_definitions(tmp_path, freeze):
    folder = TESTDATA / "llama-gqa"
    clean = [14, 67, 46, 14, 0, 12, 25, 38, 73, 70]
    corrupt = [14, 67, 46, 14, 0, 12, 25, 38, 9, 70]
    r = attnscope.load(folder).path_patch(clean, corrupt, 5, 6, sender=(1, 8), receivers=[(2, 1), (3, 2)],
                                          input="v", freeze_mlps=freeze)
    out = tmp_path / "path.json"
    subprocess.run([CLI, "path-patch", "--model", str(folder), "--clean-ids", " ".join(map(str, clean)),
                    "--corrupt-ids", " ".join(map(str, corrupt)), "--answer", "5", "--wrong", "6", "--sender", "1.8",
                    "--receivers", "2.1,3.2", "--input", "v", "--out", str(out)] + (["--freeze-mlps"] if freeze else []),
                   check=True, capture_output=True)
    cli = json.loads(out.read_text())
    assert r["score"] == pytest.approx(cli["score"], rel=1e-6, abs=1e-9)
    assert r["m_patched"] == pytest.approx(cli["m_patched"], rel=1e-6, abs=1e-9)
    with pytest.raises(attnscope.Error, match="must come after the sender"):
        attnscope.load(folder).path_patch(clean, corrupt, 5, 6, sender=(2, 1), receivers=[(1, 1)])


def test_path_patching_map_holds_each_senders_own_score():
    folder = TESTDATA / "llama-gqa"
    clean = [14, 67, 46, 14, 0, 12, 25, 38, 73, 70]
    corrupt = [14, 67, 46, 14, 0, 12, 25, 38, 9, 70]
    m = attnscope.load(folder)
    whole = m.path_patch(clean, corrupt, 5, 6, sender="all", receivers=[(3, 2)], input="q", freeze_mlps=True)
    assert whole["axes"] == ["layer", "head"]
    scores = whole["scores"]
    layers, heads = scores.shape
    assert layers >= 3
    assert np.isnan(scores[2:]).all()  # no sender at or after the receiver's layer
    for layer in (1, 2):
        for head in (1, heads):
            one = m.path_patch(clean, corrupt, 5, 6, sender=(layer, head), receivers=[(3, 2)], input="q",
                               freeze_mlps=True)
            assert scores[layer - 1, head - 1] == pytest.approx(one["score"], rel=1e-5, abs=1e-7)
    named = m.path_patch(clean, corrupt, 5, 6, sender=[(2, 1)], receivers=[(3, 2)], input="q", freeze_mlps=True)
    assert np.isfinite(named["scores"]).sum() == 1
    assert named["scores"][1, 0] == pytest.approx(scores[1, 0], rel=1e-6, abs=1e-9)
    with pytest.raises(attnscope.Error, match="'all'"):
        m.path_patch(clean, corrupt, 5, 6, sender="every", receivers=[(3, 2)])


def test_the_page_is_self_contained_and_shows_in_jupyter():
    cap = attnscope.load("builtin:llama-wikitext2").run("the war ended in 1945")
    page = cap.html(layers=[2], heads=[1, 3])
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page
    assert '"layers":[2]' in page and '"heads":[1,3]' in page
    frame = cap._repr_html_()
    assert frame.startswith("<iframe") and "srcdoc=" in frame
    with pytest.raises(attnscope.Error, match="layers are 1"):
        cap.html(layers=[99])


def single_segment_cases():
    """One-stream cases that run as one segment with their logits in the reference (not Transformer-XL's memory)."""
    out = []
    for p in one_stream_cases():
        folder, spec = p.values
        names = read_safetensors(folder / "expected.safetensors").keys()
        if "segments" in spec or "mem_len" in spec or "logits" not in names:
            continue
        if "attention_mask" in spec and 0 in spec["attention_mask"]:
            continue
        if "token_type_ids" in spec and any(spec["token_type_ids"]):
            continue
        out.append(p)
    return out


@pytest.mark.parametrize("folder,spec", single_segment_cases())
def test_hidden_states_logits_and_lens_equal_the_reference(folder, spec):
    try:
        m = attnscope.load(folder)
    except attnscope.Error as e:
        pytest.skip(f"{folder.name}: {e}")
    expected = read_safetensors(folder / "expected.safetensors")
    cpp = dump(folder)
    ids = spec.get("token_ids", spec.get("input_ids"))
    cap = m.run(ids=ids)
    logits = cap.logits()
    assert logits.shape == (len(ids), m.info["vocab_size"])
    # The reference's logits within the tolerance the C++ tests use for them.
    assert np.allclose(logits, expected["logits"].reshape(logits.shape), atol=1e-3, rtol=1e-3), \
        f"max |diff| {np.abs(logits - expected['logits'].reshape(logits.shape)).max()}"
    hidden = cap.hidden_states()
    assert hidden.shape == (m.info["layers"] + 1, len(ids), m.info["d_model"])
    if "embedding" in cpp:
        assert np.allclose(hidden[0], cpp["embedding"].reshape(hidden[0].shape), atol=1e-6)
    for layer in range(m.info["layers"]):
        name = f"layer{layer}.hidden"
        if name in cpp and cpp[name].size == hidden[layer + 1].size:
            assert np.allclose(hidden[layer + 1], cpp[name].reshape(hidden[layer + 1].shape), atol=1e-5), name
    # The lens's last layer is the model's own read-out: its top token is the reference logits' argmax.
    lens = cap.logit_lens(k=1)
    assert lens["probability"].shape == (m.info["layers"], len(ids))
    top_last = [cell[0][0] for cell in lens["top"][-1]]
    reference = expected["logits"].reshape(logits.shape)
    agree = np.mean(np.array(top_last) == reference.argmax(axis=1))
    assert agree >= 0.9, f"last-layer lens agrees with the reference argmax at {agree:.0%} of positions"


def test_predict_and_generate_equal_the_cli():
    spec = "builtin:llama-wikitext2"
    m = attnscope.load(spec)
    text = "the war ended in"
    top = m.predict(text, k=5)
    cli = json.loads(subprocess.run([CLI, "predict", "--model", spec, "--text", text, "--top", "5"], check=True,
                                    capture_output=True, text=True).stdout)
    assert [t["id"] for t in top] == [t["id"] for t in cli]
    assert np.allclose([t["probability"] for t in top], [t["p"] for t in cli])
    assert all(a["probability"] >= b["probability"] for a, b in zip(top, top[1:]))
    g = m.generate(text, 6)
    cli = json.loads(subprocess.run([CLI, "generate", "--model", spec, "--text", text, "--max-new-tokens", "6"],
                                    check=True, capture_output=True, text=True).stdout)
    assert g["ids"] == cli["ids"]
    assert np.allclose(g["probabilities"], cli["p"])
    sampled = [m.generate(text, 6, temperature=0.8, seed=3)["ids"] for _ in range(2)]
    assert sampled[0] == sampled[1]  # repeatable for a seed
    assert "probability" in attnscope.Model.predict.__doc__ and "seed" in attnscope.Model.generate.__doc__


def test_a_session_for_the_app_names_the_model_text_layer_and_head(tmp_path):
    m = attnscope.load(TESTDATA / "gpt2-tiny")
    cap = m.run(ids=[5, 6, 7])
    path = cap.save_session(str(tmp_path / "s"), layer=2, head=3)
    assert path.endswith(".attnscope")
    s = json.loads(Path(path).read_text())
    assert s["format"] == "attnscope-session/1"
    assert Path(s["model"]).is_absolute() and Path(s["model"]).resolve() == (TESTDATA / "gpt2-tiny").resolve()
    assert s["selection"] == {"layer": 1, "heads": [2]}  # the app counts from 0
    assert s["text"]
    cap = attnscope.load("builtin:llama-wikitext2").run("the war ended in 1945")
    s = json.loads(Path(cap.save_session(str(tmp_path / "t.attnscope"))).read_text())
    assert s["model"] == "builtin:llama-wikitext2" and s["text"] == "the war ended in 1945"
    with pytest.raises(attnscope.Error, match="heads are 1"):
        cap.save_session(str(tmp_path / "u"), layer=1, head=99)
    assert "layer" in attnscope.show.__doc__


def test_the_atlas_equals_the_cli_heads_table(tmp_path):
    spec = "builtin:llama-wikitext2"
    text = "the war ended in 1945 . the war ended in 1945 and the army went home ."
    atlas = attnscope.load(spec).run(text).atlas()
    (tmp_path / "t.txt").write_text(text)
    rows = json.loads(subprocess.run([CLI, "heads", "--model", spec, "--text-file", str(tmp_path / "t.txt"), "--format",
                                      "json"], check=True, capture_output=True, text=True).stdout)
    rows = rows["heads"] if isinstance(rows, dict) else rows
    assert len(rows) == atlas["induction"].size
    for row in rows:
        l, h = row["layer"] - 1, row["head"] - 1
        for key in ("induction", "duplicate_token"):
            if row.get(key) is None:
                assert np.isnan(atlas[key][l, h])
            else:
                assert abs(atlas[key][l, h] - row[key]) < 1e-4, (key, row)


def case_segments(spec):
    """A Transformer-XL case's segments, as input.json gives them or cut from its ids."""
    segs = spec.get("segments")
    if segs is None:
        length = spec.get("segment_length") or spec.get("tgt_len")
        ids = spec["token_ids"]
        segs = [ids[i:i + length] for i in range(0, len(ids), length)]
    return segs


def run_case(m, spec):
    """A reference case's input through run(): its segments with their settings (Transformer-XL), or its ids with an
    encoder's token types and padding. Returns the capture and the number of segments."""
    if "segments" in spec or m.info["family"] == "Transformer-XL":
        segs = case_segments(spec)
        clamp = spec.get("clamp_len")
        return m.run(ids=[t for s in segs for t in s], segment_length=len(segs[0]), mem_len=spec.get("mem_len"),
                     same_length=spec.get("same_length"), clamp_len=None if clamp in (None, -1) else clamp), len(segs)
    return m.run(ids=spec.get("token_ids", spec.get("input_ids")), token_type_ids=spec.get("token_type_ids"),
                 attention_mask=spec.get("attention_mask")), 1


def term_cases():
    """Cases whose reference names score terms or rotated vectors: Transformer-XL, DeepSeek, rotary decoders."""
    out = []
    for p in one_stream_cases():
        folder, spec = p.values
        names = read_safetensors(folder / "expected.safetensors").keys()
        if any(n.endswith(("term_a", "score_rope", "q_rot")) for n in names) and not spec.get("same_length"):
            if "attention_mask" in spec and 0 in spec["attention_mask"]:
                continue
            out.append(p)
    return out


@pytest.mark.parametrize("folder,spec", term_cases())
def test_terms_and_vectors_are_the_references(folder, spec):
    """terms(): each term equals the reference implementation's (Transformer-XL's a-d, DeepSeek's rope/nope) and the
    terms add up to the raw score; queries_keys(): the reference's rotated q and k; q.k/sqrt(d) the raw score."""
    m = attnscope.load(folder)
    expected = read_safetensors(folder / "expected.safetensors")
    cap, segments = run_case(m, spec)
    heads, kv = m.info["heads"], m.info["kv_heads"] or m.info["heads"]
    reference_terms = {"a": "term_a", "b": "term_b", "c": "term_c", "d": "term_d", "rotary": "score_rope",
                       "content": "score_nope"}
    compared = 0
    for s in range(1, segments + 1):
        prefix = f"seg{s - 1}." if m.info["family"] == "Transformer-XL" else ""
        seg = s if segments > 1 else None
        for layer in range(1, m.info["layers"] + 1):
            for head in {1, heads}:
                terms = cap.terms(layer, head, segment=seg)
                raw = cap.attention(layer, head, segment=seg, raw=True)[0]
                visible = ~np.isnan(raw)
                total = sum(terms.values())
                if not m.info.get("soft_cap"):
                    assert np.allclose(total[visible], raw[visible], atol=2e-5), f"layer {layer} head {head}"
                for name, t in terms.items():
                    ref = expected.get(f"{prefix}layer{layer - 1}.{reference_terms.get(name, '-')}")
                    if ref is not None:
                        assert np.allclose(t[visible], ref[head - 1][visible], atol=1e-4, rtol=1e-3), (name, layer, head)
                        compared += 1
                q_ref = expected.get(f"layer{layer - 1}.q_rot")
                if q_ref is not None:
                    v = cap.queries_keys(layer, head)
                    group = (head - 1) // (heads // kv)
                    assert np.allclose(v["queries"], q_ref[head - 1], atol=1e-4, rtol=1e-3)
                    assert np.allclose(v["keys"], expected[f"layer{layer - 1}.k_rot"][group], atol=1e-4, rtol=1e-3)
                    scores = v["queries"] @ v["keys"].T / np.sqrt(v["queries"].shape[1])
                    if not m.info.get("soft_cap"):
                        assert np.allclose(scores[visible], raw[visible], atol=1e-5)
                    compared += 1
    assert compared > 0


@pytest.mark.parametrize("folder,spec", single_segment_cases())
def test_explain_is_the_row_and_its_values_give_the_output(folder, spec):
    m = attnscope.load(folder)
    cap, _ = run_case(m, spec)
    n = len(cap.ids)
    # The first and last attention layers: a hybrid's convolutions and scans have no softmax row to explain.
    attention = [s["layer"] for s in cap.sites if s["mixer"] == "attention"]
    if attention[0] > 1:
        with pytest.raises(attnscope.Error, match="not attention"):
            cap.explain(1, 1, n)
    for layer, head, position in ((attention[0], 1, n), (attention[-1], m.info["heads"], max(1, n // 2))):
        e = cap.explain(layer, head, position)
        row = cap.attention(layer, head)[0][position - 1]
        assert np.allclose(e["probs"], row, atol=1e-6)
        masked = np.isnan(e["scores"])
        assert np.all(e["probs"][masked] == 0)
        z = np.exp(e["scores"][~masked].astype(np.float64) - np.nanmax(e["scores"]))
        if e["sink"] is not None:
            z = np.append(z, np.exp(e["sink"] - np.nanmax(e["scores"])))
        assert np.allclose(e["probs"][~masked], (z / z.sum())[:(~masked).sum()], atol=2e-6)
        assert e["keys"].shape == (len(e["scores"]), len(e["query"]))
        if e["values"] is not None:
            assert np.allclose(e["probs"] @ e["values"], e["output"], atol=1e-5)
    with pytest.raises(attnscope.Error, match="tokens are 1"):
        cap.explain(attention[0], 1, n + 1)


def test_rollout_is_the_product_of_the_layers_averaged_heads():
    """Abnar and Zuidema's rollout recomputed here from the attention arrays (figures.md's rule)."""
    m = attnscope.load("builtin:llama-wikitext2")
    cap = m.run("the war ended in 1945 and the city was rebuilt by its people")
    n = len(cap.ids)
    r = np.eye(n)
    for layer in range(1, m.info["layers"] + 1):
        a = 0.5 * cap.attention(layer).astype(np.float64).mean(axis=0) + 0.5 * np.eye(n)
        a /= a.sum(axis=1, keepdims=True)
        r = a @ r
    got = cap.rollout()
    visible = ~np.isnan(got)
    assert np.allclose(got[visible], r[visible], atol=1e-5)
    assert np.allclose(r[~visible], 0)


def test_ablation_measures_the_logits_own_loss():
    m = attnscope.load("builtin:llama-wikitext2")
    cap = m.run("the war ended in 1945 and the city was rebuilt by its people")
    ab = cap.ablation()
    logits = cap.logits().astype(np.float64)
    ids = np.array(cap.ids)
    logp = logits - logits.max(axis=1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
    loss = -logp[np.arange(len(ids) - 1), ids[1:]].mean()
    assert abs(ab["base_loss"] - loss) < 1e-4
    assert ab["loss"].shape == (m.info["layers"], m.info["heads"])
    assert np.allclose(ab["change"], ab["loss"] - ab["base_loss"], atol=1e-5)
    assert np.all(np.isfinite(ab["loss"])) and np.any(np.abs(ab["change"]) > 1e-4)
    assert ab["predictions"] == len(ids) - 1


def test_qk_embedding_is_the_pca_of_the_normalised_vectors():
    """AttentionViz's normalisation and PCA done again in numpy: the picture's axes are the same up to sign."""
    cap = attnscope.load("builtin:llama-wikitext2").run("the war ended in 1945 and the city was rebuilt by its people")
    v = cap.queries_keys(2, 3)
    q, k = v["queries"].astype(np.float64), v["keys"].astype(np.float64)
    k = k - k.mean(axis=0) + q.mean(axis=0)
    a = np.sqrt(np.linalg.norm(q, axis=1).mean() / np.linalg.norm(k, axis=1).mean())
    x = np.vstack([q / a, k * a])
    x -= x.mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    e = cap.qk_embedding(2, 3)
    assert e["x"].shape == (len(q) + len(k),) and e["queries"] == len(q)
    for got, axis in ((e["x"], vt[0]), (e["y"], vt[1])):
        assert abs(np.corrcoef(got, x @ axis)[0, 1]) > 0.9999
    assert -1 <= e["correlation"] <= 1
    assert cap.qk_embedding(2, 3, method="tsne", seed=4)["x"].shape == e["x"].shape
    with pytest.raises(attnscope.Error, match="pca, tsne or umap"):
        cap.qk_embedding(2, 3, method="mds")


def test_scans_equal_the_cli_and_shards_merge_to_the_whole(tmp_path):
    spec = "builtin:llama-wikitext2"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"line {i} : the war ended in {1900 + i} and the city was rebuilt .\n" for i in range(60)))
    m = attnscope.load(spec)
    whole = m.scan(text_file=str(corpus), segment_length=32, terms="1,2")
    cli = tmp_path / "cli.safetensors"
    subprocess.run([CLI, "scan", "--model", spec, "--text-file", str(corpus), "--segment-length", "32", "--terms", "1,2",
                    "--out", str(cli)], check=True, capture_output=True)
    ref = attnscope.load_scan(str(cli))
    assert whole.profiles == ref.profiles == ["full", "band_1", "band_2"]
    assert whole.tokens == ref.tokens > 0
    for name in whole.profiles:
        assert np.array_equal(whole.profile(name), ref.profile(name))
    assert whole.profile().shape == (m.info["layers"], m.info["heads"], 32)
    # Each query's attention sums to one over the distances it sees: count-weighted profiles sum to the queries.
    assert np.allclose((whole.profile() * whole.count()).sum(axis=2), whole.tokens, rtol=1e-4)
    parts = []
    for i in (1, 2):
        part = m.scan(text_file=str(corpus), segment_length=32, terms="1,2", shard=(i, 2))
        parts.append(str(tmp_path / f"part{i}.safetensors"))
        part.save(parts[-1])
    merged = attnscope.merge_scans(parts)
    assert merged.tokens == whole.tokens
    for name in whole.profiles:
        assert np.allclose(merged.profile(name), whole.profile(name), atol=1e-6)
    heads = whole.heads()
    assert heads["entropy"].shape == (m.info["layers"], m.info["heads"])
    with pytest.raises(attnscope.Error, match="one of them"):
        m.scan()
    with pytest.raises(attnscope.Error, match="segment length"):
        m.scan(text="a b c", segment_length=0)
    with pytest.raises(attnscope.Error, match="shard"):
        attnscope.merge_scans([parts[0]])


@pytest.mark.parametrize("case", ["gpt2-tiny", "llama-gqa", "gptoss-tiny"])
def test_the_cli_attention_file_is_the_module_array(case, tmp_path):
    """`attnscope-cli attention` writes what Capture.attention returns, as a file numpy.load reads."""
    folder = TESTDATA / case
    spec = json.loads((folder / "input.json").read_text())
    ids = spec.get("token_ids", spec.get("input_ids"))
    cap = attnscope.load(folder).run(ids=ids)
    expected = read_safetensors(folder / "expected.safetensors")
    for layer, head, raw in ((1, None, False), (2, 3, False), (2, None, True)):
        out = tmp_path / f"{layer}-{head}-{raw}.npy"
        args = [CLI, "attention", "--model", str(folder), "--ids", ",".join(map(str, ids)), "--layer", str(layer),
                "--out", str(out)] + (["--head", str(head)] if head else []) + (["--raw"] if raw else [])
        subprocess.run(args, check=True, capture_output=True)
        got = np.load(out)
        assert got.dtype == np.float32
        want = cap.attention(layer, head=head, raw=raw)
        assert np.array_equal(got, want, equal_nan=True)
        if not raw and head is None:
            assert np.allclose(got, expected[f"layer{layer - 1}.attn_prob"], atol=1e-4, rtol=1e-3)
    bad = subprocess.run([CLI, "attention", "--model", str(folder), "--ids", "1,x", "--layer", "1", "--out",
                          str(tmp_path / "x.npy")], capture_output=True, text=True)
    assert bad.returncode == 1 and '"x" is not a token id' in bad.stderr


def cases_with(key, without=None):
    """Reference cases whose input.json has `key` (decoder_input_ids: encoder-decoder; image: vision; audio: speech)
    and not `without`."""
    out = []
    for d in sorted(TESTDATA.iterdir()) if TESTDATA.is_dir() else []:
        if (d / "input.json").is_file() and (d / "expected.safetensors").is_file():
            spec = json.loads((d / "input.json").read_text())
            # A vision-language case names its picture as {"file": ...} beside a prompt: picture_prompt_cases.
            if key in spec and without not in spec and not isinstance(spec[key], dict) and opens(d):
                out.append(pytest.param(d, spec, id=d.name))
    return out


def picture_prompt_cases():
    """Reference cases of a vision-language model: a picture and a prompt (input_ids with one placeholder)."""
    out = []
    for d in sorted(TESTDATA.iterdir()) if TESTDATA.is_dir() else []:
        if (d / "input.json").is_file() and (d / "expected.safetensors").is_file():
            spec = json.loads((d / "input.json").read_text())
            one_picture = isinstance(spec.get("image"), dict) or len(spec.get("images", [])) == 1
            if one_picture and "input_ids" in spec and opens(d) and "picture_token" in attnscope.load(d).info:
                out.append(pytest.param(d, spec, id=d.name))
    return out


@pytest.mark.parametrize("folder,spec", picture_prompt_cases())
def test_a_picture_prompt_runs_every_decoder_layer(folder, spec):
    m = attnscope.load(folder)
    image = spec["image"] if "image" in spec else spec["images"][0]
    picture = str(folder / image["file"])
    # LLaVA's <image> is expanded here; Gemma 3's processor frames the picture with text: its expanded ids are given.
    ids = spec["input_ids"] if "image" in spec else spec["input_ids_expanded"]
    cap = m.run(ids=ids, images=[picture])
    expected = read_safetensors(folder / "expected.safetensors")
    assert cap.ids == spec["input_ids_expanded"]  # the placeholder expanded to the picture's tokens, in place
    assert sum(t.startswith("\u25a3") for t in cap.tokens) == m.info["picture_tokens"]  # the picture's cells
    first = spec["image_tokens"]["first_position"] if "image_tokens" in spec else image["first_position"]
    assert cap.tokens[first] == "\u25a3r1c1"
    for layer in range(1, m.info["layers"] + 1):
        name = f"layer{layer - 1}.attn_prob"
        # End to end from the PNG: 3 x the README's 1e-5 (test_vision_language.cpp says why).
        assert np.allclose(cap.attention(layer), expected[name], atol=3e-5), name
    same = m.run(ids=ids, image=picture)
    assert np.array_equal(same.attention(1), cap.attention(1))
    with pytest.raises(attnscope.Error, match="no picture"):
        m.run(ids=spec["input_ids_expanded"])
    with pytest.raises(attnscope.Error, match="one picture"):
        m.run(ids=ids, images=[picture, picture])


@pytest.mark.parametrize("folder,spec", cases_with("audio"))
def test_a_recording_runs_every_site_of_a_speech_model(folder, spec):
    m = attnscope.load(folder)
    t = m.run(ids=spec["decoder_input_ids"], audio=str(folder / spec["audio"]))
    assert t.ids == spec["decoder_input_ids"]
    expected = read_safetensors(folder / "expected.safetensors")
    for layer in range(1, 3):
        for site, name in (("decoder", "self_attn_prob"), ("cross", "cross_attn_prob")):
            a = t.attention(layer, site=site)
            # End to end from the recording: the README's tolerance held (test_whisper.cpp).
            assert np.allclose(a, expected[f"decoder.layer{layer - 1}.{name}"], atol=1e-5), (site, layer)
    rows = read_safetensors(folder / "expected_encoder.safetensors")
    encoder = t.attention(1, site="encoder")
    assert encoder.shape[1:] == (1500, 1500)
    picked = encoder[:, rows["encoder.attn_rows"].astype(int), :]
    assert np.allclose(picked, rows["encoder.layer0.attn_prob_rows"], atol=1e-5)
    text = m.run(ids=spec["text_tokens"], audio=str(folder / spec["audio"]))  # after the prompt
    assert text.ids == spec["prompt_ids"] + spec["text_tokens"]
    written = m.run(audio=str(folder / spec["audio"]), max_new_tokens=3)  # the model's own transcription
    assert written.ids[:4] == spec["prompt_ids"] and len(written.ids) == 7
    with pytest.raises(attnscope.Error, match="listens"):
        m.run(ids=spec["decoder_input_ids"])


@pytest.mark.parametrize("folder,spec", cases_with("decoder_input_ids", without="audio"))
def test_every_site_of_an_encoder_decoder_model(folder, spec):
    m = attnscope.load(folder)
    t = m.run(ids=spec["input_ids"], target_ids=spec["decoder_input_ids"])
    assert isinstance(t, attnscope.Capture)  # one capture for every model: the target, its source a stream of it
    assert t.source_ids == spec["input_ids"] and t.ids == spec["decoder_input_ids"] and t.written == 0
    cpp, expected = dump(folder), read_safetensors(folder / "expected.safetensors")
    layers = {s: max(x["layer"] for x in t.sites if x["name"] == s) for s in ("encoder", "decoder", "cross")}
    names = {"encoder": "encoder.layer{}.attn_prob", "decoder": "decoder.layer{}.self_attn_prob",
             "cross": "decoder.layer{}.cross_attn_prob"}
    for site, pattern in names.items():
        for layer in range(1, layers[site] + 1):
            a, name = t.attention(layer, site=site), pattern.format(layer - 1)
            assert np.array_equal(a, cpp[name]), name
            assert np.allclose(a, expected[name], atol=1e-4, rtol=1e-3), name
            assert np.array_equal(t.attention(layer, head=2, site=site)[0], a[1])
    assert t.attention(1).shape[1] == len(spec["input_ids"])  # the default site: the source's own attention
    assert np.allclose(t.logits(), expected["logits"].reshape(t.logits().shape), atol=1e-3, rtol=1e-3)
    generation = folder / "generation.json"
    if generation.is_file():  # greedy, as the reference's generate() wrote it
        g = json.loads(generation.read_text())
        ids = m.run(ids=spec["input_ids"], max_new_tokens=g["max_new_tokens"]).ids
        assert ids == g["sequences"][:len(ids)] and len(ids) >= 2
    with pytest.raises(attnscope.Error, match="encoder.*decoder.*cross"):
        t.attention(1, site="self")
    with pytest.raises(attnscope.Error, match="layers are 1"):
        t.attention(99, site="cross")


@pytest.mark.parametrize("folder,spec", cases_with("image"))
def test_pictures_from_a_file_and_from_pixel_values(folder, spec):
    m = attnscope.load(folder)
    cap = m.run(image=str(folder / spec["image"]))
    pixels = next(iter(read_safetensors(folder / "pixel_values.safetensors").values()))
    same = m.run(pixel_values=pixels)
    cpp, expected = dump(folder), read_safetensors(folder / "expected.safetensors")
    assert len(cap.tokens) == spec["num_tokens"] and cap.tokens[0] == spec["prefix_tokens"][0]
    for layer in range(1, m.info["layers"] + 1):
        a, name = cap.attention(layer), f"layer{layer - 1}.attn_prob"
        assert np.array_equal(a, cpp[name]), name
        assert np.allclose(a, expected[name], atol=1e-4, rtol=1e-3), name
        assert np.allclose(same.attention(layer), expected[name], atol=1e-4, rtol=1e-3), name
    with pytest.raises(attnscope.Error, match="reads pictures"):
        m.run("a text")
    with pytest.raises(attnscope.Error, match="session holds a text"):
        cap.save_session("never.attnscope")


def rendered(page, fragment, tmp_path):
    """The <body> attributes of a page after its script ran in headless Chromium, offline, at `fragment`."""
    path = tmp_path / "page.html"
    path.write_text(page)
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                          f"--user-data-dir={tmp_path / 'profile'}", "--host-resolver-rules=MAP * ~NOTFOUND",
                          "--virtual-time-budget=5000", "--dump-dom", f"file://{path}#{fragment}"],
                         capture_output=True, text=True, timeout=120).stdout
    body = dom[dom.index("<body"):dom.index(">", dom.index("<body"))]
    return dict(part.split("=", 1) for part in body.replace('"', "").split()[1:])


def checksum(a):
    """The page's checksum of one head's [rows, cols]: cells at its 1/255 steps times row and column from 1."""
    v = (np.rint(np.clip(a, 0, 1) * 255) / 255).astype(np.float32).astype(np.float64)
    r, c = np.indices(v.shape)
    return (v * (r + 1) * (c + 1)).sum()


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (make deps installs it)")
def test_translation_and_picture_pages_draw_their_own_numbers(tmp_path):
    t = attnscope.load(TESTDATA / "marian-tiny").run(ids=[5, 6, 7, 8, 9, 0], max_new_tokens=12)
    page = t.html()
    assert "http://" not in page and "https://" not in page
    for fragment, site, layer, head in (("", "cross", 1, 1), ("site=cross&layer=2&head=3", "cross", 2, 3),
                                        ("site=encoder&layer=1&head=2", "encoder", 1, 2),
                                        ("site=decoder&layer=2&head=4", "decoder", 2, 4)):
        body = rendered(page, fragment, tmp_path)
        assert (body["data-site"], body["data-layer"], body["data-head"]) == (site, str(layer), str(head))
        want = t.attention(layer, head=head, site=site)[0]
        if site == "decoder":
            want = np.tril(want)  # the page leaves the causal mask's cells out of its sum
        assert abs(float(body["data-checksum"]) - checksum(want)) < 1e-3, (site, layer, head)
    vit = TESTDATA / "vit-tiny"
    cap = attnscope.load(vit).run(image=str(vit / "image.png"))
    page = cap.html(layers=[2])
    assert '"image":{' in page
    body = rendered(page, "head=2", tmp_path)
    assert body["data-rendered"] == "yes" and body["data-head"] == "2"
    assert abs(float(body["data-checksum"]) - checksum(cap.attention(2, head=2)[0])) < 1e-3


def test_ctrl_c_stops_a_scan_within_seconds_not_after_it():
    """A SIGINT during a long scan raises KeyboardInterrupt from inside the call (the core's stop token), so the
    result is never assigned; before, the whole scan ran first and the interrupt came after it returned."""
    import signal
    import threading
    m = attnscope.load("builtin:txl-wikitext2")
    corpus = SOURCE.parent / "shared" / "data" / "wikitext-2" / "valid.txt"
    if not corpus.exists():
        pytest.skip("no WikiText-2 beside the project")
    result = None
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    with pytest.raises(KeyboardInterrupt):
        timer.start()
        result = m.scan(text_file=str(corpus))
    timer.join()
    assert result is None


def test_sampling_settings_are_refused_by_name():
    m = attnscope.load(TESTDATA / "gpt2-tiny")
    for kwargs, name in (({"temperature": float("nan")}, "temperature"), ({"temperature": -1.0}, "temperature"),
                         ({"top_p": -0.5}, "top_p"), ({"top_p": float("nan")}, "top_p"), ({"top_k": -3}, "top_k")):
        with pytest.raises(attnscope.Error, match=name):
            m.generate([1, 2, 3], 2, **kwargs)
    assert len(m.generate([1, 2, 3], 2, temperature=1e-300)["ids"]) == 2
