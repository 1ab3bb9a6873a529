"""Stable Diffusion pipelines as layer graphs: gp.diffusion (C++ diffusion.hpp).

``gp.diffusion("sd-1.5", gpu="t4", batch=1, steps=50)`` returns a :class:`DiffusionResult`:
the pipeline's UNet, VAE and text encoders (and the SD 1.x safety checker) as layer graphs
with exact parameter counts, and the memory (fp16 weights of every component plus the
largest phase's working set) and time (seconds per denoising step, per pipeline call, per
image) of text-to-image inference on one GPU. ``config="DIR"`` reads a diffusers pipeline
folder instead of a catalog name. It prints as ``gpuplan diffusion`` does; ``to_dict()``
is the CLI's ``--json``. docs/diffusion.md derives every figure.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Dict, List, Optional

from . import _core
from ._helpers import _error, _int
from ._quantity import Seconds
from ._results import _GraphModelResult

__all__ = ["DiffusionResult", "diffusion"]


class DiffusionResult(_GraphModelResult):
    """One diffusion pipeline on one GPU: the figures of ``gpuplan diffusion``.
    ``step`` is the seconds of one denoising step (the UNet on 2 x batch under guidance),
    or of one training step."""

    @property
    def components(self) -> List[Dict[str, Any]]:
        """Per component: name, params, weights, working_set, batch, calls, seconds_per_call (inference)."""
        return copy.deepcopy(self._data.get("components", []))

    @property
    def seconds_per_image(self) -> Seconds:
        """Seconds of one pipeline call (or training step) divided by the batch."""
        return Seconds(self._data["time"]["seconds_per_image"])

    def __repr__(self) -> str:
        return (f"DiffusionResult({self._data['model']} on {self._data['gpu']}: {self.params:,} params, "
                f"{self._data['time']['step_seconds']:.4g} s/step, fits={self.fits})")


def diffusion(model: Optional[str] = None, gpu: str = "a100-80gb", batch: int = 1, steps: int = 50,
              resolution: Optional[int] = None, precision: str = "fp16", guidance: bool = True,
              config: Optional[str] = None, train: Optional[str] = None, lora_rank: int = 4,
              checkpointing: bool = False, ema: bool = False, prior_preservation: bool = False,
              train_text_encoder: bool = False, keep_grads: bool = False,
              optimizer: str = "adamw") -> DiffusionResult:
    """Memory and time of text-to-image inference with a Stable Diffusion pipeline —
    sd-1.5, sd-2.1, sdxl-base, or a diffusers folder given as ``config`` — on one GPU.
    ``resolution`` defaults to the pipeline's (512, 768, 1024); ``guidance=False`` runs
    the UNet on the batch instead of 2 x batch. ``train="full"`` or ``"lora"`` (with
    ``lora_rank``, ``checkpointing``; ``ema`` keeps the EMA copy of the UNet in full
    fine-tuning) estimates one fine-tuning step of the UNet instead; DreamBooth
    (examples/dreambooth/train_dreambooth.py) adds ``prior_preservation`` (class images
    join each batch), ``train_text_encoder`` and ``keep_grads`` (zero_grad(set_to_none=False),
    the script's default); ``optimizer`` is adamw, adam, adamw-8bit, sgd, sgd-momentum or lion."""
    if model is None and config is None:
        raise _error("diffusion.model", "name a pipeline (sd-1.5, sd-2.1, sdxl-base) or give config=DIR (got neither)")
    if model is not None and config is not None:
        raise _error("diffusion.config", f"give a pipeline name or config, not both (got {model!r} and {config!r})")
    if model is not None and not isinstance(model, str):
        raise _error("diffusion.model", f"must be a string (got {type(model).__name__} {model!r})")
    if config is not None and not isinstance(config, (str, os.PathLike)):
        raise _error("diffusion.config", f"must be a folder path (got {type(config).__name__} {config!r})")
    for name, v in (("gpu", gpu), ("precision", precision), ("optimizer", optimizer)):
        if not isinstance(v, str):
            raise _error(f"diffusion.{name}", f"must be a string (got {type(v).__name__} {v!r})")
    for name, flag in (("guidance", guidance), ("checkpointing", checkpointing), ("ema", ema),
                       ("prior_preservation", prior_preservation), ("train_text_encoder", train_text_encoder),
                       ("keep_grads", keep_grads)):
        if not isinstance(flag, bool):
            raise _error(f"diffusion.{name}", f"must be True or False (got {flag!r})")
    if train is not None and not isinstance(train, str):
        raise _error("diffusion.train", f"must be 'full' or 'lora' (got {type(train).__name__} {train!r})")
    rank = _int(lora_rank, "diffusion.lora_rank", 1, 4096)
    b = _int(batch, "diffusion.batch", 1, 4096)
    s = _int(steps, "diffusion.steps", 1, 10000)
    r = 0 if resolution is None else _int(resolution, "diffusion.resolution", 1, 16384)
    folder = None if config is None else os.fspath(config)
    return DiffusionResult(_core.diffusion(model or "", folder, gpu, b, s, r, precision, guidance, train, rank,
                                           checkpointing, ema, prior_preservation, train_text_encoder, keep_grads,
                                           optimizer))
