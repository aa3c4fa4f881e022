"""Fixed inputs from a samples file: KServe v2 JSON lines, or an .npz with one array per input.

A JSON line is an inference request body as Triton's HTTP endpoint takes it, plus an optional ``id``::

    {"id": "s01", "inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [0.1, 0.2, 0.3, 0.4]}]}

A line may carry more tensors than one model takes (token ids for the model, text for its ensemble): each
variant is sent those its model declares. In an .npz file, axis 0 of every array is the batch axis; the file is
sent in requests of ``batch_size`` rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import final

import numpy as np
from numpy.typing import NDArray

from pytest_triton.client.kserve import KSERVE_TO_NUMPY
from pytest_triton.errors import ConfigError

__all__ = ["Sample", "batch_of", "load_samples", "select_inputs"]


@final
@dataclass(frozen=True)
class Sample:
    """One request's tensors, with the name a report calls it by."""

    id: str
    tensors: Mapping[str, NDArray[Any]]

    @property
    def rows(self) -> int:
        first = next(iter(self.tensors.values()))
        return int(first.shape[0]) if first.ndim else 1


def _tensor(entry: Any, where: str) -> tuple[str, NDArray[Any]]:
    if not isinstance(entry, dict) or not {"name", "shape", "datatype", "data"} <= set(entry):
        raise ConfigError(f"{where}: an input needs name, shape, datatype and data (KServe v2); got {entry!r:.120}")
    name, shape, datatype = entry["name"], entry["shape"], entry["datatype"]
    if datatype not in KSERVE_TO_NUMPY:
        raise ConfigError(f"{where}: input {name!r} datatype={datatype!r}; expected one of {sorted(KSERVE_TO_NUMPY)}")
    data = entry["data"]
    try:
        if datatype == "BYTES":
            flat = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in np.asarray(data).reshape(-1)]
            array = np.array(flat, dtype=object).reshape(shape)
        else:
            array = np.asarray(data, dtype=KSERVE_TO_NUMPY[datatype]).reshape(shape)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{where}: input {name!r} data does not fit shape={shape} ({exc})") from None
    return str(name), array


def _json_lines(path: Path) -> list[Sample]:
    samples: list[Sample] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            body = json.loads(line)
        except ValueError as exc:
            raise ConfigError(f"not a JSON line ({exc})", path=str(path), line=number) from None
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), list) or not body["inputs"]:
            raise ConfigError(
                'a sample line is a KServe v2 request: {"id": ..., "inputs": [{name, shape, datatype, data}]}',
                path=str(path),
                line=number,
            )
        tensors = dict(_tensor(entry, where) for entry in body["inputs"])
        samples.append(Sample(str(body.get("id", f"line {number}")), tensors))
    if not samples:
        raise ConfigError("the samples file has no sample lines", path=str(path))
    return samples


def _npz(path: Path, batch_size: int) -> list[Sample]:
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    if not arrays:
        raise ConfigError("the .npz samples file holds no arrays", path=str(path))
    rows = {name: (a.shape[0] if a.ndim else 0) for name, a in arrays.items()}
    if len(set(rows.values())) != 1 or not next(iter(rows.values())):
        raise ConfigError(
            f"every array needs the same number of rows on axis 0 (the batch axis); got {rows}", path=str(path)
        )
    total = next(iter(rows.values()))
    return [
        Sample(
            f"rows {start}-{min(start + batch_size, total) - 1}",
            {n: a[start : start + batch_size] for n, a in arrays.items()},
        )
        for start in range(0, total, batch_size)
    ]


def load_samples(path: Path, *, batch_size: int = 1) -> list[Sample]:
    """Every request of a samples file (``batch_size``: rows per request of an .npz file)."""
    if path.suffix == ".npz":
        return _npz(path, batch_size)
    return _json_lines(path)


def select_inputs(tensors: Mapping[str, NDArray[Any]], names: Sequence[str]) -> dict[str, NDArray[Any]]:
    """The tensors a model declares (a sample may hold more, for other variants)."""
    return {name: tensors[name] for name in names if name in tensors}


def batch_of(samples: Sequence[Sample], rows: int) -> dict[str, NDArray[Any]]:
    """A request of ``rows`` rows made of the samples' rows in order (repeated when there are fewer)."""
    picked: list[Mapping[str, NDArray[Any]]] = []
    count = 0
    while count < rows:
        for sample in samples:
            picked.append(sample.tensors)
            count += sample.rows
            if count >= rows:
                break
    return {name: np.concatenate([p[name] for p in picked])[:rows] for name in picked[0]}
