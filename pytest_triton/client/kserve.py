"""KServe v2 inference bodies: JSON and the binary tensor extension, for Triton and SageMaker.

Triton's HTTP endpoint takes the binary form with an ``Inference-Header-Content-Length``
header; SageMaker's ``/invocations`` takes the same bytes with the content type
``application/vnd.sagemaker-triton.binary+json;json-header-size=N``, or plain JSON as
``application/octet-stream``.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from pytest_triton.dtypes import BY_NUMPY
from pytest_triton.errors import InferenceError

HEADER_LENGTH = "Inference-Header-Content-Length"
SAGEMAKER_BINARY = "application/vnd.sagemaker-triton.binary+json;json-header-size={}"
SAGEMAKER_JSON = "application/octet-stream"

NUMPY_TO_KSERVE: dict[str, str] = {name: d.kserve for name, d in BY_NUMPY.items()} | {"bytes": "BYTES"}
KSERVE_TO_NUMPY = {d.kserve: name for name, d in BY_NUMPY.items()}


def kserve_dtype(array: NDArray[Any]) -> str:
    kind = "bytes" if array.dtype.kind in "SU" else array.dtype.name
    if kind not in NUMPY_TO_KSERVE:
        raise InferenceError(f"dtype={array.dtype} has no KServe v2 datatype; use one of {sorted(NUMPY_TO_KSERVE)}")
    return NUMPY_TO_KSERVE[kind]


def _bytes_items(array: NDArray[Any]) -> list[bytes]:
    return [item if isinstance(item, bytes) else str(item).encode("utf-8") for item in array.reshape(-1)]


def _serialize(array: NDArray[Any], datatype: str) -> bytes:
    if datatype == "BYTES":
        return b"".join(struct.pack("<I", len(item)) + item for item in _bytes_items(array))
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def _json_data(array: NDArray[Any], datatype: str) -> list[Any]:
    if datatype == "BYTES":
        return [item.decode("utf-8") for item in _bytes_items(array)]
    values: list[Any] = array.reshape(-1).tolist()
    return values


def encode_request(
    inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str] = (), *, binary: bool = True
) -> tuple[bytes, int | None]:
    """The request body, and the JSON header's length when ``binary`` (else None)."""
    header: dict[str, Any] = {"inputs": [], "outputs": []}
    chunks: list[bytes] = []
    for name, array in inputs.items():
        datatype = kserve_dtype(array)
        entry: dict[str, Any] = {"name": name, "shape": list(array.shape), "datatype": datatype}
        if binary:
            data = _serialize(array, datatype)
            entry["parameters"] = {"binary_data_size": len(data)}
            chunks.append(data)
        else:
            entry["data"] = _json_data(array, datatype)
        header["inputs"].append(entry)
    for name in outputs:
        header["outputs"].append({"name": name, "parameters": {"binary_data": binary}})
    if not header["outputs"]:
        del header["outputs"]
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    if not binary:
        return head, None
    return head + b"".join(chunks), len(head)


def _deserialize(data: bytes, datatype: str, shape: list[int]) -> NDArray[Any]:
    if datatype == "BYTES":
        items: list[bytes] = []
        offset = 0
        while offset < len(data):
            (length,) = struct.unpack_from("<I", data, offset)
            items.append(data[offset + 4 : offset + 4 + length])
            offset += 4 + length
        return np.array(items, dtype=object).reshape(shape)
    return np.frombuffer(data, dtype=np.dtype(KSERVE_TO_NUMPY[datatype]).newbyteorder("<")).reshape(shape)


def decode_response(body: bytes, header_length: int | None) -> dict[str, NDArray[Any]]:
    """Output tensors by name from a KServe v2 response (JSON or binary)."""
    head = body[:header_length] if header_length is not None else body
    try:
        header = json.loads(head)
    except ValueError as exc:
        raise InferenceError(f"response is not KServe v2 JSON: {head[:200]!r}", response=body) from exc
    if "error" in header:
        raise InferenceError(f"server error: {header['error']}", response=header)
    outputs: dict[str, NDArray[Any]] = {}
    offset = header_length or 0
    for out in header.get("outputs", []):
        datatype, shape = out["datatype"], out["shape"]
        size = out.get("parameters", {}).get("binary_data_size")
        if size is not None:
            outputs[out["name"]] = _deserialize(body[offset : offset + size], datatype, shape)
            offset += size
        elif datatype == "BYTES":
            outputs[out["name"]] = np.array([s.encode("utf-8") for s in out["data"]], dtype=object).reshape(shape)
        else:
            outputs[out["name"]] = np.array(out["data"], dtype=KSERVE_TO_NUMPY[datatype]).reshape(shape)
    return outputs
