"""The bodies of SageMaker's ``/invocations`` for the Triton container, shared by every way of reaching it.

The Triton container's ``/invocations`` (reached directly, or through InvokeEndpoint) takes a KServe v2
request either as JSON sent as ``application/octet-stream`` or in the binary tensor form with the content type
``application/vnd.sagemaker-triton.binary+json;json-header-size=N``, and answers in the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from numpy.typing import NDArray

from pytest_triton.client.kserve import SAGEMAKER_BINARY
from pytest_triton.client.kserve import SAGEMAKER_JSON
from pytest_triton.client.kserve import decode_response
from pytest_triton.client.kserve import encode_request


def encode_invocation(
    inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str], *, binary: bool = True
) -> tuple[bytes, str]:
    """The body and content type of one ``/invocations`` request."""
    body, header_length = encode_request(inputs, outputs, binary=binary)
    content_type = SAGEMAKER_BINARY.format(header_length) if header_length is not None else SAGEMAKER_JSON
    return body, content_type


def decode_invocation(body: bytes, content_type: str) -> dict[str, NDArray[Any]]:
    """The outputs of one ``/invocations`` reply, JSON or binary as its content type says."""
    length = None
    if "json-header-size=" in content_type:
        length = int(content_type.split("json-header-size=")[1].split(";")[0])
    return decode_response(body, length)
