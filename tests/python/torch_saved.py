"""Measure what PyTorch autograd saves for backward, and gpuplan's formula for it.

Helper for test_torch_ground_truth.py (and runnable as a script to print the
measurements recorded in tests/unit/test_memory.cpp):

    /usr/bin/python3 tests/python/torch_saved.py

`saved_bytes(fn)` runs fn() under torch.autograd.graph.saved_tensors_hooks and sums
the bytes of the distinct storages autograd packs, excluding parameters and
buffers (they are weights, not activations). Views of one storage count once.

`formula_block_bytes(...)` restates gpuplan's per-block activation formula
(include/gpuplan/detail/memory_terms.hpp, block_activations, not compiled, no
tp/sp/cp) so the comparison runs even where the C++ bindings are not built.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---------------------------------------------------------------------------
# measurement

def saved_bytes(module: nn.Module, fn) -> int:
    """Bytes of distinct non-parameter storages saved for backward while fn() runs."""
    exclude = {p.data_ptr() for p in module.parameters()} | {b.data_ptr() for b in module.buffers()}
    seen: dict[int, int] = {}

    def pack(t: torch.Tensor):
        st = t.storage()
        ptr = st.data_ptr()
        if ptr not in exclude and ptr not in seen:
            seen[ptr] = st.size() * st.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    return sum(seen.values())


def optimizer_state_bytes(opt: torch.optim.Optimizer) -> int:
    """Bytes of every tensor in the optimizer state, except per-parameter `step` scalars."""
    total = 0
    for state in opt.state.values():
        for key, v in state.items():
            if torch.is_tensor(v) and key != "step":
                total += v.numel() * v.element_size()
    return total


# ---------------------------------------------------------------------------
# a small llama-style block written in torch (eager attention through explicit
# matmuls, RMSNorm as torchtune writes it (HF and litgpt keep the same tensors), SwiGLU,
# GQA via expanded K/V)

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):  # torchtune's RMSNorm (HF and litgpt keep the same tensors)
        xf = x.float()
        normed = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
        return normed * self.weight


class LoRALinear(nn.Module):
    """PEFT's LoRA Linear forward with dropout 0: base(x) + B(A(x.to(fp32))) · scaling, the
    adapters in fp32 (autocast_adapter_dtype=True; peft tuners/lora/layer.py)."""

    def __init__(self, base: nn.Linear, r: int):
        super().__init__()
        self.base = base
        self.A = nn.Linear(base.in_features, r, bias=False)
        self.B = nn.Linear(r, base.out_features, bias=False)

    def forward(self, x):
        result = self.base(x)
        return result + (self.B(self.A(x.to(torch.float32))) * 2.0).to(result.dtype)


class LlamaBlock(nn.Module):
    def __init__(self, h: int, heads: int, kv_heads: int, ffn: int):
        super().__init__()
        self.h, self.heads, self.kv_heads, self.d = h, heads, kv_heads, h // heads
        self.n1, self.n2 = RMSNorm(h), RMSNorm(h)
        self.q = nn.Linear(h, heads * self.d, bias=False)
        self.k = nn.Linear(h, kv_heads * self.d, bias=False)
        self.v = nn.Linear(h, kv_heads * self.d, bias=False)
        self.o = nn.Linear(heads * self.d, h, bias=False)
        self.gate = nn.Linear(h, ffn, bias=False)
        self.up = nn.Linear(h, ffn, bias=False)
        self.down = nn.Linear(ffn, h, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        y = self.n1(x)
        q = self.q(y).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv_heads, self.d).transpose(1, 2)
        v = self.v(y).view(b, s, self.kv_heads, self.d).transpose(1, 2)
        rep = self.heads // self.kv_heads
        k = k.repeat_interleave(rep, dim=1)  # HF repeat_kv: K/V expanded to all heads
        v = v.repeat_interleave(rep, dim=1)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.d)
        mask = torch.full((s, s), float("-inf"), dtype=scores.dtype).triu(1)
        probs = F.softmax((scores + mask).float(), dim=-1).to(x.dtype)
        att = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, self.heads * self.d)
        x = x + self.o(att)
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


# ---------------------------------------------------------------------------
# gpuplan's formula, restated (bytes for one block, one micro-batch of b x s)

def formula_block_bytes(*, b, s, h, heads, ffn, e, norm, mlp, act, drop, inner_drop=False,
                        mixed=False, q_dim=None, mask_bytes=1, frozen=False, lora_qv_rank=0):
    """Mirror of block_activations() for the non-compiled, eager-attention, tp=1 case.

    mask_bytes: 1 is CUDA's bool dropout mask (what gpuplan assumes); on the CPU,
    torch 1.13 implements dropout as a multiplication by a float noise tensor, so the
    CPU measurement is compared with mask_bytes = e.
    frozen: the base's weights do not train (PEFT, memory_terms.hpp frozen_linears): a linear
    keeps nothing, a norm only its input. lora_qv_rank: LoRA adapters on q and v, fp32 as
    PEFT's autocast_adapter_dtype makes them: each keeps a cast copy of its input (shared
    when the block is fp32) and its r-wide output.
    """
    qd = q_dim or h
    stats = 8
    if norm == "rmsnorm":
        parts = (4 * h, e * h, e * h)  # fp32 input, the cast-back normalised tensor, the linear's input
    else:
        parts = (4 * h if mixed else e * h, 0, e * h)
    nb = parts[0] + (0 if frozen else parts[1] + parts[2]) + stats
    seq = 2 * nb + (2 * h * mask_bytes if drop else 0)
    tp = e * (qd + 2 * qd) + (0 if frozen else e * qd)  # q, k, v (expanded), attention output (o_proj's)
    s2 = heads * (4.0 + ((mask_bytes + e) if drop else (e if e < 4 else 0)))
    if mlp == "gated":
        tp += (3 if frozen else 4) * ffn * e + (ffn * (mask_bytes + e) if inner_drop else 0)
    else:
        tp += (ffn * e if act == "relu" else (1 if frozen else 2) * ffn * e) + (ffn * (mask_bytes + e) if inner_drop else 0)
    if lora_qv_rank:
        tp += (2 * 4 * h if e < 4 else 4 * h) + 2 * 4 * lora_qv_rank
    T = b * s
    return T * (tp + seq) + T * s * s2


def torch113_mean_artifact(*, b, s, h, norms=2):
    """torch < 2.0: MeanBackward1 saves its input (the fp32 x**2 of a hand-written RMSNorm).

    PyTorch 2.x saves only the sizes, which is what gpuplan models; the CPU
    measurement here (Debian's torch 1.13) is corrected by this amount.
    """
    major = int(torch.__version__.split(".")[0])
    return b * s * norms * 4 * h if major < 2 else 0


if __name__ == "__main__":
    from test_torch_ground_truth import SHAPES, measure_encoder_layer, measure_llama_block

    torch.manual_seed(0)
    for b, s, h, heads, ffn in SHAPES:
        for norm_first in (False, True):
            for p in (0.0, 0.1):
                print("encoder", b, s, h, heads, ffn, "norm_first", norm_first, "dropout", p,
                      measure_encoder_layer(b, s, h, heads, ffn, norm_first, p))
        for dtype in (torch.float32, torch.bfloat16):
            print("llama", b, s, h, heads, ffn, dtype, measure_llama_block(b, s, h, heads, heads // 2, ffn, dtype))
