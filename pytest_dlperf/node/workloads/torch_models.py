"""The torch workload's models (torchvision's and the seeds' layouts, and a Llama-style decoder), the
inputs of one synthetic batch and each model's optimizer. Node-side, copied beside ``torch_ddp.py``;
imports nothing from the harness."""
from __future__ import annotations

import argparse
from collections.abc import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F

MODELS = ("resnet50", "vgg16", "bert-base", "arcface", "llama")
TOKEN_MODELS = ("llama",)  # a sample is a token: the step log counts tokens, the throughput is tokens/s


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck block: the stride sits on the 3x3 convolution."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.downsample = None
        if stride != 1 or inplanes != planes * self.expansion:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes * self.expansion, 1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * self.expansion),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = F.relu(self.bn2(self.conv2(out)), inplace=True)
        out = self.bn3(self.conv3(out))
        return F.relu(out + identity, inplace=True)


class ResNet50(nn.Module):
    """ResNet-50 v1.5 (25.6 M parameters with 1000 classes)."""

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2, padding=1),
        )
        layers: list[nn.Module] = []
        inplanes = 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
                inplanes = planes * Bottleneck.expansion
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class VGG16(nn.Module):
    """VGG-16 (configuration D, 138 M parameters with 1000 classes): the all-reduce dominates."""

    CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")

    def __init__(self, num_classes: int = 1000) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for v in self.CFG:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(channels, int(v), 3, padding=1), nn.ReLU(inplace=True)]
                channels = int(v)
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class BertBase(nn.Module):
    """BERT-base (12 layers, hidden 768, 12 heads, GELU FFN 3072) for sequence classification."""

    def __init__(self, seq_len: int, num_classes: int = 2, vocab: int = 30522) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, 768)
        self.positions = nn.Embedding(512, 768)
        self.norm = nn.LayerNorm(768, eps=1e-12)
        layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.1, activation="gelu", batch_first=True,
                                           layer_norm_eps=1e-12)
        self.encoder = nn.TransformerEncoder(layer, 12, enable_nested_tensor=False)
        self.pool = nn.Linear(768, 768)
        self.classifier = nn.Linear(768, num_classes)
        self.register_buffer("pos_ids", torch.arange(seq_len)[None, :], persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.tokens(ids) + self.positions(self.pos_ids))
        x = self.encoder(x)
        return self.classifier(torch.tanh(self.pool(x[:, 0])))


class ArcFace(nn.Module):
    """PLSC's ArcFace: ResNet-50 features -> 512-d embedding -> cos(theta + m) margin logits x s."""

    def __init__(self, num_classes: int, embedding: int = 512, s: float = 64.0, m: float = 0.5) -> None:
        super().__init__()
        self.backbone = ResNet50(num_classes=1)
        self.backbone.fc = nn.Identity()
        self.embed = nn.Sequential(nn.Linear(2048, embedding), nn.BatchNorm1d(embedding))
        self.weight = nn.Parameter(torch.randn(num_classes, embedding) * 0.01)
        self.s, self.m = s, m

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        emb = F.normalize(self.embed(self.backbone(x)), dim=1)
        cos = F.linear(emb, F.normalize(self.weight, dim=1)).float().clamp(-1 + 1e-7, 1 - 1e-7)
        target = F.one_hot(labels, cos.shape[1]).to(cos.dtype)
        return self.s * (target * torch.cos(torch.acos(cos) + self.m) + (1 - target) * cos)


class Rotary(nn.Module):
    """Rotary position embeddings (RoFormer; Llama's rotate-half form) for heads of ``head_dim``."""

    def __init__(self, seq_len: int, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv)
        self.register_buffer("cos", torch.cat([angles.cos()] * 2, dim=-1), persistent=False)
        self.register_buffer("sin", torch.cat([angles.sin()] * 2, dim=-1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # x: (batch, heads, seq, head_dim)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * self.cos.to(x.dtype) + rotated * self.sin.to(x.dtype)


class DecoderBlock(nn.Module):
    """Pre-norm Llama block: RMSNorm, causal self-attention with rotary positions through
    ``scaled_dot_product_attention``, RMSNorm, SwiGLU feed-forward; no biases."""

    def __init__(self, dim: int, heads: int, hidden: int) -> None:
        super().__init__()
        self.heads = heads
        self.attn_norm, self.ffn_norm = nn.RMSNorm(dim, eps=1e-5), nn.RMSNorm(dim, eps=1e-5)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.gate_up = nn.Linear(dim, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor, rotary: Rotary) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(rotary(q), rotary(k), v, is_causal=True)
        x = x + self.out(y.transpose(1, 2).reshape(b, t, d))
        gate, up = self.gate_up(self.ffn_norm(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    """A Llama-style decoder for next-token prediction: token embedding, ``layers`` blocks of width
    ``dim`` (heads of 64), a final RMSNorm and an untied output projection over ``vocab``."""

    def __init__(self, seq_len: int, dim: int, layers: int, vocab: int) -> None:
        super().__init__()
        heads = max(dim // 64, 1)
        hidden = 256 * -(-(8 * dim // 3) // 256)  # SwiGLU's 8/3 d, rounded up to 256 as Llama does
        self.embed = nn.Embedding(vocab, dim)
        self.rotary = Rotary(seq_len, dim // heads)
        self.blocks = nn.ModuleList(DecoderBlock(dim, heads, hidden) for _ in range(layers))
        self.norm = nn.RMSNorm(dim, eps=1e-5)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x, self.rotary)
        return self.head(self.norm(x))


def build_model(name: str, num_classes: int, size: int, llm: tuple[int, int, int] = (256, 4, 32000)) -> nn.Module:
    """The named model; ``size`` is the image side or the sequence length, ``llm`` the decoder's
    (width, layers, vocabulary)."""
    if name == "llama":
        return Llama(size, *llm)
    if name == "resnet50":
        return ResNet50(num_classes)
    if name == "vgg16":
        return VGG16(num_classes)
    if name == "bert-base":
        return BertBase(size)
    if name == "arcface":
        return ArcFace(num_classes)
    raise SystemExit(f"unknown model {name!r}; choose from {', '.join(MODELS)}")


def optimizer_for(model: str) -> Callable:
    """AdamW for the decoder (as LLM pretraining trains), SGD with momentum for the others (as the
    seeds' image and BERT benchmarks do)."""
    if model in TOKEN_MODELS:
        return lambda params: torch.optim.AdamW(params, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)
    return lambda params: torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4)


def synthetic_batch(args: argparse.Namespace, device: torch.device, cuda: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, labels) of one rank's batch, made once: the step trains on it every time."""
    b, size = args.batch_size, args.image_size
    if args.model in TOKEN_MODELS:  # next-token prediction: the labels are the inputs shifted by one
        ids = torch.randint(0, args.vocab, (b, size + 1), device=device)
        return ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
    if args.model == "bert-base":  # token ids, two classes
        return (torch.randint(0, 30522, (b, size), device=device), torch.randint(0, 2, (b,), device=device))
    images = torch.randn(b, 3, size, size, device=device)
    if cuda:
        images = images.contiguous(memory_format=torch.channels_last)
    return images, torch.randint(0, args.num_classes, (b,), device=device)


def llm_facts(model: nn.Module, args: argparse.Namespace) -> dict:
    """The decoder's shape and PaLM's analytic training FLOPs per token, 6N + 12·L·H·Q·T, with N the
    parameters but the input embedding's (a lookup: no FLOPs), as torchtitan counts them."""
    n = sum(p.numel() for p in model.parameters()) - model.embed.weight.numel()
    heads = model.blocks[0].heads
    attention = 12 * args.llm_layers * heads * (args.llm_dim // heads) * args.image_size
    return {"dim": args.llm_dim, "layers": args.llm_layers, "heads": heads, "vocab": args.vocab,
            "non_embedding_parameters": n, "analytic_flops_per_token": 6 * n + attention}
