#!/usr/bin/python3
"""What a Llama decoder layer under torchtitan's op-level checkpointing
policy keeps for backward, eager and compiled. Needs torch 2.4 or later
(CheckpointPolicy); run on CPU with torch 2.6.0 (Debian trixie's
python3-torch) for docs/formulas.md, "torchtitan", `--compile`.

    python3 tests/validation/measure/measure_sac_compile.py eager
    python3 tests/validation/measure/measure_sac_compile.py aot_eager_decomp_partition

The policy follows torchtitan 9dec370's `_save_list` (mm, the SDPA kernels,
max; every second mm recomputed, counted per forward and per recompute).
On CPU SDPA runs `_scaled_dot_product_flash_attention_for_cpu`, listed in
its place. Eager, the tensors the policy keeps live in the checkpoint's
caching dispatch mode, so the script reads that mode's storage; compiled,
AOT autograd saves them with ctx.save_for_backward, so the script records
them with saved_tensors_hooks. `aot_eager_decomp_partition` partitions the
joint graph with the min-cut partitioner inductor uses, without generating
code; `inductor` (which needs g++ and libtorch-dev beside python3-torch)
gives the same saved set. The dimensions are small and distinct
enough to tell the tensors apart by shape: T = B·S tokens, H hidden, KV·D
for k and v, I for the MLP.

Measured with torch 2.6.0 (CPU), B=2, S=64, H=128, A=4, KV=2, I=384:
  eager caching mode: mm (128,128) wq, (128,64) wv, (128,384) w1,
                      (128,128) w2; SDPA out (2,4,64,32), lse (2,4,64)
  compiled saves:     the input (2,64,128), one (128,128) (wq's output,
                      which SDPA's backward needs as q), (128,64),
                      (128,384), SDPA out, lse, and the parameters:
                      w2's output is not saved.
"""
import sys
from collections import defaultdict

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import CheckpointPolicy, checkpoint, create_selective_checkpoint_contexts

B, S, H, A, KV, I = 2, 64, 128, 4, 2, 384
D = H // A


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(H))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).type_as(x) * self.weight


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_norm, self.ffn_norm = Norm(), Norm()
        self.wq = nn.Linear(H, A * D, bias=False)
        self.wk = nn.Linear(H, KV * D, bias=False)
        self.wv = nn.Linear(H, KV * D, bias=False)
        self.wo = nn.Linear(A * D, H, bias=False)
        self.w1 = nn.Linear(H, I, bias=False)
        self.w3 = nn.Linear(H, I, bias=False)
        self.w2 = nn.Linear(I, H, bias=False)

    def forward(self, x):
        h = self.attention_norm(x)
        q = self.wq(h).view(B, S, A, D).transpose(1, 2)
        k = self.wk(h).view(B, S, KV, D).transpose(1, 2).repeat_interleave(A // KV, dim=1)
        v = self.wv(h).view(B, S, KV, D).transpose(1, 2).repeat_interleave(A // KV, dim=1)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, S, H)
        x = x + self.wo(o)
        g = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(g)) * self.w3(g))


SAVE = {
    torch.ops.aten.mm.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten.max.default,
}


def policy():
    counts = defaultdict(int)

    def decide(ctx, func, *args, **kwargs):
        mode = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            counts[mode] += 1
        keep = func in SAVE and not (func == torch.ops.aten.mm.default and counts[mode] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

    return decide


# Dynamo traces a context_fn defined at module level.
def policy_contexts():
    return create_selective_checkpoint_contexts(policy())


def main():
    torch.manual_seed(0)
    block = Block().to(torch.bfloat16)
    x = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    backend = sys.argv[1] if len(sys.argv) > 1 else "eager"
    if backend == "eager":
        modes = []

        def contexts():
            caching, cached = create_selective_checkpoint_contexts(policy())
            modes.append(caching)
            return caching, cached

        checkpoint(block, x, use_reentrant=False, context_fn=contexts)
        for func, outs in modes[0].storage.items():
            for out in outs:
                for t in out if isinstance(out, (tuple, list)) else [out]:
                    t = getattr(t, "val", t)
                    if isinstance(t, torch.Tensor):
                        print("kept", func, tuple(t.shape), t.dtype)
        return
    saved = {}

    def pack(t):
        saved.setdefault(t.untyped_storage().data_ptr(), (tuple(t.shape), t.dtype))
        return t

    def step(inp):
        return checkpoint(block, inp, use_reentrant=False, context_fn=policy_contexts)

    compiled = torch.compile(step, backend=backend, fullgraph=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = compiled(x)
    y.sum().backward()
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    for ptr, (shape, dtype) in saved.items():
        print("saved", "parameter" if ptr in params else "activation", shape, dtype)


if __name__ == "__main__":
    main()
