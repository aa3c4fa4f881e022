"""One inference API over Triton HTTP, Triton gRPC and SageMaker ``/invocations``.

Each transport sends named numpy arrays to a model and returns named numpy arrays; inputs
are checked against the model's declared inputs before anything is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from numpy.typing import NDArray

from pytest_triton.client.http11 import KeepAliveHttp
from pytest_triton.client.kserve import HEADER_LENGTH
from pytest_triton.client.kserve import decode_response
from pytest_triton.client.kserve import encode_request
from pytest_triton.client.kserve import kserve_dtype
from pytest_triton.client.rest import TritonRest
from pytest_triton.client.rest import model_path
from pytest_triton.client.sagemaker_body import decode_invocation
from pytest_triton.client.sagemaker_body import encode_invocation
from pytest_triton.errors import InferenceError
from pytest_triton.errors import ServerError

if TYPE_CHECKING:
    from pytest_triton.client.urls import InferenceEndpoint
    from pytest_triton.client.urls import ServerUrls


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
        self._rest = TritonRest(self.url, timeout=timeout)

    def close(self) -> None:
        """Close the kept-alive connections."""
        self._http.close()
        self._rest.close()

    def input_specs(self, model: str) -> list[InputSpec]:
        if model not in self._specs:
            try:
                metadata = self._rest.metadata(model)
            except ServerError as exc:
                raise InferenceError(f"unknown model {model!r} on {self.url}: {exc}") from exc
            self._specs[model] = _specs_from_metadata(metadata)
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
        path = model_path(model) + "/infer"
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
        self.client: Any = grpc_client(url)
        self.timeout = timeout
        self._specs: dict[str, list[InputSpec]] = {}

    def input_specs(self, model: str) -> list[InputSpec]:
        if model not in self._specs:
            from tritonclient.utils import InferenceServerException

            try:
                metadata = self.client.get_model_metadata(model, as_json=True)
            except InferenceServerException as exc:
                raise InferenceError(f"unknown model {model!r}: {exc.message()}") from exc
            self._specs[model] = _specs_from_metadata(metadata)
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

    The model is the container's default model (SAGEMAKER_TRITON_DEFAULT_MODEL_NAME). SageMaker has no
    metadata route, so inputs are checked only against ``specs`` when they are given.
    """

    def __init__(
        self, url: str, specs: Sequence[InputSpec] | None = None, *, binary: bool = True, timeout: float = 60.0
    ) -> None:
        self.url = url.rstrip("/")
        self.specs = None if specs is None else list(specs)
        self.binary = binary
        self.timeout = timeout
        self._http = KeepAliveHttp(self.url, timeout)

    def close(self) -> None:
        """Close the kept-alive connections."""
        self._http.close()

    def input_specs(self, model: str) -> list[InputSpec]:
        if self.specs is None:
            raise InferenceError(
                f"SageMaker's /invocations has no metadata route: give SageMakerTransport(specs=...) for {model!r}"
            )
        return self.specs

    def infer(self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]) -> dict[str, NDArray[Any]]:
        if self.specs is not None:
            validate_inputs(model, self.specs, inputs)
        body, content_type = encode_invocation(inputs, outputs, binary=self.binary)
        reply = self._http.post("/invocations", body, {"Content-Type": content_type})
        return decode_invocation(reply.body, reply.headers.get("content-type", ""))


def _specs_from_metadata(metadata: Mapping[str, Any]) -> list[InputSpec]:
    return [InputSpec(i["name"], i["datatype"], tuple(int(d) for d in i["shape"])) for i in metadata["inputs"]]


def transport_for(urls: ServerUrls, protocol: InferenceEndpoint = "http") -> Transport:
    """The transport that reaches ``urls`` over ``protocol``; ServerError when the server lacks that endpoint."""
    if protocol == "http":
        return TritonHttpTransport(urls.need("http"))
    if protocol == "grpc":
        return TritonGrpcTransport(urls.need("grpc"))
    if protocol == "sagemaker":
        return SageMakerTransport(urls.need("sagemaker"))
    raise InferenceError(f"protocol={protocol!r} is not one of 'http', 'grpc', 'sagemaker'")


def grpc_client(url: str) -> Any:
    """A ``tritonclient.grpc.InferenceServerClient`` for ``url`` that never goes through a proxy.

    gRPC honours ``http_proxy``/``grpc_proxy`` by default; tritonclient's own channel options are kept.
    """
    import tritonclient.grpc as grpcclient
    from tritonclient.grpc import MAX_GRPC_MESSAGE_SIZE
    from tritonclient.grpc import KeepAliveOptions

    keepalive = KeepAliveOptions()
    options = [
        ("grpc.max_send_message_length", MAX_GRPC_MESSAGE_SIZE),
        ("grpc.max_receive_message_length", MAX_GRPC_MESSAGE_SIZE),
        ("grpc.keepalive_time_ms", keepalive.keepalive_time_ms),
        ("grpc.keepalive_timeout_ms", keepalive.keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", keepalive.keepalive_permit_without_calls),
        ("grpc.http2.max_pings_without_data", keepalive.http2_max_pings_without_data),
        ("grpc.enable_http_proxy", 0),
    ]
    return grpcclient.InferenceServerClient(url, channel_args=options)
