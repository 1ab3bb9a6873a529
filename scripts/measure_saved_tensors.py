"""Counts the tensors PyTorch's autograd saves for backward in torchvision's ResNet-18
ResNet-50, ViT-B/16 and ConvNeXt-T (re-declared here with the same layers as torchvision/models/,
so torchvision is not needed), with torch.autograd.graph.saved_tensors_hooks.
Prints the parameter count and the saved bytes per sample; tests/unit/test_layers.cpp
checks include/gpuplan/layers.hpp against these figures. Usage: python3 scripts/measure_saved_tensors.py
"""
import torch, torch.nn as nn, torch.nn.functional as F, sys
torch.manual_seed(0)
class Bottleneck(nn.Module):
    def __init__(s, inp, planes, stride, ds, exp=4):
        super().__init__()
        w=planes
        s.conv1=nn.Conv2d(inp,w,1,bias=False); s.bn1=nn.BatchNorm2d(w)
        s.conv2=nn.Conv2d(w,w,3,stride,1,bias=False); s.bn2=nn.BatchNorm2d(w)
        s.conv3=nn.Conv2d(w,planes*exp,1,bias=False); s.bn3=nn.BatchNorm2d(planes*exp)
        s.relu=nn.ReLU(inplace=True)
        s.ds=nn.Sequential(nn.Conv2d(inp,planes*exp,1,stride,bias=False),nn.BatchNorm2d(planes*exp)) if ds else None
    def forward(s,x):
        idt=x
        out=s.relu(s.bn1(s.conv1(x))); out=s.relu(s.bn2(s.conv2(out))); out=s.bn3(s.conv3(out))
        if s.ds is not None: idt=s.ds(x)
        out+=idt; return s.relu(out)
class Basic(nn.Module):
    def __init__(s, inp, planes, stride, ds):
        super().__init__()
        s.conv1=nn.Conv2d(inp,planes,3,stride,1,bias=False); s.bn1=nn.BatchNorm2d(planes)
        s.conv2=nn.Conv2d(planes,planes,3,1,1,bias=False); s.bn2=nn.BatchNorm2d(planes)
        s.relu=nn.ReLU(inplace=True)
        s.ds=nn.Sequential(nn.Conv2d(inp,planes,1,stride,bias=False),nn.BatchNorm2d(planes)) if ds else None
    def forward(s,x):
        idt=x
        out=s.relu(s.bn1(s.conv1(x))); out=s.bn2(s.conv2(out))
        if s.ds is not None: idt=s.ds(x)
        out+=idt; return s.relu(out)
def resnet(depth):
    cfg={18:(Basic,[2,2,2,2],1),50:(Bottleneck,[3,4,6,3],4)}[depth]
    B,blocks,exp=cfg
    layers=[nn.Conv2d(3,64,7,2,3,bias=False),nn.BatchNorm2d(64),nn.ReLU(inplace=True),nn.MaxPool2d(3,2,1)]
    inp=64
    for s,n in enumerate(blocks):
        planes=64<<s
        for b in range(n):
            stride=2 if (b==0 and s>0) else 1
            layers.append(B(inp,planes,stride,stride!=1 or inp!=planes*exp)); inp=planes*exp
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inp,1000)]
    return nn.Sequential(*layers)


# torchvision/models/vision_transformer.py, re-declared: ViT-B/16 with nn.MultiheadAttention
# (training mode runs F.multi_head_attention_forward's eager softmax(QK^T)V in torch 1.13).
class EncoderBlock(nn.Module):
    def __init__(s, d, heads, mlp):
        super().__init__()
        s.ln_1 = nn.LayerNorm(d, eps=1e-6); s.self_attention = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        s.ln_2 = nn.LayerNorm(d, eps=1e-6); s.mlp = nn.Sequential(nn.Linear(d, mlp), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp, d), nn.Dropout(0.0))
    def forward(s, inp):
        x = s.ln_1(inp); x, _ = s.self_attention(x, x, x, need_weights=False); x = x + inp
        return x + s.mlp(s.ln_2(x))
class ViT(nn.Module):
    def __init__(s, patch=16, d=768, depth=12, heads=12, mlp=3072, image=224):
        super().__init__()
        s.d = d; s.conv_proj = nn.Conv2d(3, d, patch, patch); L = (image // patch) ** 2 + 1
        s.class_token = nn.Parameter(torch.zeros(1, 1, d)); s.pos_embedding = nn.Parameter(torch.empty(1, L, d).normal_(std=0.02))
        s.layers = nn.Sequential(*[EncoderBlock(d, heads, mlp) for _ in range(depth)]); s.ln = nn.LayerNorm(d, eps=1e-6)
        s.head = nn.Linear(d, 1000)
    def forward(s, x):
        n = x.shape[0]; x = s.conv_proj(x).reshape(n, s.d, -1).permute(0, 2, 1)
        x = torch.cat([s.class_token.expand(n, -1, -1), x], dim=1)
        x = s.ln(s.layers(x + s.pos_embedding))
        return s.head(x[:, 0])
def measure(m, N):
    params = {p.data_ptr() for p in m.parameters()} | {b.data_ptr() for b in m.buffers()}
    seen = {}
    def pack(t):
        if t.data_ptr() not in params:
            key = (t.data_ptr(), t.dtype)
            seen[key] = max(seen.get(key, 0), t.numel() * t.element_size())
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        m(torch.randn(N, 3, 224, 224))
    return sum(seen.values()) / N

# torchvision/models/convnext.py, re-declared: ConvNeXt-T (stochastic depth 0.1, linearly increasing).
class LN2d(nn.LayerNorm):
    def forward(s, x):
        x = x.permute(0, 2, 3, 1); x = F.layer_norm(x, s.normalized_shape, s.weight, s.bias, s.eps); return x.permute(0, 3, 1, 2)
class Permute(nn.Module):
    def __init__(s, d): super().__init__(); s.d = d
    def forward(s, x): return x.permute(*s.d)
class SD(nn.Module):
    def __init__(s, p): super().__init__(); s.p = p
    def forward(s, x):
        if not s.training or s.p == 0.0: return x
        keep = 1 - s.p; noise = torch.empty([x.shape[0], 1, 1, 1]).bernoulli_(keep).div_(keep); return x * noise
class CNBlock(nn.Module):
    def __init__(s, dim, p):
        super().__init__()
        s.block = nn.Sequential(nn.Conv2d(dim, dim, 7, padding=3, groups=dim), Permute([0, 2, 3, 1]), nn.LayerNorm(dim, eps=1e-6),
                                nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim), Permute([0, 3, 1, 2]))
        s.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * 1e-6); s.sd = SD(p)
    def forward(s, x):
        r = s.layer_scale * s.block(x); r = s.sd(r); r += x; return r
def convnext_tiny():
    ch = [96, 192, 384, 768]; blocks = [3, 3, 9, 3]; total = sum(blocks); k = 0
    layers = [nn.Conv2d(3, 96, 4, 4), LN2d(96, eps=1e-6)]
    for i, (c, n) in enumerate(zip(ch, blocks)):
        for _ in range(n):
            layers.append(CNBlock(c, 0.1 * k / (total - 1.0))); k += 1
        if i < 3: layers += [LN2d(c, eps=1e-6), nn.Conv2d(c, ch[i + 1], 2, 2)]
    layers += [nn.AdaptiveAvgPool2d(1), LN2d(768, eps=1e-6), nn.Flatten(1), nn.Linear(768, 1000)]
    return nn.Sequential(*layers)

if __name__ == "__main__":
    for depth in (18,50):
        m=resnet(depth).train()
        print(depth, "params", sum(p.numel() for p in m.parameters()))
        params={p.data_ptr() for p in m.parameters()} | {b.data_ptr() for b in m.buffers()}
        seen={}
        def pack(t):
            if t.data_ptr() not in params:
                key=(t.data_ptr(), t.dtype)
                seen[key]=max(seen.get(key,0), t.numel()*t.element_size())
            return t
        N=2
        x=torch.randn(N,3,224,224)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t:t):
            y=m(x)
        tot=sum(seen.values())
        # fp32 on CPU: per-sample elements = (bytes - int64 indices)/4
        idx=sum(v for (k,dt),v in seen.items() if dt==torch.int64)
        small=sum(v for (k,dt),v in seen.items() if v< 64*1024 and dt!=torch.int64)
        print(depth, "saved bytes per sample", tot/N, "int64", idx/N, "float elems/sample", (tot-idx)/4/N, "small(<64K)", small)

    m = ViT().train()
    print("vit-b-16 params", sum(p.numel() for p in m.parameters()), "saved bytes per sample (fp32, eager attention)", measure(m, 1))
    m = convnext_tiny().train()
    print("convnext-tiny params", sum(p.numel() for p in m.parameters()), "saved bytes per sample (fp32)", measure(m, 1))
