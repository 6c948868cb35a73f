#!/usr/bin/python3
"""Measures, on CPU with Debian's torch, what a training step and a generate
loop of Llama and GPT-2 (models.py) hold, and writes one JSON object per case
to tests/validation/data/cpu-autograd.jsonl.

Regenerate with:   /usr/bin/python3 tests/validation/measure/measure_cpu.py

Per case it records
  * parameter, gradient and optimizer-state bytes after one real step;
  * every storage autograd saves for backward (saved_tensors_hooks,
    de-duplicated by storage, parameters excluded), with the scope that
    saved it (embedding, layer.N, head; "shared" when several did), and the
    ops that saved it (found by walking the autograd graph);
  * for generate cases, the bytes of the static KV cache.
The raw torch 1.13 CPU behaviour is recorded as it is; the C++ comparison
(tests/validation/test_validation.cpp) converts the known CPU/1.13
differences, op by op, before comparing with vramcalc.
"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

LLAMA = {"model_type": "llama", "vocab_size": 256, "hidden_size": 64, "intermediate_size": 176,
         "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
         "max_position_embeddings": 1024, "tie_word_embeddings": False}
LLAMA_MHA = dict(LLAMA, num_key_value_heads=4)
GPT2 = {"model_type": "gpt2", "vocab_size": 256, "n_embd": 64, "n_layer": 3, "n_head": 4, "n_positions": 1024,
        "attn_pdrop": 0.1, "resid_pdrop": 0.1, "embd_pdrop": 0.1}
GPT2_NO_DROPOUT = dict(GPT2, attn_pdrop=0.0, resid_pdrop=0.0, embd_pdrop=0.0)

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def build(config, dtype):
    torch.manual_seed(0)
    model = models.Llama(config, dtype) if config["model_type"] == "llama" else models.GPT2(config, dtype)
    model.train()
    return model


def storage_of(t):
    return t.storage().data_ptr(), t.storage().size() * t.element_size()


def saved_inventory(model, input_ids, labels):
    """Runs the forward under saved_tensors_hooks; returns the loss and the
    de-duplicated inventory of saved storages."""
    params = {p.storage().data_ptr() for p in model.parameters()}
    seen = {}

    def pack(t):
        ptr, nbytes = storage_of(t)
        if ptr in params:
            return t
        scope = "shared" if ptr in models.SHARED else models.SCOPE[0]
        tag = ""
        if scope.endswith("/dropout"):
            scope, tag = scope[: -len("/dropout")], "dropout"
        entry = seen.setdefault(ptr, {"bytes": nbytes, "scopes": [], "shape": list(t.shape),
                                      "dtype": str(t.dtype).replace("torch.", ""), "dim": t.dim(),
                                      "numel": t.storage().size(), "tags": [], "ops": []})
        if scope not in entry["scopes"]:
            entry["scopes"].append(scope)
        if tag and tag not in entry["tags"]:
            entry["tags"].append(tag)
        return t

    models.SHARED.clear()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = model(input_ids, labels)

    # Name the ops that saved each storage by walking the autograd graph.
    stack, visited = [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or node in visited:
            continue
        visited.add(node)
        for attr in dir(node):
            if not attr.startswith("_saved_"):
                continue
            value = getattr(node, attr)
            for v in value if isinstance(value, (tuple, list)) else [value]:
                if isinstance(v, torch.Tensor):
                    ptr, _ = storage_of(v)
                    if ptr in seen:
                        op = f"{node.name()}.{attr[len('_saved_'):]}"
                        if op not in seen[ptr]["ops"]:
                            seen[ptr]["ops"].append(op)
        stack.extend(fn for fn, _ in node.next_functions)
    inventory = []
    for entry in seen.values():
        entry["scope"] = entry["scopes"][0] if len(entry["scopes"]) == 1 else "shared"
        del entry["scopes"]
        if not entry["ops"]:
            entry["ops"] = ["(custom Function or checkpoint input)"]
        inventory.append(entry)
    inventory.sort(key=lambda e: (e["scope"], -e["bytes"], e["ops"]))
    return loss, inventory


class Adafactor(torch.optim.Optimizer):
    """The state layout of transformers' Adafactor (optimization.py) with its
    defaults (beta1=None): factored row/column second moments for tensors of
    two or more dimensions, a full one for vectors, all in fp32."""

    def __init__(self, params, lr=1e-3):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.float()
                state = self.state[p]
                if not state:
                    if grad.dim() >= 2:
                        state["exp_avg_sq_row"] = torch.zeros(grad.shape[:-1]).to(grad)
                        state["exp_avg_sq_col"] = torch.zeros(grad.shape[:-2] + grad.shape[-1:]).to(grad)
                    else:
                        state["exp_avg_sq"] = torch.zeros_like(grad)
                update = grad ** 2 + 1e-30
                if grad.dim() >= 2:
                    state["exp_avg_sq_row"].mul_(0.9).add_(update.mean(dim=-1), alpha=0.1)
                    state["exp_avg_sq_col"].mul_(0.9).add_(update.mean(dim=-2), alpha=0.1)
                    r = (state["exp_avg_sq_row"] / state["exp_avg_sq_row"].mean(dim=-1, keepdim=True)).rsqrt_()
                    c = state["exp_avg_sq_col"].rsqrt()
                    update = r.unsqueeze(-1) * c.unsqueeze(-2) * grad
                else:
                    state["exp_avg_sq"].mul_(0.9).add_(update, alpha=0.1)
                    update = state["exp_avg_sq"].rsqrt() * grad
                p.add_(-group["lr"] * update.to(p.dtype))


def make_optimizer(name, params):
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-4, momentum=0.9)
    if name == "adafactor":
        return Adafactor(params)
    raise ValueError(name)


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors if t is not None and t.dim() > 0)


def train_case(config, dtype_name, batch, seq, checkpoint, optimizer):
    model = build(config, DTYPES[dtype_name])
    n = config.get("num_hidden_layers", config.get("n_layer"))
    if checkpoint == "full":
        model.checkpointed = set(range(n))
    elif checkpoint.startswith("every:"):
        k = int(checkpoint[len("every:"):])
        model.checkpointed = {i for i in range(n) if i % k == 0}
    torch.manual_seed(1)
    input_ids = torch.randint(0, config["vocab_size"], (batch, seq))
    labels = input_ids.clone()
    opt = make_optimizer(optimizer, model.parameters())
    loss, inventory = saved_inventory(model, input_ids, labels)
    loss.backward()
    opt.step()
    state = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    params = list(model.parameters())
    return {
        "kind": "train", "config": config, "dtype": dtype_name, "batch": batch, "seq": seq,
        "checkpoint": checkpoint, "optimizer": optimizer,
        "measured": {
            "parameter_bytes": tensor_bytes(params),
            "gradient_bytes": tensor_bytes(p.grad for p in params),
            "optimizer_state_bytes": tensor_bytes(state),
            "saved": inventory,
        },
    }


@torch.no_grad()
def generate_case(config, dtype_name, batch, prompt, new_tokens):
    """A generate loop with a static cache: K and V of every layer for
    prompt + new_tokens positions, allocated up front (transformers
    StaticCache), filled by prefill and decode."""
    dtype = DTYPES[dtype_name]
    model = build(config, dtype)
    model.eval()
    c = config
    L, k, d = c["num_hidden_layers"], c["num_key_value_heads"], c["head_dim"]
    total = prompt + new_tokens
    cache = [(torch.zeros(batch, k, total, d, dtype=dtype), torch.zeros(batch, k, total, d, dtype=dtype))
             for _ in range(L)]
    ids = torch.randint(0, c["vocab_size"], (batch, prompt))
    pos = 0
    for step in range(new_tokens + 1):
        s = ids.shape[1]
        x = model.embed_tokens(ids)
        cos_all, sin_all = model.rotary(x, pos + s)
        cos, sin = cos_all[:, pos:pos + s], sin_all[:, pos:pos + s]
        for i, tagged in enumerate(model.layers):
            layer = tagged.inner
            residual = x
            hs = layer.input_layernorm(x)
            attn = layer.self_attn
            q = attn.q_proj(hs).view(batch, s, -1, d).transpose(1, 2)
            kk = attn.k_proj(hs).view(batch, s, -1, d).transpose(1, 2)
            v = attn.v_proj(hs).view(batch, s, -1, d).transpose(1, 2)
            q = q * cos.unsqueeze(1) + models.rotate_half(q) * sin.unsqueeze(1)
            kk = kk * cos.unsqueeze(1) + models.rotate_half(kk) * sin.unsqueeze(1)
            index = torch.arange(pos, pos + s)
            cache[i][0].index_copy_(2, index, kk)
            cache[i][1].index_copy_(2, index, v)
            keys = models.repeat_kv(cache[i][0][:, :, :pos + s], c["num_attention_heads"] // k)
            values = models.repeat_kv(cache[i][1][:, :, :pos + s], c["num_attention_heads"] // k)
            w = torch.matmul(q, keys.transpose(2, 3)) * d ** -0.5
            causal = torch.full((s, pos + s), float("-inf")).triu(pos + 1)
            w = torch.softmax(w.float() + causal, dim=-1).to(q.dtype)
            out = torch.matmul(w, values).transpose(1, 2).reshape(batch, s, -1)
            x = residual + attn.o_proj(out)
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        logits = model.lm_head(model.norm(x[:, -1:]))
        ids = logits.argmax(-1)
        pos += s
    return {
        "kind": "generate", "config": config, "dtype": dtype_name, "batch": batch, "seq": total,
        "measured": {"kv_cache_bytes": sum(t.numel() * t.element_size() for pair in cache for t in pair)},
    }


def lora_case(config, mode, targets, rank, adapter_dtype_name, p, batch, seq, checkpoint):
    """A LoRA or QLoRA step (models.apply_lora) on a bf16 base: fp32 adapters
    run under autocast (the Trainer's bf16 mode), 16-bit adapters without."""
    model = build(config, torch.bfloat16)
    adapter_dtype = DTYPES[adapter_dtype_name]
    models.apply_lora(model, targets, rank, adapter_dtype, p, mode == "qlora", torch.bfloat16)
    n = config["num_hidden_layers"]
    if checkpoint == "full":
        model.checkpointed = set(range(n))
        models.enable_input_require_grads(model)
    torch.manual_seed(1)
    input_ids = torch.randint(0, config["vocab_size"], (batch, seq))
    labels = input_ids.clone()
    trainable = [q for q in model.parameters() if q.requires_grad]
    opt = torch.optim.AdamW(trainable)
    autocast = adapter_dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss, inventory = saved_inventory(model, input_ids, labels)
    loss.backward()
    opt.step()
    state = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    params = list(model.parameters()) + [b for b in model.buffers() if b.dtype == torch.uint8]
    return {
        "kind": "lora", "config": config, "dtype": "bf16", "batch": batch, "seq": seq, "checkpoint": checkpoint,
        "optimizer": "adamw", "mode": mode, "lora_targets": ",".join(targets), "lora_rank": rank,
        "lora_dtype": adapter_dtype_name, "lora_dropout": p,
        "measured": {
            "parameter_bytes": tensor_bytes(params),
            "gradient_bytes": tensor_bytes(q.grad for q in trainable),
            "optimizer_state_bytes": tensor_bytes(state),
            "saved": inventory,
        },
    }


def freeze_case(config, dtype_name, freeze, checkpoint):
    """A full fine-tuning step with parts frozen (vramcalc --freeze): no
    gradients for them; with checkpointing, transformers makes the embedding
    output require grad (enable_input_require_grads)."""
    model = build(config, DTYPES[dtype_name])
    n = config["num_hidden_layers"]
    parts = freeze.split(",")
    frozen_layers = 0
    for part in parts:
        if part.startswith("layers:0-"):
            frozen_layers = int(part[len("layers:0-"):]) + 1
    if "embeddings" in parts:
        model.embed_tokens.weight.requires_grad_(False)
    if "lm_head" in parts:
        model.lm_head.weight.requires_grad_(False)
    for i in range(frozen_layers):
        for param in model.layers[i].parameters():
            param.requires_grad_(False)
    if checkpoint == "full":
        model.checkpointed = set(range(n))
        models.enable_input_require_grads(model)
    torch.manual_seed(1)
    input_ids = torch.randint(0, config["vocab_size"], (2, 64))
    labels = input_ids.clone()
    trainable = [q for q in model.parameters() if q.requires_grad]
    opt = torch.optim.AdamW(trainable)
    loss, inventory = saved_inventory(model, input_ids, labels)
    loss.backward()
    opt.step()
    state = [t for s in opt.state.values() for t in s.values() if isinstance(t, torch.Tensor)]
    return {
        "kind": "freeze", "config": config, "dtype": dtype_name, "batch": 2, "seq": 64, "checkpoint": checkpoint,
        "optimizer": "adamw", "freeze": freeze,
        "measured": {
            "parameter_bytes": tensor_bytes(model.parameters()),
            "gradient_bytes": tensor_bytes(q.grad for q in trainable),
            "optimizer_state_bytes": tensor_bytes(state),
            "saved": inventory,
        },
    }


def lora_cases():
    for mode in ("lora", "qlora"):
        for adapter_dtype in ("bf16", "fp32"):
            for targets in (("q", "v"), tuple(models.LORA_TARGETS)):
                yield lambda m=mode, a=adapter_dtype, t=targets: lora_case(LLAMA, m, t, 4, a, 0.0, 2, 64, "none")
            yield lambda m=mode, a=adapter_dtype: lora_case(LLAMA, m, ("q", "k", "o", "down"), 8, a, 0.1, 1, 128,
                                                            "none")
            yield lambda m=mode, a=adapter_dtype: lora_case(LLAMA_MHA, m, tuple(models.LORA_TARGETS), 4, a, 0.0, 2,
                                                            64, "full")
    for dtype in ("fp32", "bf16"):
        for freeze, checkpoint in (("embeddings,layers:0-0", "none"), ("layers:0-1", "none"),
                                   ("embeddings,layers:0-1,lm_head", "full"), ("lm_head", "none")):
            yield lambda d=dtype, f=freeze, k=checkpoint: freeze_case(LLAMA, d, f, k)


def cases():
    for config in (LLAMA, LLAMA_MHA, GPT2, GPT2_NO_DROPOUT):
        for dtype in ("fp32", "bf16"):
            for batch, seq in ((1, 32), (2, 128), (4, 1024)):
                for checkpoint in ("none", "full", "every:2"):
                    if seq == 1024 and checkpoint != "none":
                        continue  # the long sequence runs once per model and dtype
                    yield lambda c=config, d=dtype, b=batch, s=seq, k=checkpoint: train_case(c, d, b, s, k, "adamw")
    for optimizer in ("sgd-momentum", "adafactor"):
        for config in (LLAMA, GPT2):
            for dtype in ("fp32", "bf16"):
                yield lambda c=config, d=dtype, o=optimizer: train_case(c, d, 2, 64, "none", o)
    for config in (LLAMA, LLAMA_MHA):
        for dtype in ("fp32", "bf16"):
            yield lambda c=config, d=dtype: generate_case(c, d, 3, 40, 8)


def write_cases(out, generator, makers):
    """Runs every case maker and writes the JSON lines, after a meta line
    naming torch and the generating script."""
    torch.set_num_threads(1)
    lines = [json.dumps({"kind": "meta", "torch": torch.__version__, "device": "cpu", "generator": generator})]
    for make in makers:
        lines.append(json.dumps(make(), separators=(",", ":")))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines) - 1} cases to {os.path.normpath(out)}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(here, "..", "data", "cpu-autograd.jsonl"))
    parser.add_argument("--lora-out", default=os.path.join(here, "..", "data", "cpu-lora.jsonl"))
    parser.add_argument("--only-lora", action="store_true", help="write cpu-lora.jsonl only")
    args = parser.parse_args()
    if not args.only_lora:
        write_cases(args.out, "tests/validation/measure/measure_cpu.py", cases())
    write_cases(args.lora_out, "tests/validation/measure/measure_cpu.py", lora_cases())


if __name__ == "__main__":
    main()
