#!/usr/bin/python3
"""What torchtune's Llama decoder layer keeps for backward, eager and under
torch.compile, without checkpointing. Needs torch 2.x; run on CPU with
torch 2.6.0 (Debian trixie's python3-torch) for docs/formulas.md,
"torchtune", `--compile`.

    python3 tests/validation/measure/measure_compile_layer.py eager
    python3 tests/validation/measure/measure_compile_layer.py aot_eager_decomp_partition

The layer follows torchtune 1814feb17's modules as the recipes build them
(modules/rms_norm.py RMSNorm, models/llama3_1/_position_embeddings.py
Llama3ScaledRoPE's rotation, modules/attention.py MultiHeadAttention with
k and v expanded to every head before SDPA, modules/feed_forward.py,
modules/transformer.py TransformerSelfAttentionLayer); the RoPE cache is a
buffer of fp32 cos/sin pairs. Saved tensors are recorded with
saved_tensors_hooks (AOT autograd saves through ctx.save_for_backward);
`aot_eager_decomp_partition` partitions the joint graph with the min-cut
partitioner inductor uses, without generating code; `inductor` (which
needs g++ and libtorch-dev beside python3-torch) gives the same saved set.
Dimensions are chosen
so every tensor's shape names it: T = B·S tokens, H hidden, A·D query
columns, K·D key columns, I MLP columns.
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

B, S, H, A, K, D, I = 2, 24, 96, 6, 2, 16, 160


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(H))

    def forward(self, x):
        x_fp32 = x.float()
        x_normed = (x_fp32 * torch.rsqrt(x_fp32.pow(2).mean(-1, keepdim=True) + 1e-5)).type_as(x)
        return x_normed * self.scale


class Rope(nn.Module):
    def __init__(self):
        super().__init__()
        theta = 1.0 / (500000 ** (torch.arange(0, D, 2).float() / D))
        idx = torch.outer(torch.arange(S).float(), theta)
        self.register_buffer("cache", torch.stack([torch.cos(idx), torch.sin(idx)], dim=-1), persistent=False)

    def forward(self, x):
        xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
        c = self.cache[: x.size(1)].view(-1, xshaped.size(1), 1, xshaped.size(3), 2)
        out = torch.stack(
            [
                xshaped[..., 0] * c[..., 0] - xshaped[..., 1] * c[..., 1],
                xshaped[..., 1] * c[..., 0] + xshaped[..., 0] * c[..., 1],
            ],
            -1,
        )
        return out.flatten(3).type_as(x)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.sa_norm, self.mlp_norm, self.rope = RMSNorm(), RMSNorm(), Rope()
        self.q_proj = nn.Linear(H, A * D, bias=False)
        self.k_proj = nn.Linear(H, K * D, bias=False)
        self.v_proj = nn.Linear(H, K * D, bias=False)
        self.output_proj = nn.Linear(A * D, H, bias=False)
        self.w1 = nn.Linear(H, I, bias=False)
        self.w3 = nn.Linear(H, I, bias=False)
        self.w2 = nn.Linear(I, H, bias=False)

    def attn(self, x):
        q = self.rope(self.q_proj(x).view(B, S, A, D)).transpose(1, 2)
        k = self.rope(self.k_proj(x).view(B, S, K, D)).transpose(1, 2)
        v = self.v_proj(x).view(B, S, K, D).transpose(1, 2)
        k = k.unsqueeze(2).expand(B, K, A // K, S, D).flatten(1, 2)
        v = v.unsqueeze(2).expand(B, K, A // K, S, D).flatten(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.output_proj(out.transpose(1, 2).contiguous().view(B, S, -1))

    def forward(self, x):
        h = self.attn(self.sa_norm(x)) + x
        g = self.mlp_norm(h)
        return h + self.w2(F.silu(self.w1(g)) * self.w3(g))


NAMES = {
    (B, S, H): "b·s·h", (B * S, H): "b·s·h", (B, S, A, D): "b·s·a·d", (B, A, S, D): "b·a·s·d",
    (B * S, A * D): "b·s·a·d", (B, S, K, D): "b·s·k·d", (B, K, S, D): "b·k·s·d", (B * S, K * D): "b·s·k·d",
    (B, S, I): "b·s·I", (B * S, I): "b·s·I", (B, A, S): "b·a·s", (B, S, 1): "b·s",
    (B, S, A, D // 2, 2): "b·s·a·d (pairs)", (B, S, K, D // 2, 2): "b·s·k·d (pairs)",
}


def main():
    torch.manual_seed(0)
    layer = Layer().to(torch.bfloat16)
    layer.rope.cache = layer.rope.cache.float()
    x = torch.randn(B, S, H, dtype=torch.bfloat16, requires_grad=True)
    backend = sys.argv[1] if len(sys.argv) > 1 else "eager"
    fn = layer if backend == "eager" else torch.compile(layer, backend=backend, fullgraph=True)
    saved = {}
    params = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    params |= {b.untyped_storage().data_ptr() for b in layer.buffers()}

    def pack(t):
        ptr = t.untyped_storage().data_ptr()
        if ptr == x.untyped_storage().data_ptr():
            saved.setdefault(ptr, (("the layer input",) + tuple(t.shape), t.dtype, t.untyped_storage().nbytes()))
        elif ptr not in params:
            saved.setdefault(ptr, (tuple(t.shape), t.dtype, t.untyped_storage().nbytes()))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = fn(x)
    y.sum().backward()
    total = 0
    for shape, dtype, nbytes in sorted(saved.values(), key=lambda v: -v[2]):
        total += nbytes
        name = "layer input" if shape[0] == "the layer input" else NAMES.get(shape, "?")
        print(f"{name:18s} {str(shape):38s} {str(dtype):15s} {nbytes}")
    print("activation bytes kept:", total)


if __name__ == "__main__":
    main()
