"""Torch models traced for presets whose figures are approximations (no reference_models.py
entry, so their FLOPs are not re-checked against the preset): NCF / NeuMF and SSD300 with DLE's
default shapes. The traces say so in ``source``. Mask R-CNN has no model here (region sampling
and RoIAlign depend on the data): it gets the synthetic trace.
"""

from __future__ import annotations

import itertools

import torch
from torch import nn

from gpuselect.workloads.reference_models import _Bottleneck


class NeuMF(nn.Module):
    """NVIDIA DLE PyTorch/Recommendation/NCF defaults: MovieLens-20M's 138,493 users and 26,744
    items, GMF factors 64, MLP layers 256-256-128-64 (embeddings of 128 per side), one logit."""

    def __init__(
        self,
        users: int = 138_493,
        items: int = 26_744,
        factors: int = 64,
        layers: tuple[int, ...] = (256, 256, 128, 64),
    ) -> None:
        super().__init__()
        self.mf_user, self.mf_item = nn.Embedding(users, factors), nn.Embedding(items, factors)
        self.mlp_user, self.mlp_item = nn.Embedding(users, layers[0] // 2), nn.Embedding(items, layers[0] // 2)
        self.mlp = nn.Sequential(*(m for a, b in itertools.pairwise(layers) for m in (nn.Linear(a, b), nn.ReLU())))
        self.final = nn.Linear(layers[-1] + factors, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        u, i = x[:, 0], x[:, 1]
        mf = self.mf_user(u) * self.mf_item(i)
        mlp = self.mlp(torch.cat((self.mlp_user(u), self.mlp_item(i)), -1))
        out: torch.Tensor = self.final(torch.cat((mf, mlp), -1))
        return out


class SSD300(nn.Module):
    """NVIDIA DLE PyTorch/Detection/SSD (SSD300 v1.1): ResNet-50 to conv4_x with the last stride
    removed (38 x 38 features), five extra blocks (512, 512, 256, 256, 256 channels), 3x3
    location and class heads (81 classes; 4, 6, 6, 6, 4, 4 default boxes) on six feature maps."""

    def __init__(self, classes: int = 81) -> None:
        super().__init__()
        layers: list[nn.Module] = [
            nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1),
        ]
        cin = 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 1)):  # DLE: conv4_x keeps 38 x 38
            for i in range(blocks):
                layers.append(_Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.backbone = nn.Sequential(*layers)
        outs, mids = [1024, 512, 512, 256, 256, 256], [256, 256, 128, 128, 128]
        self.extra = nn.ModuleList()
        for i, (a, b, mid) in enumerate(zip(outs[:-1], outs[1:], mids, strict=True)):
            s, p = (2, 1) if i < 3 else (1, 0)
            self.extra.append(
                nn.Sequential(
                    nn.Conv2d(a, mid, 1, bias=False),
                    nn.BatchNorm2d(mid),
                    nn.ReLU(),
                    nn.Conv2d(mid, b, 3, stride=s, padding=p, bias=False),
                    nn.BatchNorm2d(b),
                    nn.ReLU(),
                )
            )
        boxes = [4, 6, 6, 6, 4, 4]
        self.loc = nn.ModuleList(nn.Conv2d(c, n * 4, 3, padding=1) for c, n in zip(outs, boxes, strict=True))
        self.conf = nn.ModuleList(nn.Conv2d(c, n * classes, 3, padding=1) for c, n in zip(outs, boxes, strict=True))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = [self.backbone(x)]
        for blk in self.extra:
            feats.append(blk(feats[-1]))
        b = x.shape[0]
        locs = [lo(f).reshape(b, 4, -1) for lo, f in zip(self.loc, feats, strict=True)]
        confs = [co(f).reshape(b, -1) for co, f in zip(self.conf, feats, strict=True)]
        return torch.cat((torch.cat(locs, 2).reshape(b, -1), *confs), 1)


# preset id -> (factory, one sample's input shape, input dtype, loss, labels per sample, what)
APPROX: dict[str, tuple[type[nn.Module], tuple[int, ...], torch.dtype, str, int, str]] = {
    "ncf": (NeuMF, (2,), torch.long, "bce", 1, "NeuMF with DLE's defaults (binary cross-entropy on one logit)"),
    "ssd": (
        SSD300,
        (3, 300, 300),
        torch.float32,
        "mse",
        8732 * 5,
        (
            "SSD300 with DLE's ResNet-50 backbone; the SSD loss (box matching, hard-negative mining) is approximated "
            "by a mean-squared loss on the heads' outputs"
        ),
    ),
}
