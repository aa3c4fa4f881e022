"""Generated inputs: tensors drawn from a model's config.pbtxt (names, dtypes, dims) and declared value ranges.

Hypothesis draws them (so a disagreement shrinks to a small input); the same rules also give plain numpy
batches for latency runs. Defaults where a range is not declared: integers in [0, 100), floats in [-1, 1].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal
from typing import final

import numpy as np
from numpy.typing import NDArray

from pytest_triton.contracts.spec import TensorRule
from pytest_triton.errors import ConfigError
from pytest_triton.repository.tensors import TRITON_TO_NUMPY

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["GeneratedInput", "generated_inputs", "numpy_request", "request_tensors"]

_DEFAULT_INT = (0.0, 100.0)
_DEFAULT_FLOAT = (-1.0, 1.0)


@final
@dataclass(frozen=True)
class GeneratedInput:
    """One input to generate: its dtype, its dims (batch excluded) and its rule."""

    name: str
    dtype: str  # numpy dtype name
    dims: tuple[int, ...]
    rule: TensorRule

    def shape(self, batch: int | None) -> tuple[int, ...]:
        return self.dims if batch is None else (batch, *self.dims)

    @property
    def bounds(self) -> tuple[float, float]:
        default = _DEFAULT_FLOAT if np.dtype(self.dtype).kind == "f" else _DEFAULT_INT
        low = default[0] if self.rule.low is None else self.rule.low
        high = default[1] if self.rule.high is None else self.rule.high
        return low, high


def generated_inputs(
    config_path: Path, rules: Mapping[str, TensorRule], *, where: str
) -> tuple[list[GeneratedInput], bool]:
    """The inputs of the model whose config is ``config_path`` and whether it batches; ``where`` names the
    declaration in errors."""
    from pytest_triton.config import read_config

    config = read_config(config_path).message
    declared = {tensor.name for tensor in config.input}
    unknown = sorted(set(rules) - declared)
    if unknown:
        raise ConfigError(
            f"inputs.generate.tensors.{unknown[0]}: {config_path} has no input {unknown[0]!r} "
            f"(its inputs: {', '.join(sorted(declared))})",
            path=where,
        )
    result = []
    for tensor in config.input:
        type_name = _data_type_name(config, tensor.data_type)
        dtype = TRITON_TO_NUMPY.get(type_name)
        rule = rules.get(tensor.name, TensorRule(tensor.name))
        if dtype is None or dtype == "object":
            raise ConfigError(
                f"inputs.generate: input {tensor.name!r} of {config_path} is {type_name}; only numeric and bool "
                "inputs can be generated: use a samples file for this model",
                path=where,
            )
        dims = rule.shape if rule.shape is not None else tuple(int(d) for d in tensor.dims)
        if any(d < 1 for d in dims):
            raise ConfigError(
                f"inputs.generate.tensors.{tensor.name}.shape is needed: {config_path} declares dims {list(dims)} "
                "with a variable (-1) dimension",
                path=where,
            )
        if rule.mask and rule.min_ones > dims[-1]:
            raise ConfigError(
                f"inputs.generate.tensors.{tensor.name}.min_ones={rule.min_ones} > the last dim {dims[-1]}", path=where
            )
        result.append(GeneratedInput(tensor.name, dtype, dims, rule))
    return result, config.max_batch_size > 0


def _data_type_name(config: Any, value: int) -> str:
    found = config.DESCRIPTOR.file.enum_types_by_name["DataType"].values_by_number.get(value)
    return str(found.name) if found is not None else f"TYPE_{value}"


def request_tensors(inputs: list[GeneratedInput], *, batch_size: int | None) -> SearchStrategy[dict[str, NDArray[Any]]]:
    """A request's tensors, drawn by Hypothesis (``batch_size`` None: the model does not batch).

    Every element is drawn on its own (no fill value), so a failure shrinks element by element: the values
    that do not matter go to their simplest, the ones that do stay."""
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    def tensor(spec: GeneratedInput) -> SearchStrategy[NDArray[Any]]:
        shape = spec.shape(batch_size)
        kind = np.dtype(spec.dtype).kind
        low, high = spec.bounds
        if spec.rule.mask:
            length = shape[-1]
            rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
            counts = st.lists(st.integers(spec.rule.min_ones, length), min_size=rows, max_size=rows)
            return counts.map(lambda ns: _mask(ns, shape, spec.dtype))
        if kind == "b":
            return arrays(np.bool_, shape, elements=st.booleans(), fill=st.nothing())
        if kind == "f":
            width: Literal[16, 32, 64] = 16 if spec.dtype == "float16" else 32 if spec.dtype == "float32" else 64
            elements = st.floats(low, high, width=width, allow_nan=False, allow_infinity=False)
            return arrays(spec.dtype, shape, elements=elements, fill=st.nothing())
        return arrays(spec.dtype, shape, elements=st.integers(int(low), int(high) - 1), fill=st.nothing())

    return st.fixed_dictionaries({spec.name: tensor(spec) for spec in inputs})


def _mask(counts: list[int], shape: tuple[int, ...], dtype: str) -> NDArray[Any]:
    length = shape[-1]
    rows = np.arange(length)[None, :] < np.asarray(counts)[:, None]
    return rows.astype(dtype).reshape(shape)


def numpy_request(inputs: list[GeneratedInput], *, batch_size: int | None, seed: int) -> dict[str, NDArray[Any]]:
    """The same rules drawn with numpy's seeded generator (latency runs need a batch, not a search)."""
    rng = np.random.default_rng(seed)
    out: dict[str, NDArray[Any]] = {}
    for spec in inputs:
        shape = spec.shape(batch_size)
        low, high = spec.bounds
        kind = np.dtype(spec.dtype).kind
        if spec.rule.mask:
            rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
            out[spec.name] = _mask(list(rng.integers(spec.rule.min_ones, shape[-1] + 1, rows)), shape, spec.dtype)
        elif kind == "b":
            out[spec.name] = rng.integers(0, 2, shape).astype(bool)
        elif kind == "f":
            out[spec.name] = rng.uniform(low, high, shape).astype(spec.dtype)
        else:
            out[spec.name] = rng.integers(int(low), int(high), shape).astype(spec.dtype)
    return out
