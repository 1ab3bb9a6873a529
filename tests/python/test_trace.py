"""gp.trace and gp.Graph (python/gpuplan/_trace.py, docs/trace.md) against real PyTorch (CPU).

- torchvision's resnet50 traced with torch.fx: exactly torchvision's 25,557,032 parameters,
  the same layer graph as the catalog's resnet-50, and saved-for-backward bytes equal to
  what autograd's saved-tensor hooks record on the real module (tests/python/torch_saved.py)
  at batch 2, 64x64, within 2% (the derivation below makes them equal);
- a small transformer (nn.Embedding, nn.LayerNorm, nn.MultiheadAttention(batch_first=True),
  nn.Linear, nn.GELU, residual adds) traced against the same architecture written by hand
  as a graph file;
- every catalog model of gp.vision traced from its torchvision counterpart (resnet18/34/50/101/152,
  vgg16, vit_b_16/l_16/h_14, convnext_tiny/small/base/large, efficientnet_b0) at batch 1 and a
  small image: torchvision's parameter count exactly, the catalog graph's layers, parameters and
  saved-for-backward bytes (within 2%; in fact equal);
- densenet121 (no catalog graph; torch.cat of growing feature lists) and vit_b_16, convnext_tiny,
  efficientnet_b0, mobilenet_v2: saved-for-backward bytes against autograd's saved-tensor hooks, the remaining
  difference derived tensor by tensor;
- unmapped operations, a data-dependent branch, a module called twice and parameters no
  layer counts are one-line errors naming the node or the parameters (Hardtanh other than ReLU6 too).
Skipped cleanly where torch (or torchvision) is missing.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch_saved as ts  # noqa: E402

nn = torch.nn


@pytest.fixture(scope="module")
def resnet50():
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    return tv.models.resnet50()


def test_resnet50_params_graph_and_saved_bytes(gp, resnet50):
    x = torch.randn(2, 3, 64, 64)
    g = gp.trace(resnet50, x)
    # torchvision's model table: ResNet-50 has 25,557,032 parameters.
    assert g.params == 25_557_032 == sum(p.numel() for p in resnet50.parameters())
    assert g.input == {"c": 3, "d": 1, "h": 64, "w": 64}
    cat = gp.Graph.from_catalog("resnet-50", image=64)
    a, b = g.analyze(), cat.analyze()
    assert len(g) == len(cat) == 175
    assert a["params"] == b["params"]
    assert a["matmul_flops"] == b["matmul_flops"]
    # fx traces `out += identity` as an out-of-place add (the catalog: in place); the saved tensors
    # are the same ones: relu_ after the add saves the tensor it overwrites either way.
    assert abs(g.saved_bytes(4) / cat.saved_bytes(4) - 1) < 0.02
    assert g.saved_bytes(4) == cat.saved_bytes(4)
    # Every layer kind and shape as in the catalog (names differ: fx qualified names vs catalog names).
    for la, lb in zip(a["layers"], b["layers"]):
        assert (la["in"], la["out"], la["params"]) == (lb["in"], lb["out"], lb["params"])

    # Autograd's saved tensors on the real module, fp32 CPU, training mode. The hooks also see
    # batch norm's per-channel fp32 save_mean and save_invstd (derivatives.yaml native_batch_norm:
    # result1, result2), 2 x 4 B per channel per BN call, per batch rather than per sample:
    # layers.hpp leaves them out, so they are taken off the measurement.
    resnet50.train()
    measured = ts.saved_bytes(resnet50, lambda: resnet50(x))
    bn_stats = sum(8 * m.num_features for m in resnet50.modules() if isinstance(m, nn.BatchNorm2d))
    predicted = 2 * g.saved_bytes(4)
    assert abs((measured - bn_stats) / predicted - 1) < 0.02
    assert measured - bn_stats == predicted  # in fact exact: 2 x (per-image elements x 4 B + int64 indices)


def test_resnet50_estimate_is_gp_vision(gp, resnet50):
    g = gp.trace(resnet50, torch.randn(2, 3, 64, 64))
    r = g.estimate(gpu="a100-80gb", batch=64, precision="fp16-mixed", optimizer="sgd-momentum")
    v = gp.vision("resnet-50", gpu="a100-80gb", batch=64, image=64)
    assert isinstance(r, gp.VisionResult)
    assert r.params == v.params
    assert r.to_dict()["memory"] == v.to_dict()["memory"]
    assert r.to_dict()["time"] == v.to_dict()["time"]
    r8 = g.estimate(gpu="a100-80gb", batch=64, num_gpus=8, infer=False, images="1.28M", epochs=2)
    assert r8.to_dict()["num_gpus"] == 8
    assert r8.time_to_train is not None and abs(float(r8.time_to_train) * r8.images_per_second / 2.56e6 - 1) < 1e-9
    ri = g.estimate(gpu="t4", batch=8, infer=True)
    assert ri.to_dict()["memory"]["gradients"] == 0


# torchvision's model table (parameters at 224x224), the traced image size and the catalog name. ViT's
# position embedding is (1, tokens, D): at a smaller image it has (197 - tokens) x D fewer parameters
# (patch 16: 197 tokens at 224; patch 14: 257), checked below.
CATALOG = [
    ("resnet18", 11_689_512, 64, "resnet-18"),
    ("resnet34", 21_797_672, 64, "resnet-34"),
    ("resnet50", 25_557_032, 64, "resnet-50"),
    ("resnet101", 44_549_160, 64, "resnet-101"),
    ("resnet152", 60_192_808, 64, "resnet-152"),
    ("vgg16", 138_357_544, 32, "vgg-16"),
    ("vit_b_16", 86_567_656, 64, "vit-b-16"),
    ("vit_l_16", 304_326_632, 32, "vit-l-16"),
    ("vit_h_14", 632_045_800, 42, "vit-h-14"),
    ("convnext_tiny", 28_589_128, 32, "convnext-tiny"),
    ("convnext_small", 50_223_688, 32, "convnext-small"),
    ("convnext_base", 88_591_464, 32, "convnext-base"),
    ("convnext_large", 197_767_336, 32, "convnext-large"),
    ("efficientnet_b0", 5_288_548, 64, "efficientnet-b0"),
]


@contextlib.contextmanager
def zero_init():
    """Builds models without their random initialisation (torch.nn.init fills zeros): gp.trace needs
    shapes only, and ViT-H's 632M parameters then cost an allocation, not seconds of sampling."""
    saved = {k: v for k, v in vars(nn.init).items() if k.endswith("_") and not k.startswith("_") and callable(v)}

    def zero(t, *args, **kwargs):
        with torch.no_grad():
            return t.zero_()

    for k in saved:
        setattr(nn.init, k, zero)
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(nn.init, k, v)


@pytest.mark.parametrize("fn,table_params,image,name", CATALOG, ids=[c[3] for c in CATALOG])
def test_catalog_model_traced_from_torchvision(gp, fn, table_params, image, name):
    tv = pytest.importorskip("torchvision")
    kwargs = {"image_size": image} if fn.startswith("vit") else {}
    with zero_init():
        m = getattr(tv.models, fn)(**kwargs)
    g = gp.trace(m, torch.randn(1, 3, image, image))
    cat = gp.Graph.from_catalog(name, image=image)
    if fn.startswith("vit"):
        patch = 14 if fn.endswith("14") else 16
        tokens, tokens_224 = (image // patch) ** 2 + 1, (224 // patch) ** 2 + 1
        table_params -= (tokens_224 - tokens) * m.hidden_dim
    assert g.params == sum(p.numel() for p in m.parameters()) == cat.params == table_params
    assert g.input == {"c": 3, "d": 1, "h": image, "w": image}
    assert abs(g.saved_bytes(4) / cat.saved_bytes(4) - 1) < 0.02
    assert g.saved_bytes(4) == cat.saved_bytes(4)  # in fact the same tensors
    a, b = g.analyze(), cat.analyze()
    assert a["matmul_flops"] == b["matmul_flops"]
    # The same layers: kind, shapes and parameters one by one (class token, position embedding,
    # take_token, layer scale, squeeze-excitation mul included; p = 0 dropouts are no layers).
    assert [layer["kind"] for layer in g.layers] == [layer["kind"] for layer in cat.layers]
    for la, lb in zip(a["layers"], b["layers"]):
        assert (la["in"], la["out"], la["params"]) == (lb["in"], lb["out"], lb["params"])


def test_vit_convnext_efficientnet_map_parameters_and_stochastic_depth(gp):
    tv = pytest.importorskip("torchvision")
    with zero_init():
        vit = tv.models.vit_b_16(image_size=64)
        cnx = tv.models.convnext_tiny()
    g = gp.trace(vit, torch.randn(1, 3, 64, 64))
    by_kind = {layer["kind"]: layer for layer in g.layers}
    assert by_kind["class_token"]["name"] == "cat"
    assert by_kind["position_embedding"]["name"] == "add"
    # 16 patches + the class token, width 768: the position embedding holds 17 x 768 parameters.
    per_layer = g.analyze()["layers"]
    assert [la["params"] for la, layer in zip(per_layer, g.layers)
            if layer["kind"] in ("class_token", "position_embedding")] == [768, 17 * 768]
    g = gp.trace(cnx, torch.randn(1, 3, 32, 32))
    kinds = [layer["kind"] for layer in g.layers]
    # 18 CNBlocks: one layer scale each (gamma of C values); LayerNorm2d (F.layer_norm with the
    # module's weight and bias, between permutes) as a layer norm over the channel: stem, 3
    # downsamplings, the head; stochastic depth is no layer.
    assert kinds.count("layer_scale") == 18 and kinds.count("norm") == 18 + 1 + 3 + 1
    assert not any("stochastic" in layer["name"] for layer in g.layers)


def test_torchvision_saved_bytes_against_autograd(gp):
    """Saved-for-backward bytes of the traced graphs against autograd's saved-tensor hooks on the real
    modules (fp32, CPU, torch 1.13, training mode, batch 2, 64x64), differences derived tensor by tensor."""
    tv = pytest.importorskip("torchvision")
    x = torch.randn(2, 3, 64, 64)

    def measure(m):
        m.train()
        bn_stats = sum(8 * mod.num_features for mod in m.modules() if isinstance(mod, nn.BatchNorm2d))
        return ts.saved_bytes(m, lambda: m(x)) - bn_stats  # batch norm's per-channel save_mean/save_invstd

    # DenseNet-121 (torchvision's table: 7,978,856 parameters): every dense layer reads torch.cat of
    # the block's features so far, a concat extending the previous layer's; the cats save nothing and
    # the graph saves exactly what autograd does.
    with zero_init():  # the values do not change which tensors autograd saves
        m = tv.models.densenet121()
    g = gp.trace(m, x)
    assert g.params == 7_978_856 == sum(p.numel() for p in m.parameters())
    kinds = [layer["kind"] for layer in g.layers]
    # 58 dense layers in blocks of 6, 12, 24, 16: a block's first layer reads a cat of one tensor (a
    # copy, no layer), the others and the block's output one concat each.
    assert kinds.count("concat") == 58 and len(kinds) == 427
    assert measure(m) == 2 * g.saved_bytes(4)

    # ConvNeXt-T: stochastic depth multiplies by a (N, 1, 1, 1) noise, saved for the input's gradient
    # (4 B per sample) in the 17 blocks whose drop probability is above 0 (the first block's is 0).
    with zero_init():
        m = tv.models.convnext_tiny()
    g = gp.trace(m, x)
    measured, predicted = measure(m), 2 * g.saved_bytes(4)
    assert abs(measured / predicted - 1) < 0.02
    assert measured - predicted == 2 * 17 * 4

    # EfficientNet-B0: the same noise in its 9 residual blocks, and on the CPU torch 1.13's dropout
    # saves a float noise (4 B per element) where the graph counts CUDA's bool mask (1 B): 3 B x 1280.
    with zero_init():
        m = tv.models.efficientnet_b0()
    g = gp.trace(m, x)
    measured, predicted = measure(m), 2 * g.saved_bytes(4)
    assert abs(measured / predicted - 1) < 0.02
    assert measured - predicted == 2 * (9 * 4 + 3 * 1280)

    # MobileNetV2 (torchvision's table: 3,504,872 parameters): ReLU6(inplace=True) is hardtanh_, which
    # saves a copy of its input (not its result, as relu_ does); the classifier's dropout is the same
    # 3 B x 1280 as EfficientNet's.
    with zero_init():
        m = tv.models.mobilenet_v2()
    g = gp.trace(m, x)
    assert g.params == 3_504_872 == sum(p.numel() for p in m.parameters())
    assert {layer.get("act") for layer in g.layers if layer["kind"] == "activation"} == {"relu6"}
    measured, predicted = measure(m), 2 * g.saved_bytes(4)
    assert abs(measured / predicted - 1) < 0.02
    assert measured - predicted == 2 * 3 * 1280

    # hardtanh saves its input (not its output as relu does), in place a copy: conv -> ReLU6 -> conv
    # saves the first conv's output for the ReLU6 and the ReLU6's output for the second conv.
    for inplace in (False, True):
        m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU6(inplace=inplace), nn.Conv2d(4, 4, 3))
        g = gp.trace(m, x)
        assert measure(m) == 2 * g.saved_bytes(4) == 2 * 4 * (3 * 64 * 64 + 2 * 4 * 62 * 62)

    # ViT-B/16: torch 1.13 runs attention eagerly on the CPU (flash=False: the softmax output, no
    # logsumexp); each of the 12 attentions also saves the 0-dim float64 sqrt(head dim) that q is
    # divided by (a Python number wrapped as a tensor): 12 x 8 B per batch.
    with zero_init():
        m = tv.models.vit_b_16(image_size=64)
    g = gp.trace(m, x, flash=False)
    measured, predicted = measure(m), 2 * g.saved_bytes(4)
    assert abs(measured / predicted - 1) < 0.02
    assert measured - predicted == 12 * 8


class Block(nn.Module):
    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, ff)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(ff, d)

    def forward(self, x):
        y = self.ln1(x)
        a, _ = self.attn(y, y, y, need_weights=False)
        x = x + a
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))


class TinyLM(nn.Module):
    def __init__(self, vocab=100, d=32, heads=4, ff=64, depth=2) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, ff) for _ in range(depth))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens):
        x = self.emb(tokens)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


def tiny_lm_by_hand(vocab=100, d=32, heads=4, ff=64, depth=2, seq=16):
    """The same architecture written as a graph file (docs/trace.md)."""
    layers = [{"kind": "embedding", "vocab": vocab, "out": d}]
    for _ in range(depth):
        x = len(layers) - 1
        layers += [{"kind": "norm", "norm": "layer"}, {"kind": "attention", "heads": heads}]
        layers += [{"kind": "add", "skip": x}]
        y = len(layers) - 1
        layers += [{"kind": "norm", "norm": "layer"}, {"kind": "linear", "out": ff},
                   {"kind": "activation", "act": "gelu"}, {"kind": "linear", "out": d}, {"kind": "add", "skip": y}]
    layers += [{"kind": "norm", "norm": "layer"}, {"kind": "linear", "out": vocab}]
    return {"name": "tiny-lm", "input": {"c": 1, "h": seq}, "layers": layers}


def test_transformer_traced_equals_hand_written_graph(gp):
    torch.manual_seed(0)
    m = TinyLM()
    g = gp.trace(m, torch.randint(0, 100, (2, 16)), name="tiny-lm")
    hand = gp.Graph(tiny_lm_by_hand())
    # nn.Embedding 100x32; per block: 2 LayerNorms (2x64), attention (4 x 32x32 + 4 x 32),
    # Linear 32->64 and 64->32 with biases; final LayerNorm and head 32->100.
    block = 2 * 64 + (4 * 32 * 32 + 4 * 32) + (32 * 64 + 64) + (64 * 32 + 32)
    expected = 100 * 32 + 2 * block + 64 + (32 * 100 + 100)
    assert g.params == hand.params == expected == sum(p.numel() for p in m.parameters())
    strip = [{k: v for k, v in layer.items() if k != "name"} for layer in g.layers]
    assert strip == hand.layers
    assert g.input == hand.input
    a, b = g.analyze(), hand.analyze()
    for key in ("flops", "matmul_flops", "saved_elements", "saved_fixed_bytes", "peak_live_elements"):
        assert a[key] == b[key], key
    assert g.layers[2]["name"] == "blocks.0.attn"
    # flash=False: eager attention saves the softmax output (heads x L x L per sample) instead of
    # the fp32 logsumexp (heads x L x 4 B): 2 blocks x (4·16·16 elements) more, 2 x 4·16·4 B less.
    eager = gp.trace(m, torch.randint(0, 100, (2, 16)), flash=False).analyze()
    assert eager["saved_elements"] - a["saved_elements"] == 2 * 4 * 16 * 16
    assert a["saved_fixed_bytes"] - eager["saved_fixed_bytes"] == 2 * 4 * 16 * 4


def test_graph_json_round_trip_and_cli_file(gp, tmp_path):
    g = gp.Graph(tiny_lm_by_hand())
    p = tmp_path / "g.json"
    g.save(str(p))
    back = gp.Graph.load(str(p))
    assert back == g and back.to_json() == g.to_json()
    assert json.loads(g.to_json())["input"] == {"c": 1, "h": 16}
    assert "tiny-lm" in repr(g)


class Chunky(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x).chunk(2, dim=-1)[0]


class Branchy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return x


class Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(self.fc(x))


def test_unmapped_and_untraceable_are_named_errors(gp):
    x = torch.randn(2, 8)
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(Chunky(), x)
    msg = str(e.value)
    assert msg.startswith("trace: node 'chunk' (call_method 'chunk') has no layer kind; known: modules Conv1d/2d/3d")
    assert "\n" not in msg
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(Branchy(), x)
    assert str(e.value).startswith("trace: torch.fx cannot trace Branchy: symbolically traced variables cannot be used")
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(Tied(), x)
    assert str(e.value).startswith("trace: node 'fc' (call_module 'fc'): the module is called 2 times")
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(nn.Sequential(nn.Linear(8, 8), nn.Tanh()), x)
    assert str(e.value).startswith("trace: node '_1' (call_module '1') has no layer kind (torch.nn.modules.activation.Tanh)")
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(nn.Sequential(nn.Conv2d(3, 4, 3), nn.Hardtanh(-1.0, 1.0)), torch.randn(2, 3, 8, 8))
    assert str(e.value).startswith("trace: node '_1' (call_module '1') has no layer kind (torch.nn.modules.activation."
                                   "Hardtanh)")
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(nn.Linear(8, 8), (x, x))
    assert str(e.value).startswith("trace.example_inputs: must be one tensor")


def test_small_modules_map_exactly(gp):
    # A lone leaf module is traced as a call; a conv net with pooling, SE-style mul and upsampling.
    g = gp.trace(nn.Linear(8, 4), torch.randn(2, 8))
    assert g.layers == [{"kind": "linear", "out": 4, "name": "0"}] and g.params == 36

    class SE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding="same", bias=False)
            self.gn = nn.GroupNorm(2, 8)
            self.act = nn.SiLU()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Conv2d(8, 8, 1)
            self.gate = nn.Sigmoid()
            self.up = nn.Upsample(scale_factor=2)
            self.mp = nn.MaxPool2d(2)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            y = self.act(self.gn(self.conv(x)))
            y = y * self.gate(self.fc(self.pool(y)))
            return self.drop(torch.flatten(self.mp(self.up(y)), 1))

    m = SE()
    g = gp.trace(m, torch.randn(2, 3, 16, 16))
    assert g.params == sum(p.numel() for p in m.parameters()) == 8 * 27 + 16 + 72
    kinds = [layer["kind"] for layer in g.layers]
    assert kinds == ["conv", "norm", "activation", "pool", "conv", "activation", "mul", "upsample", "pool",
                     "flatten", "dropout"]
    assert g.layers[0]["padding"] == 1 and g.layers[6]["skip"] == 2
    assert g.analyze()["output"] == {"c": 8 * 16 * 16, "d": 1, "h": 1, "w": 1}


def test_calls_that_map_to_no_layer_are_host_ops(gp):
    # conv -> permute -> Linear over channels -> permute back -> contiguous -> ReLU: the three
    # calls without a layer ride on the next layer as host_ops (one dispatch each in eager
    # PyTorch), so the graph's eager floor counts 3 kernels + 3 calls; flatten, a view that is
    # a layer, counts one call and no kernel.
    class Mixer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 1)
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            y = self.fc(self.conv(x).permute(0, 2, 3, 1))
            return torch.flatten(torch.relu(y.permute(0, 3, 1, 2).contiguous()), 1)

    g = gp.trace(Mixer(), torch.randn(2, 3, 4, 4))
    assert [layer["kind"] for layer in g.layers] == ["conv", "linear", "activation", "flatten"]
    assert [layer.get("host_ops", 0) for layer in g.layers] == [0, 1, 2, 0]
    a = g.analyze()
    assert a["kernels"] == 3 and a["host_ops"] == 3 + 3 + 1


class Unpack(nn.Module):
    """`n, c, h, w = x.shape` and `a, b = t.chunk(2)`: tuple unpacking under torch.fx on any Python."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 10)

    def forward(self, x):
        n, c, h, w = x.shape
        y = self.conv(x).reshape(n, -1)
        a, b = y.chunk(2, dim=1)
        return self.fc(y)


def test_tuple_unpacking_is_followed(gp):
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(Unpack(), torch.randn(2, 3, 8, 8))
    # the shape unpacking traced; chunk (unpacked into a, b) is the first node without a layer kind
    assert str(e.value).startswith("trace: node 'chunk' (call_method 'chunk') has no layer kind")


class Unused(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.spare = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc(x)


def test_parameter_total_and_hostile_graphs(gp):
    # 8·3 + 3 = 27 parameters of a module forward never calls: the totals differ, the error names them.
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(Unused(), torch.randn(2, 8))
    assert str(e.value) == ("trace: the graph counts 72 parameters but the module has 99 "
                            "(not in any mapped layer: spare.weight, spare.bias)")
    with pytest.raises(gp.InvalidInputError, match=r"^trace.module: must be a torch.nn.Module \(got str\)"):
        gp.trace("resnet50", torch.randn(2, 8))
    with pytest.raises(gp.InvalidInputError, match=r"^trace.example_inputs: must have a batch dimension"):
        gp.trace(nn.Linear(8, 8), torch.randn(8))
    with pytest.raises(gp.ConfigError, match=r"^graph: malformed JSON"):
        gp.Graph("{")
    with pytest.raises(gp.ConfigError, match=r"^layers\[0\].kernel: must be in \[1, 16777216\] \(got 0\)"):
        gp.Graph({"input": {"c": 3, "h": 8, "w": 8}, "layers": [{"kind": "conv", "out": 4, "kernel": 0}]})
    with pytest.raises(gp.ConfigError, match=r"^layers\[0\].kind: must be one of linear, conv, "):
        gp.Graph({"input": {"c": 3}, "layers": [{"kind": "tanh"}]})
    with pytest.raises(gp.ConfigError, match=r"^graph: must be graph JSON text or a dict"):
        gp.Graph(42)
    with pytest.raises(gp.ConfigError, match=r"^graph: cannot open file"):
        gp.Graph.load("/nonexistent/graph.json")
    g = gp.Graph({"input": {"c": 8}, "layers": [{"kind": "linear", "out": 4}]})
    with pytest.raises(gp.ConfigError, match=r"^estimate.batch: must be between 1 and 1000000 \(got 0\)"):
        g.estimate(batch=0)
    with pytest.raises(gp.UnknownNameError, match=r"^estimate.gpu: unknown GPU .t5."):
        g.estimate(gpu="t5")


class PosEmb(nn.Module):
    def __init__(self, buffer: bool = False, twice: bool = False) -> None:
        super().__init__()
        pos = torch.zeros(1, 5, 8)
        if buffer:
            self.register_buffer("pos", pos)
        else:
            self.pos = nn.Parameter(pos)
        self.twice = twice
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        x = x + self.pos
        return self.fc(x + self.pos if self.twice else x)


class RawLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(4, 8))

    def forward(self, x):
        return nn.functional.linear(x, self.weight)


class Cat3(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = nn.Conv2d(3, 2, 1), nn.Conv2d(3, 3, 1), nn.Conv2d(3, 4, 1)

    def forward(self, x):
        return torch.cat([self.a(x), self.b(x), self.c(x)], 1)


def test_parameters_read_directly_and_multi_way_cat(gp):
    seq = torch.randn(2, 5, 8)
    m = PosEmb()
    g = gp.trace(m, seq)
    # a (1, 5, 8) parameter added to (N, 5, 8): a position embedding of 40 values, then Linear 8 -> 8
    assert [layer["kind"] for layer in g.layers] == ["position_embedding", "linear"]
    assert g.params == 40 + 72 == sum(p.numel() for p in m.parameters())
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(PosEmb(twice=True), seq)
    assert str(e.value) == "trace: the parameter 'pos' is read by 2 layers; it would be counted once per layer"
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(PosEmb(buffer=True), seq)
    assert str(e.value) == ("trace: node 'add' (call_function 'add') reads the buffer 'pos' as a position_embedding "
                            "(only parameters are modelled)")
    with pytest.raises(gp.InvalidInputError) as e:
        gp.trace(RawLinear(), torch.randn(2, 8))
    assert str(e.value).startswith("trace: node 'linear' (call_function 'linear') has no layer kind for the parameter "
                                   "'weight' used directly")
    # torch.cat of three tensors along the channel: two concats, left to right (2 + 3, then + 4 channels).
    g = gp.trace(Cat3(), torch.randn(2, 3, 4, 4))
    concats = [la for la in g.analyze()["layers"] if la["out"]["c"] in (5, 9)][-2:]
    assert [layer["kind"] for layer in g.layers][-2:] == ["concat", "concat"]
    assert [la["out"]["c"] for la in concats] == [5, 9]
    assert g.layers[-2]["name"] == "cat[1]" and g.layers[-1]["name"] == "cat"
    assert g.analyze()["saved_elements"] == 3 * 16  # the three 1x1 convs save the input; cat saves nothing
