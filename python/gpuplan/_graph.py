"""A layer graph (C++ layers.hpp) in its JSON form: gp.Graph (docs/trace.md).

A :class:`Graph` comes from gp.trace (a PyTorch module), a graph file (``Graph.load``,
``gpuplan vision --export-graph``) or the gp.vision catalog (``Graph.from_catalog``).
It holds the exact parameter count, FLOPs and saved-for-backward bytes
(``analyze()``), its JSON (``to_json()``, ``save()``) and the memory and time of
training or running it (``estimate()``, the figures of ``gp.vision``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Union

from . import _core
from ._helpers import _error, _int, _number
from ._vision import VisionResult, _run_args

__all__ = ["Graph"]


class Graph:
    """A layer graph (layers.hpp) in its JSON form (io/graph_json.hpp, docs/trace.md)."""

    def __init__(self, graph: Union[str, Dict[str, Any]]) -> None:
        if not isinstance(graph, (str, dict)):
            raise _error("graph", f"must be graph JSON text or a dict (got {type(graph).__name__})")
        try:
            text = graph if isinstance(graph, str) else json.dumps(graph)
        except (TypeError, ValueError) as e:
            raise _error("graph", f"must hold only JSON values ({e})") from None
        self._text: str = _core.graph_normalize(text)  # read, checked (layers::analyze), written back
        self._data: Dict[str, Any] = json.loads(self._text)
        self._analysis: Optional[Dict[str, Any]] = None

    @classmethod
    def load(cls, path: str) -> "Graph":
        """Reads a graph file (as written by save() or `gpuplan vision --export-graph`): a regular file
        of at most 16 MiB (the readers' one file reader: a directory, FIFO or /dev/zero is a ConfigError)."""
        raw = _core.read_text_file(os.fspath(path), "graph")
        try:
            return cls(raw.decode("utf-8"))
        except UnicodeDecodeError as e:
            raise _error("graph", f"file is not UTF-8 text (byte {e.start})") from None

    @classmethod
    def from_catalog(cls, model: str, image: Optional[int] = None, classes: int = 1000) -> "Graph":
        """A catalog model of gp.vision (resnet-50, vit-b-16, ...) as a graph; ``image`` defaults to the
        crop size of the model's torchvision weights (224; EfficientNet-B1..B4 240 to 380), as gp.vision's."""
        if not isinstance(model, str):
            raise _error("graph.model", f"must be a string (got {type(model).__name__} {model!r})")
        size = None if image is None else _int(image, "graph.image", 1, 1 << 20)
        return cls(_core.vision_model_graph(model, size, _int(classes, "graph.classes", 1, 1 << 30)))

    @property
    def name(self) -> str:
        """The graph's name (the module's class name for gp.trace, unless given)."""
        return str(self._data.get("name", ""))

    @property
    def input(self) -> Dict[str, int]:
        """The per-sample input shape {c, d, h, w} (d, h, w default to 1)."""
        s = {"c": 1, "d": 1, "h": 1, "w": 1}
        s.update(self._data["input"])
        return s

    @property
    def layers(self) -> List[Dict[str, Any]]:
        """The layers as the JSON lists them (a copy)."""
        return json.loads(json.dumps(self._data["layers"]))

    def __len__(self) -> int:
        return len(self._data["layers"])

    def to_dict(self) -> Dict[str, Any]:
        """The graph file as a dict (a copy)."""
        return json.loads(self._text)

    def to_json(self, indent: Optional[int] = 1) -> str:
        """The graph file's text (the canonical form the C++ writer makes)."""
        return self._text if indent == 1 else json.dumps(self._data, indent=indent)

    def save(self, path: str) -> None:
        """Writes the graph file: `gpuplan vision --graph PATH` reads it."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._text + "\n")

    def analyze(self) -> Dict[str, Any]:
        """layers::analyze: params, forward flops and matmul_flops per sample, saved_elements
        and saved_fixed_bytes per sample (saved bytes = saved_elements x activation bytes +
        saved_fixed_bytes), peak_live_elements, kernels and host_ops (the eager calls one forward
        dispatches), and per layer its in/out shapes."""
        if self._analysis is None:
            self._analysis = _core.graph_analyze(self._text)
        return json.loads(json.dumps(self._analysis))

    @property
    def params(self) -> int:
        """Exact parameter count."""
        return int(self.analyze()["params"])

    def saved_bytes(self, activation_bytes: float = 4) -> float:
        """Bytes saved for backward per sample with activations of `activation_bytes` (4: fp32)."""
        a = self.analyze()
        return float(a["saved_elements"]) * _number(activation_bytes, "graph.activation_bytes") + float(a["saved_fixed_bytes"])

    def estimate(self, gpu: str = "a100-80gb", batch: int = 32, precision: str = "fp16-mixed",
                 optimizer: str = "sgd-momentum", infer: bool = False, num_gpus: int = 1,
                 images: Union[None, int, float, str] = None, epochs: float = 1,
                 checkpointing: bool = False, zero: int = 0) -> VisionResult:
        """Memory and time of training (or, with infer=True, running) the graph with `batch`
        samples per GPU on `num_gpus` GPUs, `zero` 1-3 sharding the model states over them:
        the figures of gp.vision (to_dict() is the same dict)."""
        run = _run_args("estimate", gpu, batch, precision, optimizer, infer, images, epochs, num_gpus, checkpointing, zero)
        return VisionResult(_core.vision_graph(self._text, *run))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and other._text == self._text

    def __repr__(self) -> str:
        return f"Graph({self.name or 'graph'}: {len(self)} layers, {self.params:,} params)"
