"""Latency that scenario 07's declaration cannot say: the fp16 model built at test time for CUDA.

The declaration (model_repos/scenario07.contracts.toml) measures the rest: the onnx, TensorRT and ensemble
variants and the in-process reference against model_repos/budgets.toml, and the relative budgets between them
side by side. Every batch shape is warmed before any measurement (TensorRT builds an engine per new shape).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_triton.bench.engine import engine_of
from pytest_triton.bench.session import ServedBy
from pytest_triton.bench.session import Throughput
from pytest_triton.bench.session import TritonBench
from pytest_triton.client.nli import NliSample
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.plugin.server_factory import TritonServerFactory
from pytest_triton.plugin.workers import latency_skip_reason
from tests.contracts.conftest import Served
from tests.contracts.conftest import cuda_fp16_missing_reason

pytestmark = pytest.mark.xdist_group("embedded-triton")


def test_latency_cuda_fp16(
    triton_bench: TritonBench,
    triton_server_factory: TritonServerFactory,
    request: pytest.FixtureRequest,
    samples: list[NliSample],
    tokenizer: NliTokenizer,
    benchmark: Any,
) -> None:
    shared = latency_skip_reason(request.config)  # an xdist worker without a GPU and cores of its own
    if shared is not None:
        pytest.skip(shared)
    reason = cuda_fp16_missing_reason(triton_server_factory)
    if reason is not None:
        triton_bench.record_skipped("triton-cuda-fp16", reason)  # a SKIPPED row in the report, never a pass
        pytest.skip(reason)
    served: Served = request.getfixturevalue("cuda_fp16_served")
    client = served.client(tokenizer)
    one, eight = [samples[0].pair], [s.pair for s in samples[:8]]
    engine = engine_of(served.server, "mdeberta")  # the adapter's cost, measured beside the row
    if engine.calibration_model is not None:
        transport = served.server.transport(served.protocol)
        ids, mask = tokenizer.encode(one)
        tensors = {"input_ids": ids, "attention_mask": mask}
        engine = engine.with_call(lambda: transport.infer(engine.calibration_model or "", tensors, ["logits"]))
    http = served.server.urls.http
    result = triton_bench.measure(
        served.variant,
        lambda: client.logits(one),
        throughput=Throughput(lambda: client.logits(eight)),
        served_by=ServedBy(http, "mdeberta") if http else None,  # a SageMaker endpoint has no statistics API
        notes=served.notes,
        benchmark=benchmark,
        engine=engine,
    )
    triton_bench.check(result)
