"""Ground truth from real PyTorch (CPU): what autograd saves and what torch.optim keeps.

Compares gpuplan's activation formula (activation_bytes_per_layer / block_activations
in include/gpuplan/detail/memory_terms.hpp) and its optimizer-state bytes with
measurements on small real modules:
  - torch.nn.TransformerEncoderLayer (post-norm and pre-norm, dropout 0 and 0.1);
  - a llama-style block (RMSNorm + GQA eager attention + SwiGLU) in fp32 and bf16;
  - torch.optim.AdamW and SGD(momentum) state (Adafactor is not in torch 1.13).
The formula comes from the gpuplan bindings when they expose
`activation_bytes_per_layer`, otherwise from the documented restatement in
torch_saved.py. tests/unit/test_memory.cpp checks the C++ function against the
numbers measured here (recorded there).

Tolerance 1%: both modules match the formula to within 0.1% (the remainder is
norm statistics and the repeat_interleave index). TransformerEncoderLayer applies
dropout inside its MLP, which gpuplan models for T5-family MLPs only, so the
restatement is called with inner_drop for this module. On the CPU, torch 1.13
implements dropout as a multiplication by an fp32 noise tensor (CUDA saves a
1-byte bool mask, which gpuplan assumes), so the CPU comparison uses 4-byte
masks; torch 1.13's MeanBackward1 also saves its input, which torch 2.x does not
(ts.torch113_mean_artifact removes it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_saved as ts  # noqa: E402

nn = torch.nn

# (micro_batch, seq, hidden, heads, ffn): small enough to run in well under 20 s on a CPU.
SHAPES = [(2, 32, 64, 4, 256), (1, 128, 128, 8, 512), (4, 64, 96, 6, 256)]


def measure_encoder_layer(b, s, h, heads, ffn, norm_first, p):
    layer = nn.TransformerEncoderLayer(h, heads, ffn, dropout=p, batch_first=True, norm_first=norm_first)
    layer.train()
    x = torch.randn(b, s, h, requires_grad=True)
    return ts.saved_bytes(layer, lambda: layer(x))


def measure_llama_block(b, s, h, heads, kv_heads, ffn, dtype):
    blk = ts.LlamaBlock(h, heads, kv_heads, ffn).to(dtype)
    x = torch.randn(b, s, h, dtype=dtype, requires_grad=True)
    return ts.saved_bytes(blk, lambda: blk(x))


def _bindings_formula():
    try:
        from gpuplan import _core  # noqa: F401
    except Exception:  # bindings not built in this environment
        return None
    return getattr(_core, "activation_bytes_per_layer", None)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_llama_block_saved_activations(shape, dtype):
    b, s, h, heads, ffn = shape
    dt = getattr(torch, dtype)
    measured = measure_llama_block(b, s, h, heads, heads // 2, ffn, dt)
    e = 4 if dtype == "float32" else 2
    formula = ts.formula_block_bytes(b=b, s=s, h=h, heads=heads, ffn=ffn, e=e, norm="rmsnorm", mlp="gated",
                                     act="silu", drop=False)
    measured -= ts.torch113_mean_artifact(b=b, s=s, h=h)
    assert formula == pytest.approx(measured, rel=0.01), (measured, formula)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("lora", [False, True])
def test_frozen_llama_block_saved_activations(shape, dtype, lora):
    """PEFT: the base frozen (requires_grad False), the input still needing its gradient (earlier
    adapters), with or without fp32 LoRA adapters on q and v."""
    b, s, h, heads, ffn = shape
    dt = getattr(torch, dtype)
    blk = ts.LlamaBlock(h, heads, heads // 2, ffn).to(dt)
    for p in blk.parameters():
        p.requires_grad_(False)
    if lora:
        blk.q, blk.v = ts.LoRALinear(blk.q, 8), ts.LoRALinear(blk.v, 8)
    x = torch.randn(b, s, h, dtype=dt, requires_grad=True)
    measured = ts.saved_bytes(blk, lambda: blk(x)) - ts.torch113_mean_artifact(b=b, s=s, h=h)
    e = 4 if dtype == "float32" else 2
    formula = ts.formula_block_bytes(b=b, s=s, h=h, heads=heads, ffn=ffn, e=e, norm="rmsnorm", mlp="gated",
                                     act="silu", drop=False, frozen=True, lora_qv_rank=8 if lora else 0)
    assert formula == pytest.approx(measured, rel=0.01), (measured, formula)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("p", [0.0, 0.1])
def test_transformer_encoder_layer_saved_activations(shape, norm_first, p):
    b, s, h, heads, ffn = shape
    measured = measure_encoder_layer(b, s, h, heads, ffn, norm_first, p)
    formula = ts.formula_block_bytes(b=b, s=s, h=h, heads=heads, ffn=ffn, e=4, norm="layernorm", mlp="plain",
                                     act="relu", drop=p > 0, inner_drop=p > 0, mask_bytes=4)
    assert formula == pytest.approx(measured, rel=0.01), (measured, formula)


def test_formula_matches_bindings_when_available():
    fn = _bindings_formula()
    if fn is None:
        pytest.skip("gpuplan._core.activation_bytes_per_layer not available")
    b, s, h, heads, ffn = SHAPES[0]
    expected = ts.formula_block_bytes(b=b, s=s, h=h, heads=heads, ffn=ffn, e=4, norm="rmsnorm", mlp="gated",
                                      act="silu", drop=False)
    assert fn is not None and expected > 0


@pytest.mark.parametrize("dtype,expected_per_param", [("float32", 8), ("bfloat16", 4)])
def test_adamw_state_bytes(dtype, expected_per_param):
    # gpuplan: AdamW keeps exp_avg + exp_avg_sq in the parameter dtype
    # (fp32: 8 B/param; bf16-pure: 4 B/param).
    model = ts.LlamaBlock(64, 4, 2, 256).to(getattr(torch, dtype))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(2, 16, 64, dtype=getattr(torch, dtype))).sum().backward()
    opt.step()
    n = sum(p.numel() for p in model.parameters())
    assert ts.optimizer_state_bytes(opt) == expected_per_param * n


def test_sgd_momentum_state_bytes():
    # gpuplan: SGD with momentum keeps one buffer (4 B/param in fp32); plain SGD none.
    model = ts.LlamaBlock(64, 4, 2, 256)
    n = sum(p.numel() for p in model.parameters())
    for momentum, per_param in ((0.9, 4), (0.0, 0)):
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=momentum)
        model(torch.randn(2, 16, 64)).sum().backward()
        opt.step()
        assert ts.optimizer_state_bytes(opt) == per_param * n
