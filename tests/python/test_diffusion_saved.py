"""Ground truth from real PyTorch (CPU, fp32): what autograd saves in diffusers' UNet blocks.

The blocks are re-declared in plain PyTorch as diffusers writes their forward
(models/resnet.py ResnetBlock2D; models/attention.py FeedForward with GEGLU;
models/attention_processor.py Attention with the eager AttnProcessor: head_to_batch_dim,
baddbmm, softmax, bmm, batch_to_head_dim). The byte counts asserted here are the ones
tests/unit/test_diffusion.cpp asserts for the same blocks built as layers.hpp graphs, so
both sides meet at one recorded number each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from torch_saved import saved_bytes  # noqa: E402


class ResnetBlock2D(nn.Module):
    def __init__(self, cin, cout, temb, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin, eps=1e-5)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb, cout)
        self.norm2 = nn.GroupNorm(groups, cout, eps=1e-5)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.conv_shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time_emb_proj(F.silu(temb))[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        s = self.conv_shortcut(x) if self.conv_shortcut is not None else x
        return (s + h) / 1.0  # output_scale_factor


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm3 = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, 8 * dim)  # GEGLU(dim, 4 dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x):
        hidden, gate = self.proj(self.norm3(x)).chunk(2, dim=-1)
        return self.out(hidden * F.gelu(gate))


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.to_out = nn.Linear(dim, dim)

    def head_to_batch_dim(self, t):
        b, n, d = t.shape
        return t.reshape(b, n, self.heads, d // self.heads).permute(0, 2, 1, 3).reshape(b * self.heads, n, d // self.heads)

    def batch_to_head_dim(self, t):
        bh, n, dh = t.shape
        b = bh // self.heads
        return t.reshape(b, self.heads, n, dh).permute(0, 2, 1, 3).reshape(b, n, dh * self.heads)

    def forward(self, x):
        q, k, v = (self.head_to_batch_dim(p(x)) for p in (self.to_q, self.to_k, self.to_v))
        empty = torch.empty(q.shape[0], q.shape[1], k.shape[1], dtype=q.dtype)
        scores = torch.baddbmm(empty, q, k.transpose(-1, -2), beta=0, alpha=q.shape[-1] ** -0.5)
        out = torch.bmm(scores.softmax(dim=-1), v)
        return self.to_out(self.batch_to_head_dim(out))


def test_resnet_block():
    m = ResnetBlock2D(64, 128, 256, 32)
    x = torch.randn(1, 64, 16, 16, requires_grad=True)
    temb = torch.randn(1, 256, requires_grad=True)
    # norm1, SiLU, conv1 inputs (3 x 64·256) + SiLU(temb) and its input (2 x 256) + norm2, SiLU,
    # conv2 inputs (3 x 128·256) = 147,968 fp32 elements, + GroupNorm mean and rstd (2 x 2 x 32 x 4 B):
    # 592,384 B in layers.hpp. PyTorch adds 8 B: `/ output_scale_factor` saves the divisor as a
    # wrapped double scalar (DivBackward0), which layers.hpp leaves out.
    assert saved_bytes(m, lambda: m(x, temb)) == 147_968 * 4 + 512 + 8


def test_geglu_feed_forward():
    m = FeedForward(64)
    x = torch.randn(1, 16, 64, requires_grad=True)
    # LayerNorm input and output (2 x 1,024), the projection output both chunks view (8,192),
    # GELU's output (4,096) and the product (4,096) = 18,432, + LayerNorm mean and rstd (2 x 16 x 4 B)
    assert saved_bytes(m, lambda: m(x)) == 18_432 * 4 + 128


def test_eager_attention():
    m = Attention(64, 2)
    x = torch.randn(1, 16, 64, requires_grad=True)
    # x, the q, k, v copies (3 x 1,024), the softmax output (2 x 16 x 16) and to_out's input (1,024)
    assert saved_bytes(m, lambda: m(x)) == 5_632 * 4
