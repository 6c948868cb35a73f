"""Op-for-op CPU re-implementations of Hugging Face transformers' Llama and
GPT-2 training forward passes, for measuring what autograd saves.

Written for this project from a reading of transformers 4.56 / 5.x
(src/transformers/models/llama/modeling_llama.py,
src/transformers/models/gpt2/modeling_gpt2.py, integrations/sdpa_attention.py,
loss/loss_utils.py, activations.py). Only the ops matter here: each module
calls the same torch ops in the same order, with the same dtypes, so autograd
saves the same tensors. The Debian torch (1.13) has no transformers and no
scaled_dot_product_attention, so attention is the eager path.

Every module sets `SCOPE[0]` while it runs, so the measurement can say which
part of the model saved a tensor ("embedding", "layer.0", ..., "head").
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

SCOPE = ["embedding"]

# Storages computed once per forward and used by every layer (the rotary
# tables); the measurement files them under the "shared" scope.
SHARED = set()


class Tagged(nn.Module):
    """Runs `inner` with SCOPE set to `scope`, restoring it afterwards."""

    def __init__(self, scope, inner):
        super().__init__()
        self.scope = scope
        self.inner = inner

    def forward(self, *args, **kwargs):
        saved = SCOPE[0]
        SCOPE[0] = self.scope
        try:
            return self.inner(*args, **kwargs)
        finally:
            SCOPE[0] = saved


def dropout(x, p, training):
    """F.dropout, marking the scope so the CPU noise tensor can be told apart."""
    if not training or p == 0.0:
        return x
    saved = SCOPE[0]
    SCOPE[0] = saved + "/dropout"
    try:
        return F.dropout(x, p=p, training=True)
    finally:
        SCOPE[0] = saved


# ---- Llama -----------------------------------------------------------------


class LlamaRMSNorm(nn.Module):
    def __init__(self, width, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width, dtype=dtype))
        self.eps = 1e-5

    def forward(self, x):
        input_dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(input_dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    b, k, s, d = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, k, n_rep, s, d).reshape(b, k * n_rep, s, d)


class LlamaAttention(nn.Module):
    def __init__(self, c, dtype):
        super().__init__()
        self.c = c
        h, a, k, d = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.q_proj = nn.Linear(h, a * d, bias=False, dtype=dtype)
        self.k_proj = nn.Linear(h, k * d, bias=False, dtype=dtype)
        self.v_proj = nn.Linear(h, k * d, bias=False, dtype=dtype)
        self.o_proj = nn.Linear(a * d, h, bias=False, dtype=dtype)

    def forward(self, x, cos, sin, mask):
        c = self.c
        b, s, _ = x.shape
        d = c["head_dim"]
        q = self.q_proj(x).view(b, s, -1, d).transpose(1, 2)
        k = self.k_proj(x).view(b, s, -1, d).transpose(1, 2)
        v = self.v_proj(x).view(b, s, -1, d).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        n_rep = c["num_attention_heads"] // c["num_key_value_heads"]
        # eager_attention_forward
        key = repeat_kv(k, n_rep)
        value = repeat_kv(v, n_rep)
        w = torch.matmul(q, key.transpose(2, 3)) * (d ** -0.5)
        w = w + mask[:, :, :, : key.shape[-2]]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        w = dropout(w, c.get("attention_dropout", 0.0), self.training)
        out = torch.matmul(w, value).transpose(1, 2).contiguous()
        return self.o_proj(out.reshape(b, s, -1).contiguous())


class LlamaMLP(nn.Module):
    def __init__(self, c, dtype):
        super().__init__()
        h, i = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(h, i, bias=False, dtype=dtype)
        self.up_proj = nn.Linear(h, i, bias=False, dtype=dtype)
        self.down_proj = nn.Linear(i, h, bias=False, dtype=dtype)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c, dtype):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(c["hidden_size"], dtype)
        self.self_attn = LlamaAttention(c, dtype)
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden_size"], dtype)
        self.mlp = LlamaMLP(c, dtype)

    def forward(self, x, cos, sin, mask):
        residual = x
        x = self.self_attn(self.input_layernorm(x), cos, sin, mask)
        x = residual + x
        residual = x
        x = self.mlp(self.post_attention_layernorm(x))
        return residual + x


class Llama(nn.Module):
    def __init__(self, c, dtype):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"], dtype=dtype)
        self.layers = nn.ModuleList(
            Tagged(f"layer.{i}", LlamaDecoderLayer(c, dtype)) for i in range(c["num_hidden_layers"])
        )
        self.norm = LlamaRMSNorm(c["hidden_size"], dtype)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False, dtype=dtype)
        self.checkpointed = set()

    def rotary(self, x, s):
        # LlamaRotaryEmbedding.forward: no_grad, fp32 math, [1, s, d] in x's dtype.
        d = self.c["head_dim"]
        with torch.no_grad():
            inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
            position_ids = torch.arange(s)[None, :]
            freqs = (inv_freq[None, :, None].float() @ position_ids[:, None, :].float()).transpose(1, 2)
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def forward(self, input_ids, labels):
        SCOPE[0] = "embedding"
        x = self.embed_tokens(input_ids)
        b, s = input_ids.shape
        cos, sin = self.rotary(x, s)
        SHARED.update({cos.storage().data_ptr(), sin.storage().data_ptr()})
        mask = torch.full((s, s), torch.finfo(x.dtype).min, dtype=x.dtype).triu(1)
        mask = mask[None, None].expand(b, 1, s, s).clone()
        for i, layer in enumerate(self.layers):
            SCOPE[0] = f"layer.{i}"
            if i in self.checkpointed:
                # GradientCheckpointingLayer: only hidden_states is a positional
                # tensor; the rest reaches the layer through a closure.
                x = torch.utils.checkpoint.checkpoint(
                    lambda t, layer=layer: layer(t, cos, sin, mask), x, use_reentrant=True
                )
            else:
                x = layer(x, cos, sin, mask)
        SCOPE[0] = "head"
        x = self.norm(x)
        logits = self.lm_head(x)
        return causal_lm_loss(logits, labels, self.c["vocab_size"])


# ---- GPT-2 -------------------------------------------------------------------


class Conv1D(nn.Module):
    """transformers pytorch_utils.Conv1D: weight (in, out), addmm with the bias."""

    def __init__(self, nf, nx, dtype):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf, dtype=dtype) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf, dtype=dtype))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    """transformers NewGELUActivation, written out in elementwise ops."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Block(nn.Module):
    def __init__(self, c, dtype):
        super().__init__()
        h = c["n_embd"]
        self.c = c
        self.ln_1 = nn.LayerNorm(h, eps=1e-5, dtype=dtype)
        self.c_attn = Conv1D(3 * h, h, dtype)
        self.c_proj = Conv1D(h, h, dtype)
        self.ln_2 = nn.LayerNorm(h, eps=1e-5, dtype=dtype)
        self.c_fc = Conv1D(4 * h, h, dtype)
        self.mlp_proj = Conv1D(h, 4 * h, dtype)

    def forward(self, x, mask):
        c = self.c
        b, s, h = x.shape
        a = c["n_head"]
        d = h // a
        residual = x
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
        q = q.view(b, s, a, d).transpose(1, 2)
        k = k.view(b, s, a, d).transpose(1, 2)
        v = v.view(b, s, a, d).transpose(1, 2)
        # eager_attention_forward (transformers 5.x)
        w = torch.matmul(q, k.transpose(-1, -2)) * (d ** -0.5)
        w = w + mask
        w = F.softmax(w, dim=-1).type(v.dtype)
        w = dropout(w, c["attn_pdrop"], self.training)
        out = torch.matmul(w, v).transpose(1, 2).reshape(b, s, h).contiguous()
        x = dropout(self.c_proj(out), c["resid_pdrop"], self.training)
        x = residual + x
        residual = x
        x = self.mlp_proj(gelu_new(self.c_fc(self.ln_2(x))))
        x = dropout(x, c["resid_pdrop"], self.training)
        return residual + x


class GPT2(nn.Module):
    def __init__(self, c, dtype):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"], dtype=dtype)
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"], dtype=dtype)
        self.h = nn.ModuleList(Tagged(f"layer.{i}", GPT2Block(c, dtype)) for i in range(c["n_layer"]))
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=1e-5, dtype=dtype)
        self.checkpointed = set()

    def forward(self, input_ids, labels):
        SCOPE[0] = "embedding"
        b, s = input_ids.shape
        position_ids = torch.arange(s)[None, :]
        x = self.wte(input_ids) + self.wpe(position_ids)
        x = dropout(x, self.c["embd_pdrop"], self.training)
        mask = torch.full((s, s), torch.finfo(x.dtype).min, dtype=x.dtype).triu(1)
        mask = mask[None, None].expand(b, 1, s, s).clone()
        for i, block in enumerate(self.h):
            SCOPE[0] = f"layer.{i}"
            if i in self.checkpointed:
                x = torch.utils.checkpoint.checkpoint(
                    lambda t, block=block: block(t, mask), x, use_reentrant=True
                )
            else:
                x = block(x, mask)
        SCOPE[0] = "head"
        x = self.ln_f(x)
        logits = F.linear(x, self.wte.weight)  # tied lm_head
        return causal_lm_loss(logits, labels, self.c["vocab_size"])


def causal_lm_loss(logits, labels, vocab_size):
    """transformers loss_utils.ForCausalLMLoss (4.49+): upcast, pad-shift the
    labels, cross-entropy with mean reduction."""
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=-100)
    shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    return F.cross_entropy(logits, shift_labels, ignore_index=-100, reduction="mean")


def shift_labels_torchtune(labels):
    """torchtune's recipes shift the labels once per batch: drop the first
    position and append ignore_index (recipes/full_finetune_single_device.py,
    torch.hstack with ignore_labels_cache)."""
    ignore = torch.full((labels.shape[0], 1), -100, dtype=labels.dtype)
    return torch.hstack((labels[..., 1:], ignore))


def chunk_cross_entropy(hidden, lm_head, labels):
    """torchtune LinearCrossEntropyLoss.compute_cross_entropy: one chunk, its
    tensors local to the call as in torchtune."""
    keep = labels != -100
    if keep.sum() == 0:
        keep[0] = True
    labels = labels[keep]
    hidden = hidden[keep]
    logits = lm_head(hidden)
    return F.cross_entropy(logits.float(), labels, reduction="sum", ignore_index=-100)


def chunked_linear_cross_entropy(hidden, lm_head, labels, n_chunks):
    """torchtune modules/loss LinearCrossEntropyLoss.forward (num_output_chunks
    = n): split the positions into n chunks, sum the chunks' cross-entropy,
    divide by the number of valid labels."""
    total = (labels != -100).sum()
    hidden_chunks = hidden.tensor_split(n_chunks, dim=1)
    label_chunks = labels.tensor_split(n_chunks, dim=1)
    loss = 0.0
    for i in range(len(hidden_chunks)):
        loss = loss + chunk_cross_entropy(hidden_chunks[i], lm_head, label_chunks[i])
    return loss / total


# ---- LoRA and QLoRA (PEFT) ---------------------------------------------------
#
# Written from a reading of PEFT (src/peft/tuners/lora/layer.py Linear.forward,
# tuners/lora/bnb.py Linear4bit.forward, utils/other.py
# prepare_model_for_kbit_training) and bitsandbytes (nn/modules.py
# Linear4bit.forward, autograd/_functions.py MatMul4Bit): the same ops in the
# same order, so autograd saves the same tensors.


def autocast_on():
    return torch.is_autocast_cpu_enabled() or torch.is_autocast_enabled()


class MatMul4Bit(torch.autograd.Function):
    """bitsandbytes MatMul4Bit: dequantise, F.linear; keeps only the packed
    weight (an attribute, not save_for_backward), dequantises again in backward."""

    @staticmethod
    def forward(ctx, a, packed, dequant):
        ctx.packed, ctx.dequant = packed, dequant
        return F.linear(a, dequant(packed).to(a.dtype))

    @staticmethod
    def backward(ctx, grad):
        return grad @ ctx.dequant(ctx.packed).to(grad.dtype), None, None


class Linear4bit(nn.Module):
    """A frozen 4-bit linear: one uint8 byte per two weights (the stand-in
    keeps a bf16 copy outside the model's parameters to dequantise from)."""

    def __init__(self, linear, compute_dtype):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.register_buffer("packed", torch.zeros(linear.weight.numel() // 2, dtype=torch.uint8))
        self._weight = linear.weight.detach().to(compute_dtype)
        self.compute_dtype = compute_dtype

    def forward(self, x):
        inp_dtype = x.dtype
        x = x.to(self.compute_dtype)
        out = MatMul4Bit.apply(x, self.packed, lambda p: self._weight)
        return out.to(inp_dtype)


class LoraLinear(nn.Module):
    """PEFT's lora.Linear (or lora.bnb.Linear4bit around a Linear4bit)."""

    def __init__(self, base, rank, dtype, p):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, rank, bias=False, dtype=dtype)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False, dtype=dtype)
        nn.init.normal_(self.lora_B.weight)
        self.p = p
        self.scaling = 2.0
        self.four_bit = isinstance(base, Linear4bit)

    def drop(self, x):
        return dropout(x, self.p, self.training)

    def forward(self, x):
        if self.four_bit:
            result = self.base_layer(x).clone()
            convert = not autocast_on()
            if convert:
                expected = result.dtype
                x = x.to(self.lora_A.weight.dtype)
            out = self.lora_B(self.lora_A(self.drop(x))) * self.scaling
            if convert:
                out = out.to(expected)
            return result + out
        result = self.base_layer(x)
        result_dtype = result.dtype
        x = x.to(self.lora_A.weight.dtype)  # _cast_input_dtype
        result = result + self.lora_B(self.lora_A(self.drop(x))) * self.scaling
        return result.to(result_dtype)


LORA_TARGETS = {"q": ("self_attn", "q_proj"), "k": ("self_attn", "k_proj"), "v": ("self_attn", "v_proj"),
                "o": ("self_attn", "o_proj"), "gate": ("mlp", "gate_proj"), "up": ("mlp", "up_proj"),
                "down": ("mlp", "down_proj")}


def apply_lora(model, targets, rank, adapter_dtype, p, qlora, compute_dtype):
    """get_peft_model (and, for QLoRA, a bitsandbytes 4-bit load and
    prepare_model_for_kbit_training) on a models.Llama."""
    for param in model.parameters():
        param.requires_grad_(False)
    for tagged in model.layers:
        layer = tagged.inner
        for name, (block, proj) in LORA_TARGETS.items():
            parent = getattr(layer, block)
            linear = getattr(parent, proj)
            base = Linear4bit(linear, compute_dtype) if qlora else linear
            setattr(parent, proj, LoraLinear(base, rank, adapter_dtype, p) if name in targets else base)
    if qlora and adapter_dtype == torch.float32:
        # prepare_model_for_kbit_training: every parameter that is not 4-bit to fp32.
        for param in model.parameters():
            if param.dtype in (torch.float16, torch.bfloat16) and not param.requires_grad:
                param.data = param.data.float()
    return model


def enable_input_require_grads(model):
    """transformers' enable_input_require_grads: the embedding output requires
    grad, so the (reentrant) checkpoints of the layers see an input that
    does. PEFT calls it when gradient checkpointing is on."""
    model.embed_tokens.register_forward_hook(lambda module, inp, out: out.requires_grad_(True))
