"""attnscope from Python: load a model, run a text, read its attention as numpy arrays.

    import attnscope
    m = attnscope.load("builtin:llama-wikitext2")      # a folder, config.json, .gguf, PyTorch checkpoint or builtin:NAME
    cap = m.run("the war ended in 1945")               # or m.run(ids=[...])
    cap.tokens                                         # the tokens, as the tokenizer spells them
    a = cap.attention(1)                               # layer 1: float32 [heads, q, k], head h + 1 at index h
    cap.hidden_states(), cap.logits(), cap.logit_lens()  # the residual stream, the head's logits, every layer read out
    m.predict("the war ended in"), m.generate("the war", 10)
    m.patch(clean, corrupt, answer, wrong)             # activation patching: layer x head scores

Layers and heads are counted from 1 wherever they are arguments; array axes from 0, as numpy's are. Errors arrive as
attnscope.Error (a RuntimeError) whose message names the file and the problem.
"""

from ._attnscope import Capture, Error, Model

__all__ = ["Capture", "Error", "Model", "load"]


def load(path):
    """load(path) -> Model

    Opens a model as the app does: a model folder (Hugging Face layout), its config.json, a .gguf file, a PyTorch
    checkpoint with config.json beside it, or "builtin:NAME". Weights stay memory-mapped as stored.
    Raises attnscope.Error naming the file when it cannot.
    """
    return Model(str(path))
