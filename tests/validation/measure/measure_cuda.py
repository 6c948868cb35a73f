#!/usr/bin/env python3
"""Measures real Hugging Face transformers models on a CUDA GPU, built from
their configs (no weights are downloaded), and writes one JSON object per
case to tests/validation/data/cuda-<gpu>.jsonl.

For each case it records torch.cuda.max_memory_allocated,
torch.cuda.max_memory_reserved and the device's used memory
(cudaMemGetInfo total − free, what nvidia-smi shows):
  * after loading the model;
  * over a training step (AdamW fused, the Trainer default; bf16 autocast
    over fp32 parameters and pure bf16; checkpointing on and off; SDPA and
    eager), measured on the second step so the optimizer state exists;
  * over generate() with a static cache (prefill and decode).

Run on a GPU machine with torch and transformers installed:
    python3 tests/validation/measure/measure_cuda.py            # all cases
    python3 tests/validation/measure/measure_cuda.py --quick    # a subset, about a minute

Without a GPU, `--self-test` runs the same grid logic on CPU on tiny configs
(with the project's re-implementations when transformers is missing) and
checks the records' shape; the numbers are zeros, not measurements.
"""
import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))

# Real architectures, small enough for a few seconds each on one GPU.
CONFIGS = {
    "llama-3.2-1b": {
        "model_type": "llama", "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192,
        "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
        "max_position_embeddings": 131072, "tie_word_embeddings": True, "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0,
    },
    "qwen2.5-0.5b": {
        "model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864,
        "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
        "max_position_embeddings": 32768, "tie_word_embeddings": True, "use_sliding_window": False,
    },
    "gpt2": {
        "model_type": "gpt2", "vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12,
        "n_positions": 1024,
    },
}

TINY = {
    "tiny-llama": {"model_type": "llama", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 176,
                   "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
                   "max_position_embeddings": 256, "tie_word_embeddings": False},
}


class CudaDevice:
    name = "cuda"

    def __init__(self):
        props = torch.cuda.get_device_properties(0)
        self.gpu = props.name
        self.capacity = props.total_memory

    def sync(self):
        torch.cuda.synchronize()

    def reset(self):
        self.sync()
        torch.cuda.reset_peak_memory_stats()

    def snapshot(self):
        self.sync()
        free, total = torch.cuda.mem_get_info()
        return {"allocated": torch.cuda.memory_allocated(), "max_allocated": torch.cuda.max_memory_allocated(),
                "max_reserved": torch.cuda.max_memory_reserved(), "device_used": total - free}

    def release(self):
        self.sync()
        torch.cuda.empty_cache()


class CpuStub:
    """Stands in for the GPU in --self-test: same calls, zero numbers."""
    name = "cpu"
    gpu = "cpu (self-test)"
    capacity = 0

    def sync(self):
        pass

    def reset(self):
        pass

    def snapshot(self):
        return {"allocated": 0, "max_allocated": 0, "max_reserved": 0, "device_used": 0}

    def release(self):
        pass


def build(config, dtype, attention, device):
    """A transformers model from its config, or the project's CPU
    re-implementation when transformers is missing (self-test only)."""
    try:
        import transformers
    except ImportError:
        if device.name != "cpu":
            raise
        sys.path.insert(0, HERE)
        import models
        model = models.Llama(dict(config), dtype)
        return model, False
    cfg = transformers.AutoConfig.for_model(**config)
    model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype, attn_implementation=attention)
    return model.to(device.name), True


def train_case(device, name, config, precision, attention, checkpoint, batch, seq):
    device.release()
    device.reset()
    params_dtype = torch.float32 if precision == "amp" else torch.bfloat16
    model, real = build(config, params_dtype, attention, device)
    after_load = device.snapshot()
    if checkpoint and real:
        model.gradient_checkpointing_enable()
    model.train()
    fused = device.name == "cuda"
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=fused) if fused else torch.optim.AdamW(
        model.parameters(), lr=1e-5)
    ids = torch.randint(0, config["vocab_size"], (batch, seq), device=device.name)
    step_peaks = []
    for _ in range(2):
        device.reset()
        with torch.autocast(device.name, dtype=torch.bfloat16, enabled=precision == "amp" and device.name == "cuda"):
            out = model(input_ids=ids, labels=ids) if real else model(ids, ids)
            loss = out.loss if real else out
        del out
        loss.backward()
        del loss
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step_peaks.append(device.snapshot())
    record = {
        "kind": "train", "model": name, "config": config, "precision": precision, "attention": attention,
        "checkpoint": "full" if checkpoint else "none", "batch": batch, "seq": seq, "optimizer": "adamw",
        "measured": {"after_load": after_load, "step": step_peaks[-1], "first_step": step_peaks[0]},
    }
    del model, optimizer
    return record


@torch.no_grad()
def generate_case(device, name, config, attention, batch, prompt, new_tokens):
    device.release()
    device.reset()
    model, real = build(config, torch.bfloat16, attention, device)
    after_load = device.snapshot()
    model.eval()
    ids = torch.randint(0, config["vocab_size"], (batch, prompt), device=device.name)
    device.reset()
    if real:
        model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False,
                       cache_implementation="static")
    record = {
        "kind": "generate", "model": name, "config": config, "attention": attention, "batch": batch,
        "seq": prompt + new_tokens, "prompt": prompt, "new_tokens": new_tokens,
        "measured": {"after_load": after_load, "generate": device.snapshot()},
    }
    del model
    return record


def grid(quick, configs):
    for name, config in configs.items():
        seq = min(1024, config.get("max_position_embeddings", config.get("n_positions", 1024)))
        for precision in ("amp", "pure"):
            for attention in ("sdpa", "eager"):
                for checkpoint in (False, True):
                    if quick and (attention == "eager" or checkpoint):
                        continue
                    yield lambda d, n=name, c=config, p=precision, a=attention, k=checkpoint, s=seq: train_case(
                        d, n, c, p, a, k, 2, s)
        yield lambda d, n=name, c=config: generate_case(d, n, c, "sdpa", 4, 512, 64)


def check_record(r):
    """The shape every record must have (the C++ comparison reads these keys)."""
    assert r["kind"] in ("train", "generate"), r
    for key in ("model", "config", "batch", "seq", "measured"):
        assert key in r, key
    phases = ("after_load", "step") if r["kind"] == "train" else ("after_load", "generate")
    for phase in phases:
        for key in ("allocated", "max_allocated", "max_reserved", "device_used"):
            assert isinstance(r["measured"][phase][key], int), (phase, key)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="SDPA without checkpointing only")
    parser.add_argument("--self-test", action="store_true", help="run the grid logic on CPU, tiny configs")
    parser.add_argument("--out", help="output file (default tests/validation/data/cuda-<gpu>.jsonl)")
    args = parser.parse_args()
    device = CpuStub() if args.self_test else CudaDevice()
    configs = TINY if args.self_test else CONFIGS
    records = [{"kind": "meta", "torch": torch.__version__, "gpu": device.gpu, "capacity_bytes": device.capacity,
                "generator": "tests/validation/measure/measure_cuda.py", "time": time.strftime("%Y-%m-%d")}]
    try:
        import transformers
        records[0]["transformers"] = transformers.__version__
    except ImportError:
        records[0]["transformers"] = None
    for make in grid(args.quick, configs):
        r = make(device)
        check_record(r)
        records.append(r)
        print(f"{r['kind']} {r['model']} {r.get('precision', '')} {r.get('attention', '')} "
              f"{r.get('checkpoint', '')}: {r['measured']}", file=sys.stderr)
    if args.self_test:
        print(f"self-test: {len(records) - 1} records, all well-formed")
        return
    slug = device.gpu.lower().replace("nvidia ", "").replace(" ", "-")
    out = args.out or os.path.join(HERE, "..", "data", f"cuda-{slug}.jsonl")
    with open(out, "w") as f:
        f.write("\n".join(json.dumps(r, separators=(",", ":")) for r in records) + "\n")
    print(f"wrote {len(records) - 1} cases to {os.path.normpath(out)}")


if __name__ == "__main__":
    main()
