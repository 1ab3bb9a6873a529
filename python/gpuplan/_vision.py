"""Image models as layer graphs: gp.vision (C++ layers.hpp, vision.hpp).

``gp.vision("resnet-50", gpu="t4", batch=64, image=224)`` returns a :class:`VisionResult`:
torchvision's model as a layer graph with its exact parameter count and FLOPs, and the
memory (weights, gradients, optimizer state, saved activations) and time (step,
images/s, time to train for ``images`` × ``epochs``) of training it, or running it with
``infer=True``, on one GPU. It prints as ``gpuplan vision`` does; ``to_dict()`` is the
CLI's ``--json``. docs/vision.md derives every figure.
"""

from __future__ import annotations

import numbers
from typing import Any, Optional, Tuple, Union

from . import _core
from ._helpers import _error, _int, _number
from ._quantity import Bytes, Seconds
from ._results import _GraphModelResult

__all__ = ["VisionResult", "vision"]


class VisionResult(_GraphModelResult):
    """One image model on one GPU: the figures of ``gpuplan vision``."""

    @property
    def forward_macs_per_image(self) -> float:
        """Multiply-adds of convolutions, linear layers and attention per image (torchvision's GFLOPS column)."""
        return float(self._data["forward_macs_per_image"])

    @property
    def activations(self) -> Bytes:
        """Saved activations (training) or the live working set (inference), bytes."""
        return Bytes(self._data["memory"]["activations"])

    @property
    def time_to_train(self) -> Optional[Seconds]:
        """Seconds to see `images` x `epochs` images (None without `images`)."""
        t = self._data["time"].get("to_train_seconds")
        return None if t is None else Seconds(t)

    def __repr__(self) -> str:
        return (f"VisionResult({self._data['model']} on {self._data['gpu']}: {self.params:,} params, "
                f"{self.images_per_second:.4g} images/s, fits={self.fits})")


def vision(model: str, gpu: str = "a100-80gb", batch: int = 32, image: Optional[int] = None, classes: int = 1000,
           precision: str = "fp16-mixed", optimizer: str = "sgd-momentum", infer: bool = False,
           images: Union[None, int, float, str] = None, epochs: float = 1, num_gpus: int = 1,
           checkpointing: bool = False, zero: int = 0) -> VisionResult:
    """Memory and time of training (or, with ``infer=True``, running) a torchvision image
    model — resnet-18/34/50/101/152, vgg-16, vit-b-16, vit-l-16, vit-h-14,
    convnext-tiny/small/base/large, efficientnet-b0..b4 — on one GPU. ``image`` (pixels)
    defaults to the crop size of the model's torchvision weights: 224, EfficientNet-B1..B4
    240, 288, 300, 380. ``images`` (a count or an amount such
    as "1.28M") and ``epochs`` give the time to train; ``num_gpus`` > 1 trains data-parallel
    (DDP) with ``batch`` images per GPU, ``zero`` 1-3 sharding the optimizer state, then the
    gradients, then the weights over them (ZeRO stages; 3 is FSDP's FULL_SHARD, each residual
    block a unit); ``checkpointing=True`` checkpoints every residual block
    (torch.utils.checkpoint, timm's set_grad_checkpointing)."""
    if not isinstance(model, str):
        raise _error("vision.model", f"must be a string (got {type(model).__name__} {model!r})")
    im = None if image is None else _int(image, "vision.image", 1, 1 << 20)
    c = _int(classes, "vision.classes", 1, 1 << 30)
    run = _run_args("vision", gpu, batch, precision, optimizer, infer, images, epochs, num_gpus, checkpointing, zero)
    return VisionResult(_core.vision(model, run[0], run[1], im, c, *run[2:]))


def _run_args(prefix: str, gpu: Any, batch: Any, precision: Any, optimizer: Any, infer: Any,
              images: Any, epochs: Any, num_gpus: Any, checkpointing: Any,
              zero: Any) -> Tuple[str, int, str, str, bool, Optional[str], float, int, bool, int]:
    """The checked run settings gp.vision and Graph.estimate share, in the bindings' order:
    (gpu, batch, precision, optimizer, infer, images as the CLI's text, epochs, num_gpus, checkpointing, zero)."""
    for name, v in (("gpu", gpu), ("precision", precision), ("optimizer", optimizer)):
        if not isinstance(v, str):
            raise _error(f"{prefix}.{name}", f"must be a string (got {type(v).__name__} {v!r})")
    for name, flag in (("infer", infer), ("checkpointing", checkpointing)):
        if not isinstance(flag, bool):
            raise _error(f"{prefix}.{name}", f"must be True or False (got {flag!r})")
    b = _int(batch, f"{prefix}.batch", 1, 1_000_000)
    ep = _number(epochs, f"{prefix}.epochs")
    n = _int(num_gpus, f"{prefix}.num_gpus", 1, 65536)
    z = _int(zero, f"{prefix}.zero", 0, 3)
    dataset: Optional[str] = None
    if images is not None:
        if isinstance(images, str):
            dataset = images
        elif isinstance(images, numbers.Real) and not isinstance(images, bool):
            dataset = repr(float(_number(images, f"{prefix}.images")))
        else:
            raise _error(f"{prefix}.images", f"must be a number or an amount such as '1.28M' (got {images!r})")
    return gpu, b, precision, optimizer, infer, dataset, ep, n, checkpointing, z
