"""Latency: p50/p90/p95/p99 at batch 1 and samples/s at batch 8, against this hardware's budgets.

Every batch shape is warmed before any measurement (TensorRT builds an engine per new shape),
and windows are measured until the last three agree within 10% (perf_analyzer's rule).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

from pytest_triton.bench.session import TritonBench
from pytest_triton.client.nli import NliClient
from pytest_triton.client.nli import NliSample
from pytest_triton.client.nli import NliTokenizer
from tests.contracts.conftest import Served

pytestmark = [
    pytest.mark.xdist_group("embedded-triton"),
    pytest.mark.skipif(
        bool(os.environ.get("PYTEST_XDIST_WORKER")),
        reason="latency is measured by the main job without xdist: here other tests share the cores",
    ),
]


def batches(samples: list[NliSample]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    return [samples[0].pair], [s.pair for s in samples[:8]]


def measure_client(
    triton_bench: TritonBench,
    variant: str,
    infer: Callable[[list[tuple[str, str]]], Any],
    samples: list[NliSample],
    benchmark: Any,
    *,
    served: Served | None = None,
    model: str = "mdeberta",
) -> None:
    one, eight = batches(samples)
    result = triton_bench.measure(
        variant,
        lambda: infer(one),
        throughput_call=lambda: infer(eight),
        http_url=served.server.urls.http if served else None,
        model=model if served else None,
        notes=served.notes if served else (),
        benchmark=benchmark,
    )
    triton_bench.check(result)


def test_latency_reference_inprocess(
    triton_bench: TritonBench, reference: NliClient, samples: list[NliSample], benchmark: Any
) -> None:
    measure_client(triton_bench, "onnxruntime-fp32-inprocess", reference.logits, samples, benchmark)


def test_latency_served_onnx(
    triton_bench: TritonBench, onnx_served: Served, tokenizer: NliTokenizer, samples: list[NliSample], benchmark: Any
) -> None:
    client = onnx_served.client(tokenizer)
    measure_client(triton_bench, onnx_served.variant, client.logits, samples, benchmark, served=onnx_served)


def test_latency_ensemble(
    triton_bench: TritonBench,
    ensemble_served: Served,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    benchmark: Any,
) -> None:
    client = ensemble_served.client(tokenizer)
    measure_client(
        triton_bench,
        ensemble_served.variant,
        client.classify_text,
        samples,
        benchmark,
        served=ensemble_served,
        model="ensemble_mdeberta",
    )


def test_latency_tensorrt_fp16(
    triton_bench: TritonBench,
    onnx_served: Served,
    request: pytest.FixtureRequest,
    samples: list[NliSample],
    tokenizer: NliTokenizer,
    benchmark: Any,
) -> None:
    from tests.contracts.conftest import tensorrt_missing_reason

    reason = tensorrt_missing_reason(onnx_served.server.has_gpu)
    if reason is not None:
        triton_bench.skip_variant("triton-tensorrt-fp16", reason)  # a SKIPPED row in the report, never a pass
    served: Served = request.getfixturevalue("tensorrt_served")
    client = served.client(tokenizer)
    measure_client(triton_bench, served.variant, client.logits, samples, benchmark, served=served)


def test_latency_cuda_fp16(
    triton_bench: TritonBench,
    onnx_served: Served,
    request: pytest.FixtureRequest,
    samples: list[NliSample],
    tokenizer: NliTokenizer,
    benchmark: Any,
) -> None:
    if not onnx_served.server.has_gpu:
        triton_bench.skip_variant("triton-cuda-fp16", "the CUDA fp16 variant needs a GPU and none is visible")
    served: Served = request.getfixturevalue("cuda_fp16_served")
    client = served.client(tokenizer)
    measure_client(triton_bench, served.variant, client.logits, samples, benchmark, served=served)
