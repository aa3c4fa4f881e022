"""Fixed inputs from a samples file: KServe v2 JSON lines, or an .npz with one array per input.

A JSON line is an inference request body as Triton's HTTP endpoint takes it, plus an optional ``id``::

    {"id": "s01", "inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [0.1, 0.2, 0.3, 0.4]}]}

A line may carry more tensors than one model takes (token ids for the model, text for its ensemble): each
variant is sent those its model declares. In an .npz file, axis 0 of every array is the batch axis; the file is
sent in requests of ``batch_size`` rows.

The file is read through the guarded reader, and every value is checked against its declared datatype as it is
read: an integer out of the dtype's range (INT8 1000), a number for a BYTES element, a ragged or too deep list, a
shape over the tensor bounds is a ConfigError naming the file, the line and the field (``inputs[0] ('x').data[3]``).
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import final

import numpy as np
from numpy.typing import NDArray

from pytest_triton.archive.files import FILE_LIMITS_ENV
from pytest_triton.archive.files import FileLimits
from pytest_triton.archive.files import read_file_bytes
from pytest_triton.archive.files import read_file_text
from pytest_triton.client.kserve import KSERVE_TO_NUMPY
from pytest_triton.config.values import MAX_DIM
from pytest_triton.config.values import MAX_TENSOR_ELEMENTS
from pytest_triton.config.values import integer_problem
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


_MAX_NAME = 256  # characters of a tensor name
_MAX_DEPTH = 32  # nesting of a data list (a tensor has at most a few dimensions)
_NPZ_KINDS = "biufSU"  # booleans, integers, floats, strings: what a request can carry


def _problem(where: str, message: str) -> ConfigError:
    """An error at ``where`` (``file:line``) in a samples file: what is wrong and what KServe v2 wants."""
    path, _, line = where.rpartition(":")
    return ConfigError(message, path=path, line=int(line))


def _leaves(data: Any, field: str, where: str, limit: int) -> list[Any]:
    """The values of a (possibly nested) data list in order, at most ``limit`` of them."""
    out: list[Any] = []
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, list):
            if depth >= _MAX_DEPTH:
                raise _problem(where, f"{field}: lists nested deeper than {_MAX_DEPTH}; give the data flat")
            stack.extend((x, depth + 1) for x in reversed(item))
        else:
            out.append(item)
            if len(out) > limit:
                raise _problem(where, f"{field}: more than {limit:,} values, the product of the shape")
    return out


def _value_problem(value: Any, datatype: str, dtype: np.dtype[Any]) -> str | None:
    """What is wrong with one value of a ``datatype`` tensor, or None."""
    if datatype == "BYTES":
        return None if isinstance(value, str) else "a string"
    if datatype == "BOOL":
        return None if isinstance(value, bool) else "true or false"
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return integer_problem(value, int(info.min), int(info.max))
    finite = float(np.finfo(dtype).max)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "a number"
    if math.isfinite(value) and abs(value) > finite:
        return f"a number within +-{finite:g} (or NaN, Infinity)"
    return None


def _tensor(entry: Any, index: int, where: str) -> tuple[str, NDArray[Any]]:
    field = f"inputs[{index}]"
    if not isinstance(entry, dict) or not {"name", "shape", "datatype", "data"} <= set(entry):
        raise _problem(where, f"{field}: an input needs name, shape, datatype and data (KServe v2); got {entry!r:.120}")
    name, shape, datatype, data = entry["name"], entry["shape"], entry["datatype"], entry["data"]
    if not isinstance(name, str) or not name or len(name) > _MAX_NAME:
        raise _problem(where, f"{field}.name={name!r:.80}: expected a tensor name of 1 to {_MAX_NAME} characters")
    field = f"{field} ({name!r})"
    if datatype not in KSERVE_TO_NUMPY:
        raise _problem(where, f"{field}.datatype={datatype!r:.80}; expected one of {sorted(KSERVE_TO_NUMPY)}")
    if not isinstance(shape, list) or not all(integer_problem(d, 0, MAX_DIM) is None for d in shape):
        raise _problem(where, f"{field}.shape={shape!r:.80}: expected a list of dims from 0 to {MAX_DIM:,}")
    count = math.prod(shape)
    if count > MAX_TENSOR_ELEMENTS:
        raise _problem(where, f"{field}.shape={shape}: {count:,} elements, over {MAX_TENSOR_ELEMENTS:,}")
    values = _leaves(data, f"{field}.data", where, count)
    if len(values) != count:
        raise _problem(where, f"{field}.data: {len(values):,} values do not fit shape={shape} ({count:,} values)")
    dtype = np.dtype(KSERVE_TO_NUMPY[datatype])
    for position, value in enumerate(values):
        wanted = _value_problem(value, datatype, dtype)
        if wanted is not None:
            raise _problem(where, f"{field}.data[{position}]={value!r:.80}: expected {wanted} ({datatype})")
    if datatype == "BYTES":
        try:
            encoded = [v.encode("utf-8") for v in values]
        except UnicodeEncodeError as exc:
            raise _problem(where, f"{field}.data: a string is not UTF-8 ({exc.reason})") from None
        return name, np.array(encoded, dtype=object).reshape(shape)
    return name, np.array(values, dtype=dtype).reshape(shape)


def _json_lines(path: Path) -> list[Sample]:
    samples: list[Sample] = []
    text = read_file_text(path, "samples")
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            body = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"not a JSON line ({exc})", path=str(path), line=number) from None
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), list) or not body["inputs"]:
            raise ConfigError(
                'a sample line is a KServe v2 request: {"id": ..., "inputs": [{name, shape, datatype, data}]}',
                path=str(path),
                line=number,
            )
        tensors = dict(_tensor(entry, index, where) for index, entry in enumerate(body["inputs"]))
        samples.append(Sample(str(body.get("id", f"line {number}"))[:_MAX_NAME], tensors))
    if not samples:
        raise ConfigError("the samples file has no sample lines", path=str(path))
    return samples


def _npz(path: Path, batch_size: int) -> list[Sample]:
    limit = FileLimits.from_env().samples
    data = read_file_bytes(path, "samples")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:  # the arrays' unpacked size, before numpy unpacks them
            unpacked = sum(info.file_size for info in archive.infolist())
        if unpacked > limit:
            raise ConfigError(
                f"its arrays unpack to {unpacked:,} bytes, over the {limit:,} a samples file may hold; raise it "
                f"with {FILE_LIMITS_ENV}=samples=SIZE",
                path=str(path),
            )
        with np.load(io.BytesIO(data), allow_pickle=False) as loaded:
            arrays = {name: loaded[name] for name in loaded.files}
    except (ValueError, OSError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise ConfigError(
            f"not an .npz of plain arrays ({exc}); write it with numpy.savez(path, NAME=array, ...)", path=str(path)
        ) from None
    if not arrays:
        raise ConfigError("the .npz samples file holds no arrays", path=str(path))
    for name, array in arrays.items():
        if array.dtype.kind not in _NPZ_KINDS or not array.ndim:
            raise ConfigError(
                f"array {name!r} has dtype={array.dtype} and shape={array.shape}: expected booleans, integers, "
                "floats or strings with a batch axis (axis 0)",
                path=str(path),
            )
    rows = {name: a.shape[0] for name, a in arrays.items()}
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
