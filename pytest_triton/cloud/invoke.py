"""InvokeEndpoint as a transport: the KServe v2 bodies of the Triton container, through sagemaker-runtime.

The bodies are those of ``/invocations`` (:mod:`pytest_triton.client.sagemaker_body`); what this adds is
SageMaker's front door: the request size limit (checked before sending, from the API's own model), and its
errors: ``ModelError`` (HTTP 424, the container answered an error) becomes :class:`EndpointModelError`
with the container's status and message and the log stream to read.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from numpy.typing import NDArray

from pytest_triton.client.sagemaker_body import decode_invocation
from pytest_triton.client.sagemaker_body import encode_invocation
from pytest_triton.client.transports import InputSpec
from pytest_triton.client.transports import validate_inputs
from pytest_triton.errors import EndpointModelError
from pytest_triton.errors import InferenceError

INVOCATION_LIMIT_S = 60.0  # a real-time endpoint answers within 60 s or the call fails
_TIMEOUT_HINT = (
    "SageMaker gives a real-time invocation 60 s; a first call that builds TensorRT engines (or loads a large "
    "model lazily) can take longer: warm every batch shape before the endpoint is measured, or build the engines "
    "at load (model warmup in config.pbtxt) within ContainerStartupHealthCheckTimeoutInSeconds"
)


def max_request_bytes(runtime: Any) -> int:
    """InvokeEndpoint's body limit as the API model states it (6 MiB, 6291456 bytes, for real-time endpoints)."""
    body = runtime.meta.service_model.operation_model("InvokeEndpoint").input_shape.members["Body"]
    return int(body.metadata["max"])


class InvokeEndpointTransport:
    """A SageMaker endpoint's default model over sagemaker-runtime InvokeEndpoint.

    ``specs`` are the model's inputs (SageMaker has no metadata route; they come from its config.pbtxt).
    """

    def __init__(self, runtime: Any, endpoint: str, specs: Sequence[InputSpec], *, binary: bool = True) -> None:
        self.runtime = runtime
        self.endpoint = endpoint
        self.specs = list(specs)
        self.binary = binary
        self.limit = max_request_bytes(runtime)
        self.invocation_limit_s = INVOCATION_LIMIT_S
        self.first_calls: dict[tuple[tuple[str, tuple[int, ...]], ...], float] = {}  # input shapes -> seconds
        self.answered: list[float] = []  # when each call was answered (time.time()): the requests CloudWatch counts

    def slow_first_calls(self) -> list[str]:
        """One line per input shape whose first call took longer than SageMaker's invocation limit."""
        return [
            f"endpoint {self.endpoint!r}: first call with shapes {dict(shapes)} took {seconds:.1f} s, over "
            f"SageMaker's {self.invocation_limit_s:.0f} s invocation limit; warm it before measuring"
            for shapes, seconds in self.first_calls.items()
            if seconds > self.invocation_limit_s
        ]

    def answered_between(self, start: float, end: float) -> int:
        """How many calls were answered between ``start`` and ``end`` (seconds since the epoch)."""
        return sum(1 for moment in self.answered if start <= moment <= end)

    def input_specs(self, model: str) -> list[InputSpec]:
        return self.specs

    def close(self) -> None:
        """Nothing to close: botocore pools its connections."""

    def infer(self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]) -> dict[str, NDArray[Any]]:
        from botocore.exceptions import ClientError

        validate_inputs(model, self.specs, inputs)
        body, content_type = encode_invocation(inputs, outputs, binary=self.binary)
        if len(body) > self.limit:
            raise InferenceError(
                f"request to endpoint {self.endpoint!r} is {len(body)} bytes; InvokeEndpoint takes at most "
                f"{self.limit} bytes: send fewer or smaller tensors per request (a smaller batch)",
                request=body,
            )
        shapes = tuple(sorted((name, tuple(array.shape)) for name, array in inputs.items()))
        started = time.monotonic()
        try:
            reply = self.runtime.invoke_endpoint(
                EndpointName=self.endpoint, Body=body, ContentType=content_type, Accept=content_type
            )
        except self.runtime.exceptions.ModelError as exc:
            error = exc.response.get("Error", {})
            status = exc.response.get("OriginalStatusCode", error.get("OriginalStatusCode"))
            message = str(error.get("Message", exc))
            hint = f"\nhint: {_TIMEOUT_HINT}" if "timed out" in message else ""
            raise EndpointModelError(
                f"endpoint {self.endpoint!r} (model {model!r}): {message}{hint}",
                original_status=int(status) if status is not None else None,
                original_message=str(exc.response.get("OriginalMessage", error.get("OriginalMessage", ""))),
                log_stream_arn=str(exc.response.get("LogStreamArn", error.get("LogStreamArn", ""))),
                request=body,
                response=exc.response,
            ) from None
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raise InferenceError(
                f"InvokeEndpoint {self.endpoint!r} failed: {error.get('Code', '?')}: {error.get('Message', exc)}",
                request=body,
                response=exc.response,
            ) from None
        outputs_read = decode_invocation(reply["Body"].read(), str(reply.get("ContentType", "")))
        self.first_calls.setdefault(shapes, time.monotonic() - started)
        self.answered.append(time.time())
        return outputs_read
