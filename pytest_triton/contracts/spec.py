"""What a contracts file declares, as types: variants, the reference, inputs, output checks, latency.

:mod:`pytest_triton.contracts.declaration` reads and validates a file into these.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import final

from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.parity.tensors import TOLERANCE_PRESETS
from pytest_triton.parity.tensors import Tolerance

__all__ = [
    "PRECISIONS",
    "PROTOCOLS",
    "REQUIREMENTS",
    "BaselineLimits",
    "Declaration",
    "Generated",
    "Inputs",
    "LabelCheck",
    "Latency",
    "OutputCheck",
    "Reference",
    "TensorRule",
    "Variant",
    "precision_tolerance",
]

# int8 is not in parity's presets: quantized logits move by several scale steps, so the
# label checks (argmax, top_k) carry an int8 contract and the tolerance only catches collapse
_INT8 = Tolerance(atol=0.1, rtol=0.1, name="int8")
PRECISIONS = ("fp32", "tf32", "fp16", "int8")
REQUIREMENTS = ("gpu", "tensorrt")
# "stream": gRPC bidirectional streaming, every response of a decoupled model (client/streaming.py)
PROTOCOLS = ("http", "grpc", "stream")


def precision_tolerance(precision: str) -> Tolerance:
    """The parity tolerance of a precision name (parity's presets, plus int8)."""
    return _INT8 if precision == "int8" else TOLERANCE_PRESETS[precision]


@final
@dataclass(frozen=True)
class Variant:
    """One way the model is served: a repository, the model to call and the precision it runs at."""

    name: str
    repository: Path
    model: str
    precision: Mapping[str, str]  # "cpu" / "gpu" (the server's) -> a precision name
    launcher: str | None = None  # None: the session's launcher
    protocol: str = "http"
    inputs: Mapping[str, str] = field(default_factory=dict)  # input name of the samples -> this variant's
    outputs: Mapping[str, str] = field(default_factory=dict)  # reference output name -> this variant's
    requires: tuple[str, ...] = ()
    budget: Mapping[str, str] = field(default_factory=dict)  # hardware pattern -> budget-file variant name

    def precision_on(self, has_gpu: bool) -> str:
        return self.precision["gpu" if has_gpu else "cpu"]

    def rename_inputs(self, tensors: Mapping[str, Any]) -> dict[str, Any]:
        """The tensors under this variant's input names."""
        return {self.inputs.get(name, name): value for name, value in tensors.items()}

    def output_name(self, reference_output: str) -> str:
        return self.outputs.get(reference_output, reference_output)

    def budget_name(self, hardware: str) -> str:
        """The variant's name in the budget file on ``hardware`` (default: its own name)."""
        return next((name for pattern, name in self.budget.items() if fnmatch.fnmatch(hardware, pattern)), self.name)


@final
@dataclass(frozen=True)
class Reference:
    """What every variant is compared with: one of the variants, or an ONNX file run in this process."""

    name: str
    variant: str | None = None
    onnx: Path | None = None


@final
@dataclass(frozen=True)
class TensorRule:
    """How one generated input is drawn: integers in [low, high), floats in [low, high], or a mask."""

    name: str
    low: float | None = None
    high: float | None = None
    mask: bool = False  # ones then zeros along the last axis, at least ``min_ones`` ones
    min_ones: int = 1
    shape: tuple[int, ...] | None = None  # replaces the config's dims (needed where they are -1)


@final
@dataclass(frozen=True)
class Generated:
    """Inputs drawn by Hypothesis from a variant's config.pbtxt, bounded in count and time, seeded."""

    source: str  # the variant whose model's inputs are generated
    examples: int = 50
    seed: int = 0
    max_seconds: float = 60.0
    batch_size: int = 2
    tensors: Mapping[str, TensorRule] = field(default_factory=dict)


@final
@dataclass(frozen=True)
class Inputs:
    """A samples file (KServe v2 JSON lines or .npz), or generated inputs."""

    samples: Path | None = None
    batch_size: int = 1  # rows per request for an .npz file
    generated: Generated | None = None


@final
@dataclass(frozen=True)
class OutputCheck:
    """Parity of one output: a tolerance (None: the variant's precision) and derived agreement checks."""

    name: str
    tolerance: Tolerance | None = None
    # derived check key → its setting (contracts/checks.py's DERIVED_CHECKS): {"argmax": True, "top_k": 3}
    derived: Mapping[str, Any] = field(default_factory=dict, hash=False)


@final
@dataclass(frozen=True)
class LabelCheck:
    """Labels a variant returns as text (an ensemble's postprocess) against the reference's: the name of the
    largest value of each row of the reference's output ``source``."""

    name: str
    source: str
    names: tuple[str, ...]
    outputs: Mapping[str, str]  # variant -> its label output; variants not listed are not checked

    def reference_labels(self, values: Any) -> list[str]:
        import numpy as np

        rows = np.asarray(values).reshape(len(values), -1)
        return [self.names[int(i)] if int(i) < len(self.names) else f"#{int(i)}" for i in rows.argmax(axis=1)]


@final
@dataclass(frozen=True)
class Latency:
    """What to measure: which variants (and the ONNX reference, by its name), at which batch sizes, against
    which budgets."""

    variants: tuple[str, ...]
    batch_size: int = 1
    throughput_batch_size: int = 8
    warmup: int = 3
    warm_batch_sizes: tuple[int, ...] = ()
    concurrency: int = 1
    window_ms: float | None = None  # None: the session's window (ini triton_window_ms)
    budgets: Path | None = None
    relative: tuple[RelativeBudget, ...] = ()
    benchmark: bool = False  # latency items record their samples into pytest-benchmark's fixture too


@final
@dataclass(frozen=True)
class BaselineLimits:
    """How a variant is held to the same variant at a baseline ref (``--triton-baseline REF``): ratios of the
    PR's figures to the base's, measured side by side (None: reported, not asserted)."""

    max_p50_ratio: float | None = 1.10
    max_p99_ratio: float | None = None
    min_samples_per_s_ratio: float | None = 0.90
    variants: tuple[str, ...] = ()  # empty: every variant


@final
@dataclass(frozen=True)
class Declaration:
    """A whole contracts file."""

    path: Path
    variants: Mapping[str, Variant]
    reference: Reference
    inputs: Inputs
    outputs: tuple[OutputCheck, ...] = ()  # empty: every reference output at each variant's precision
    labels: tuple[LabelCheck, ...] = ()
    latency: Latency | None = None
    baseline: BaselineLimits = field(default_factory=BaselineLimits)

    @property
    def candidates(self) -> list[Variant]:
        """The variants held to parity (every one but the reference)."""
        return [v for v in self.variants.values() if v.name != self.reference.variant]
