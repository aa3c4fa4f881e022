"""One inference API over Triton HTTP, Triton gRPC and SageMaker ``/invocations``.

Each transport sends named numpy arrays to a model and returns named numpy arrays; inputs
are checked against the model's declared inputs before anything is sent.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Protocol

from numpy.typing import NDArray

from pytest_triton.client.http11 import KeepAliveHttp
from pytest_triton.client.kserve import HEADER_LENGTH
from pytest_triton.client.kserve import decode_response
from pytest_triton.client.kserve import encode_request
from pytest_triton.client.kserve import kserve_dtype
from pytest_triton.client.sagemaker_body import decode_invocation
from pytest_triton.client.sagemaker_body import encode_invocation
from pytest_triton.errors import InferenceError


@dataclass(frozen=True)
class InputSpec:
    """A declared model input as KServe metadata gives it: shape includes the batch dim (-1)."""

    name: str
    datatype: str
    shape: tuple[int, ...]


def validate_inputs(model: str, specs: Sequence[InputSpec], inputs: Mapping[str, NDArray[Any]]) -> None:
    """Raise :class:`InferenceError` naming the tensor, field and value when inputs do not fit."""
    declared = {spec.name: spec for spec in specs}
    unknown = sorted(set(inputs) - set(declared))
    missing = sorted(set(declared) - set(inputs))
    if unknown or missing:
        raise InferenceError(
            f"model {model!r} takes inputs {sorted(declared)}; got unknown {unknown} and missing {missing}"
        )
    for name, array in inputs.items():
        spec = declared[name]
        datatype = kserve_dtype(array)
        if datatype != spec.datatype:
            raise InferenceError(
                f"model {model!r} input {name!r}: datatype={datatype} but the model takes {spec.datatype}"
            )
        shape = tuple(array.shape)
        fits = len(shape) == len(spec.shape) and all(want in (-1, got) for want, got in zip(spec.shape, shape))
        if not fits:
            raise InferenceError(f"model {model!r} input {name!r}: shape={list(shape)} does not fit {list(spec.shape)}")


@dataclass(frozen=True)
class PreparedRequest:
    """A validated, encoded inference request: what :meth:`TritonHttpTransport.send` posts."""

    model: str
    path: str
    body: bytes
    headers: dict[str, str]
    raw: bytes  # the whole HTTP request, sent as it is


class Transport(Protocol):
    def infer(
        self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]
    ) -> dict[str, NDArray[Any]]: ...

    def input_specs(self, model: str) -> list[InputSpec]: ...


class TritonHttpTransport:
    """Triton's KServe v2 HTTP endpoint, binary tensor data by default."""

    def __init__(self, url: str, *, binary: bool = True, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.binary = binary
        self.timeout = timeout
        self._specs: dict[str, list[InputSpec]] = {}
        self._http = KeepAliveHttp(self.url, timeout)

    def close(self) -> None:
        """Close the kept-alive connections."""
        self._http.close()

    def input_specs(self, model: str) -> list[InputSpec]:
        if model not in self._specs:
            try:
                with urllib.request.urlopen(f"{self.url}/v2/models/{model}", timeout=self.timeout) as response:
                    metadata = json.load(response)
            except urllib.error.HTTPError as exc:
                raise InferenceError(f"unknown model {model!r} on {self.url} (HTTP {exc.code})") from exc
            self._specs[model] = [
                InputSpec(i["name"], i["datatype"], tuple(int(d) for d in i["shape"])) for i in metadata["inputs"]
            ]
        return self._specs[model]

    def infer(self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]) -> dict[str, NDArray[Any]]:
        return self.send(self.prepare(model, inputs, outputs))

    def prepare(self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]) -> PreparedRequest:
        """Validate and encode a request once, to send it many times (perf_analyzer prepares its inputs too)."""
        validate_inputs(model, self.input_specs(model), inputs)
        body, header_length = encode_request(inputs, outputs, binary=self.binary)
        headers = {"Content-Type": "application/octet-stream" if self.binary else "application/json"}
        if header_length is not None:
            headers[HEADER_LENGTH] = str(header_length)
        path = f"/v2/models/{model}/infer"
        return PreparedRequest(model, path, body, headers, self._http.encode(path, body, headers))

    def send(self, request: PreparedRequest) -> dict[str, NDArray[Any]]:
        """POST a prepared request and decode the outputs."""
        reply = self._http.post(request.path, request.body, request.headers, raw=request.raw)
        length = reply.headers.get(HEADER_LENGTH.lower())
        return decode_response(reply.body, int(length) if length else None)


class TritonGrpcTransport:
    """Triton's gRPC endpoint through tritonclient."""

    def __init__(self, url: str, *, timeout: float = 60.0) -> None:
        import tritonclient.grpc as grpcclient

        self._module = grpcclient
        self.client: Any = grpcclient.InferenceServerClient(url)
        self.timeout = timeout
        self._specs: dict[str, list[InputSpec]] = {}

    def input_specs(self, model: str) -> list[InputSpec]:
        if model not in self._specs:
            from tritonclient.utils import InferenceServerException

            try:
                metadata = self.client.get_model_metadata(model, as_json=True)
            except InferenceServerException as exc:
                raise InferenceError(f"unknown model {model!r}: {exc.message()}") from exc
            self._specs[model] = [
                InputSpec(i["name"], i["datatype"], tuple(int(d) for d in i["shape"])) for i in metadata["inputs"]
            ]
        return self._specs[model]

    def infer(self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]) -> dict[str, NDArray[Any]]:
        from tritonclient.utils import InferenceServerException

        validate_inputs(model, self.input_specs(model), inputs)
        grpc_inputs = []
        for name, array in inputs.items():
            tensor = self._module.InferInput(name, list(array.shape), kserve_dtype(array))
            tensor.set_data_from_numpy(array)
            grpc_inputs.append(tensor)
        requested = [self._module.InferRequestedOutput(name) for name in outputs]
        try:
            result = self.client.infer(model, grpc_inputs, outputs=requested or None, client_timeout=self.timeout)
        except InferenceServerException as exc:
            raise InferenceError(f"gRPC inference on {model!r} failed: {exc.message()}") from exc
        return {name: result.as_numpy(name) for name in outputs}


class SageMakerTransport:
    """SageMaker's ``/invocations`` (the Triton container's SageMaker frontend or a real endpoint).

    The model is the container's default model (SAGEMAKER_TRITON_DEFAULT_MODEL_NAME); its inputs
    are given up front since SageMaker has no metadata route.
    """

    def __init__(self, url: str, specs: Sequence[InputSpec], *, binary: bool = True, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.specs = list(specs)
        self.binary = binary
        self.timeout = timeout
        self._http = KeepAliveHttp(self.url, timeout)

    def close(self) -> None:
        """Close the kept-alive connections."""
        self._http.close()

    def input_specs(self, model: str) -> list[InputSpec]:
        return self.specs

    def infer(self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]) -> dict[str, NDArray[Any]]:
        validate_inputs(model, self.specs, inputs)
        body, content_type = encode_invocation(inputs, outputs, binary=self.binary)
        reply = self._http.post("/invocations", body, {"Content-Type": content_type})
        return decode_invocation(reply.body, reply.headers.get("content-type", ""))
