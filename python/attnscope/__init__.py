"""attnscope from Python: load a model, run a text, read its attention as numpy arrays.

    import attnscope
    m = attnscope.load("builtin:llama-wikitext2")      # a folder, config.json, .gguf, PyTorch checkpoint or builtin:NAME
    cap = m.run("the war ended in 1945")               # or m.run(ids=[...])
    cap.tokens                                         # the tokens, as the tokenizer spells them
    a = cap.attention(1)                               # layer 1: float32 [heads, q, k], head h + 1 at index h
    cap.hidden_states(), cap.logits(), cap.logit_lens()  # the residual stream, the head's logits, every layer read out
    m.predict("the war ended in"), m.generate("the war", 10)
    m.patch(clean, corrupt, answer, wrong)             # activation patching: layer x head scores
    m.path_patch(clean, corrupt, answer, wrong, sender=(1, 4), receivers=[(3, 1)])  # path patching: one score
    m.path_patch(clean, corrupt, answer, wrong, sender="all", receivers=[(3, 1)])  # every sender: a [layer, head] map
    cap.terms(1, 2), cap.queries_keys(1, 2), cap.explain(1, 2, 5)  # a head's score terms, vectors, one row's mechanism
    cap.rollout(), cap.ablation(), cap.atlas(), cap.qk_embedding(1, 2)
    s = m.scan(text_file="corpus.txt"); s.profile("full")  # a corpus scan: [layers, heads, distances]

Layers and heads are counted from 1 wherever they are arguments; array axes from 0, as numpy's are. Errors arrive as
attnscope.Error (a RuntimeError) whose message names the file and the problem.
"""

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ._attnscope import Capture, Error, Model, Scan, load_scan, merge_scans

__all__ = ["Capture", "Error", "Model", "Scan", "load", "load_scan", "merge_scans", "show"]


def load(path):
    """load(path) -> Model

    Opens a model as the app does: a model folder (Hugging Face layout), its config.json, a .gguf file, a PyTorch
    checkpoint with config.json beside it, or "builtin:NAME". Weights stay memory-mapped as stored.
    Raises attnscope.Error naming the file when it cannot.
    """
    return Model(str(path))


def _app():
    """The desktop app: $ATTNSCOPE_APP, the build folder's app beside this module, or attnscope on the PATH."""
    candidates = [os.environ.get("ATTNSCOPE_APP"), Path(__file__).resolve().parents[2] / "app" / "attnscope",
                  shutil.which("attnscope")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return str(c)
    raise Error("the attnscope app was not found: build it (make run) or set ATTNSCOPE_APP")


def show(capture, layer=1, head=1):
    """show(capture, layer=1, head=1) -> subprocess.Popen

    Opens the desktop app on exactly this capture's model and text, at this layer and head (both from 1): the
    capture is saved as a session (Capture.save_session) in a temporary folder and the app started on it. The app
    runs on its own; the notebook goes on.
    """
    folder = tempfile.mkdtemp(prefix="attnscope-")
    session = capture.save_session(os.path.join(folder, "from-python.attnscope"), layer, head)
    return subprocess.Popen([_app(), session], start_new_session=True)
