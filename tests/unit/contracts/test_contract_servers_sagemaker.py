"""How contract variants meet a SageMaker endpoint: which transport, and whose TensorRT decides a skip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_triton.client.urls import ServerUrls
from pytest_triton.contracts.serving import ContractServers
from pytest_triton.contracts.serving import inference_protocol
from pytest_triton.contracts.spec import Variant
from pytest_triton.errors import VariantUnavailable
from pytest_triton.repository.onnx_adapter import tensorrt_unavailable_reason
from pytest_triton.servers import ServeOptions
from pytest_triton.servers import ServerFactory

ENDPOINT = ServerUrls(sagemaker="https://runtime.sagemaker.us-east-1.amazonaws.com/endpoints/ep")
LOCAL = ServerUrls.local(8000, 8001, 8002)


def _variant(tmp_path: Path, **fields: Any) -> Variant:
    return Variant(name="v", repository=tmp_path, model="m", precision={"cpu": "fp32", "gpu": "fp32"}, **fields)


def _Factory(launcher: str, *, existing: bool = False) -> ServerFactory:
    """The real factory, which starts nothing until asked: ``existing`` points the sagemaker launcher at an
    endpoint (``--endpoint``); the url launcher always serves an existing server."""
    return ServerFactory(launcher, ServeOptions(settings={"endpoint": "ep"} if existing else {}))


def test_the_default_protocol_is_the_one_the_server_offers(tmp_path: Path) -> None:
    assert inference_protocol(_variant(tmp_path), ENDPOINT) == "sagemaker"
    assert inference_protocol(_variant(tmp_path), LOCAL) == "http"
    assert inference_protocol(_variant(tmp_path, protocol="grpc"), LOCAL) == "grpc"


def test_a_grpc_variant_on_an_endpoint_is_unavailable_saying_why(tmp_path: Path) -> None:
    with pytest.raises(VariantUnavailable) as caught:
        inference_protocol(_variant(tmp_path, protocol="grpc"), ENDPOINT)
    assert caught.value.reason == "it is called over grpc and this server has no grpc endpoint (it offers sagemaker)"


def test_a_streamed_variant_goes_over_grpc_and_is_unavailable_on_an_endpoint(tmp_path: Path) -> None:
    assert inference_protocol(_variant(tmp_path, protocol="stream"), LOCAL) == "grpc"
    with pytest.raises(VariantUnavailable) as caught:
        inference_protocol(_variant(tmp_path, protocol="stream"), ENDPOINT)
    assert caught.value.reason == (
        "it is a decoupled model streamed over gRPC and this server has no gRPC endpoint "
        "(it offers sagemaker; SageMaker's /invocations does not stream)"
    )


def test_an_endpoints_tensorrt_is_its_images_not_this_machines(tmp_path: Path) -> None:
    local_reason = tensorrt_unavailable_reason()
    if local_reason is None:
        pytest.skip("this machine runs TensorRT: the difference cannot be seen here")
    variant = _variant(tmp_path, requires=("tensorrt",))
    on_endpoint = ContractServers(_Factory("sagemaker"), tmp_path, gpu=True)
    assert on_endpoint.unavailable_reason(variant) is None
    here = ContractServers(_Factory("local"), tmp_path, gpu=True)
    assert here.unavailable_reason(variant) == f"it needs TensorRT: {local_reason}"
    without_gpu = ContractServers(_Factory("sagemaker"), tmp_path, gpu=False)
    assert without_gpu.unavailable_reason(variant) == "it needs a GPU: run with --gpu on a GPU runner"


def test_a_reused_endpoint_serves_no_declared_variant(tmp_path: Path) -> None:
    reused = ContractServers(_Factory("sagemaker", existing=True), tmp_path, gpu=False)
    assert reused.unavailable_reason(_variant(tmp_path)) == (
        "this session tests one existing endpoint (--endpoint), which does not serve this variant's repository: "
        "run with --cloud and without --endpoint to deploy it"
    )
    assert (
        ContractServers(_Factory("url", existing=True), tmp_path, gpu=False).unavailable_reason(_variant(tmp_path))
        is None
    )
