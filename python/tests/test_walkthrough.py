"""docs/python.md runs top to bottom: its Python blocks, in order, in one namespace, with the names a reader would
fill in (their own GGUF file, t5-small, dinov2-small, a picture, a corpus) pointed at the reference data and the
built-in model. Only the app is not started (show() is replaced by a no-op) and matplotlib's block runs only where
python3-matplotlib is installed."""

import os
import re
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("ATTNSCOPE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
TESTDATA = Path(os.environ.get("ATTNSCOPE_TESTDATA", SOURCE.parent / "shared" / "testdata"))


def test_the_walkthrough_runs_top_to_bottom(tmp_path, monkeypatch):
    doc = (SOURCE / "docs" / "python.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert len(blocks) >= 8
    corpus = tmp_path / "wiki.valid.txt"
    corpus.write_text("".join(f"the war ended in {1900 + i} and the city was rebuilt .\n" for i in range(80)))
    names = {
        '"model-q8_0.gguf"': '"builtin:llama-wikitext2"',  # words the IOI prompt needs are in its vocabulary
        '"t5-small"': repr(str(TESTDATA / "t5-tiny")),
        't5.run("translate English to German: The house is wonderful.")': "t5.run(ids=[5, 6, 7, 8, 1])",
        '"dinov2-small"': repr(str(TESTDATA / "dinov2-tiny")),
        '"cat.png"': repr(str(TESTDATA / "dinov2-tiny" / "image.png")),
        "(3, 224, 224)": "(3, 32, 32)",
        '"whisper-base"': repr(str(TESTDATA / "whisper-tiny")),
        '"talk.wav"': repr(str(TESTDATA / "whisper-tiny" / "audio.wav")),
        "attnscope.show(": "(lambda *a, **k: None)(",
    }
    try:
        import matplotlib
        matplotlib.use("Agg")
        have_plots = True
    except ImportError:
        have_plots = False
    monkeypatch.chdir(tmp_path)
    namespace = {}
    ran = 0
    for block in blocks:
        if "matplotlib" in block and not have_plots:
            continue
        for old, new in names.items():
            block = block.replace(old, new)
        exec(compile(block, "docs/python.md", "exec"), namespace)
        ran += 1
    assert ran >= 7
    assert (tmp_path / "page.html").stat().st_size > 1000 and (tmp_path / "translation.html").is_file()
    assert namespace["merged"].tokens == namespace["s"].tokens
