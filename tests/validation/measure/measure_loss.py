#!/usr/bin/python3
"""Measures, on CPU with Debian's torch, the memory of the output layer and
loss of a Llama model in a training step: the standard transformers loss
and torchtune's chunked LinearCrossEntropyLoss. Writes one JSON object per
case to tests/validation/data/cpu-loss.jsonl.

Regenerate with:   /usr/bin/python3 tests/validation/measure/measure_loss.py

The script compiles peak_alloc.c and re-runs itself with it preloaded, so
that every tensor storage PyTorch allocates is counted. Per case, starting
from the last decoder layer's output (a leaf that requires grad), it runs
the final norm, output layer and loss forward, then backward, and records
  * the storages autograd saved (as measure_cpu.py records them);
  * forward_peak: the most bytes held, above those held before the forward;
  * backward_peak: the most bytes held during backward, on the same base;
  * backward_windows: the same, per autograd node, in the order they ran;
  * output_grad: the bytes of the output layer's weight gradient.
"""
import argparse
import ctypes
import gc
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def preload_and_rerun():
    build = tempfile.mkdtemp(prefix="vramcalc-peak-")
    lib = os.path.join(build, "libpeak.so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", lib, os.path.join(HERE, "peak_alloc.c"), "-ldl"],
                   check=True)
    env = dict(os.environ, LD_PRELOAD=lib, VRAMCALC_PEAK_LOADED="1")
    sys.exit(subprocess.run([sys.executable] + sys.argv, env=env).returncode)


if os.environ.get("VRAMCALC_PEAK_LOADED") != "1":
    preload_and_rerun()

import torch  # noqa: E402

sys.path.insert(0, HERE)
import measure_cpu  # noqa: E402
import models  # noqa: E402

LIB = ctypes.CDLL(None)
for fn in (LIB.peak_reset, LIB.peak_get, LIB.live_get):
    fn.restype = ctypes.c_size_t

LLAMA_VOCAB = dict(measure_cpu.LLAMA, vocab_size=4096)


def head_loss(model, x, labels, loss):
    x = model.norm(x)
    if loss == "standard":
        # transformers LlamaForCausalLM.forward keeps the logits (its output)
        # while self.loss_function runs; the Trainer drops them before backward.
        logits = model.lm_head(x)
        return models.causal_lm_loss(logits, labels, model.c["vocab_size"])
    n = int(loss[len("chunked:"):])
    return models.chunked_linear_cross_entropy(x, model.lm_head, models.shift_labels_torchtune(labels), n)


def loss_case(config, dtype_name, batch, seq, loss):
    model = measure_cpu.build(config, measure_cpu.DTYPES[dtype_name])
    torch.manual_seed(1)
    x = torch.randn(batch, seq, config["hidden_size"], dtype=model.lm_head.weight.dtype, requires_grad=True)
    labels = torch.randint(0, config["vocab_size"], (batch, seq))
    models.SCOPE[0] = "head"
    # Earlier cases' reference cycles must not be freed mid-measurement.
    gc.collect()
    gc.disable()
    base = LIB.peak_reset()
    out, inventory = measure_cpu.saved_inventory(
        type("Head", (), {"parameters": model.parameters, "__call__": lambda self, i, l: head_loss(model, x, l, loss)})(),
        None, labels)
    forward_peak = LIB.peak_get() - base
    after_forward = LIB.live_get() - base
    windows = watch_backward(out, base)
    LIB.peak_reset()
    out.backward()
    windows.append({"node": "(after the last hook)", "peak": LIB.peak_get() - base, "out_of_place_add": False})
    backward_peak = max(w["peak"] for w in windows)
    gc.enable()
    return {
        "kind": "loss", "config": config, "dtype": dtype_name, "batch": batch, "seq": seq, "loss": loss,
        "measured": {"saved": inventory, "after_forward": after_forward, "forward_peak": forward_peak,
                     "backward_peak": backward_peak, "backward_windows": windows,
                     "output_grad": model.lm_head.weight.grad.numel() * model.lm_head.weight.grad.element_size()},
    }


def watch_backward(loss, base):
    """Registers a post-hook on every node of the loss's graph. Each hook
    closes a window: the peak since the previous hook, over `base`, and the
    node that ran. A window right after the second or a later TBackward0
    (the output layer's weight gradient of a chunk) holds torch 1.13's
    out-of-place add of that gradient to the ones already buffered
    (tests/validation/README.md, R6)."""
    windows = []
    seen, stack = set(), [loss.grad_fn]
    transposes = [0]

    def hook(node):
        def closed(*_):
            name = node.name()
            after_transpose = bool(windows) and windows[-1]["node"] == "TBackward0" and transposes[0] >= 2
            windows.append({"node": name, "peak": LIB.peak_get() - base, "out_of_place_add": after_transpose})
            if name == "TBackward0":
                transposes[0] += 1
            LIB.peak_reset()
        return closed

    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        node.register_hook(hook(node))
        stack.extend(fn for fn, _ in node.next_functions)
    return windows


def warm_loss_case(*args):
    """The first run of a shape fills oneDNN's CPU primitive caches (kept
    allocations that are not tensors); the second run is the measurement."""
    loss_case(*args)
    return loss_case(*args)


def cases():
    for dtype in ("fp32", "bf16"):
        for batch, seq in ((1, 256), (2, 512)):
            for loss in ("standard", "chunked:1", "chunked:4", "chunked:8"):
                yield lambda d=dtype, b=batch, s=seq, l=loss: warm_loss_case(LLAMA_VOCAB, d, b, s, l)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(HERE, "..", "data", "cpu-loss.jsonl"))
    args = parser.parse_args()
    measure_cpu.write_cases(args.out, "tests/validation/measure/measure_loss.py", cases())


if __name__ == "__main__":
    main()
