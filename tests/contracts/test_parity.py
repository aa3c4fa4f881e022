"""Parity: every served variant gives the reference's labels, and logits within its tolerance.

Each comparison is recorded in the session's bench (``triton_bench.record_parity``) before it is asserted, so
the report shows every variant's outputs, preset, errors, worst element and label agreement, failed or not.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from pytest_triton.bench.session import TritonBench
from pytest_triton.client.nli import NliClient
from pytest_triton.client.nli import NliSample
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.nli import results_from_logits
from pytest_triton.parity import assert_same_labels
from pytest_triton.parity import compare
from pytest_triton.parity import compare_labels
from tests.contracts.conftest import Served

pytestmark = pytest.mark.xdist_group("embedded-triton")


def labels_of(logits: NDArray[np.float32]) -> list[str]:
    return [r.label for r in results_from_logits(logits)]


def test_reference_gets_the_sample_labels(reference_logits: NDArray[np.float32], samples: list[NliSample]) -> None:
    """The reference itself is right and decisive, so label parity below means something."""
    assert_same_labels([s.label for s in samples], labels_of(reference_logits), ids=[s.id for s in samples])
    top2 = np.sort(reference_logits, axis=1)[:, -2:]
    assert float((top2[:, 1] - top2[:, 0]).min()) >= 1.0


REFERENCE = "onnxruntime-fp32-inprocess"


def check_variant(
    bench: TritonBench,
    client: NliClient,
    samples: list[NliSample],
    reference_logits: NDArray[np.float32],
    variant: str,
    preset: str,
    *,
    transport: str = "http",
) -> None:
    """Compare, record for the report, then assert (labels first: a wrong label matters more than an epsilon)."""
    __tracebackhide__ = True
    logits = client.logits([s.pair for s in samples])
    ids = [s.id for s in samples]
    labels = compare_labels(
        labels_of(reference_logits), labels_of(logits), ids=ids, reference_name=REFERENCE, candidate_name=variant
    )
    parity = compare(
        {"logits": reference_logits},
        {"logits": logits},
        preset=preset,
        reference_name=REFERENCE,
        candidate_name=variant,
    )
    bench.record_parity(variant, parity, labels, transport=transport)
    assert labels.ok, labels.message()
    assert parity.ok, parity.message()


def test_served_onnx_matches_reference_over_http(
    triton_bench: TritonBench,
    onnx_served: Served,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    reference_logits: NDArray[np.float32],
) -> None:
    client = onnx_served.client(tokenizer)
    check_variant(triton_bench, client, samples, reference_logits, onnx_served.variant, onnx_served.precision)


def test_served_onnx_matches_reference_over_grpc(
    triton_bench: TritonBench,
    onnx_served: Served,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    reference_logits: NDArray[np.float32],
) -> None:
    try:
        import tritonclient.grpc  # noqa: F401
    except (ImportError, RuntimeError) as exc:  # tritonclient raises RuntimeError when grpc is incomplete
        pytest.skip(f"tritonclient's gRPC client cannot be imported here: {exc}")
    client = NliClient(onnx_served.server.transport("grpc"), tokenizer)
    variant, preset = onnx_served.variant, onnx_served.precision
    check_variant(triton_bench, client, samples, reference_logits, variant, preset, transport="grpc")


def test_tensorrt_fp16_matches_reference(
    triton_bench: TritonBench,
    tensorrt_served: Served,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    reference_logits: NDArray[np.float32],
) -> None:
    client = tensorrt_served.client(tokenizer)
    check_variant(triton_bench, client, samples, reference_logits, tensorrt_served.variant, "fp16")


def test_cuda_fp16_matches_reference(
    triton_bench: TritonBench,
    cuda_fp16_served: Served,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    reference_logits: NDArray[np.float32],
) -> None:
    client = cuda_fp16_served.client(tokenizer)
    check_variant(triton_bench, client, samples, reference_logits, cuda_fp16_served.variant, "fp16")


def test_ensemble_matches_reference_and_client_tokenization(
    triton_bench: TritonBench,
    ensemble_served: Served,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    reference_logits: NDArray[np.float32],
) -> None:
    """Text in, label and score out: the same as tokenizing in the client and asking the model."""
    client = ensemble_served.client(tokenizer)
    results = client.classify_text([s.pair for s in samples])
    logits = np.array([r.logits for r in results], dtype=np.float32)
    variant = ensemble_served.variant
    ids = [s.id for s in samples]
    labels = compare_labels(
        labels_of(reference_logits),
        [r.label for r in results],
        ids=ids,
        reference_name=REFERENCE,
        candidate_name=variant,
    )
    parity = compare(
        {"logits": reference_logits},
        {"logits": logits},
        preset=ensemble_served.precision,
        reference_name=REFERENCE,
        candidate_name=variant,
    )
    triton_bench.record_parity(variant, parity, labels, transport="http, text in")
    assert labels.ok, labels.message()
    assert parity.ok, parity.message()
    client_side = client.classify([s.pair for s in samples])
    assert [r.label for r in results] == [r.label for r in client_side]
    np.testing.assert_allclose([r.score for r in results], [r.score for r in client_side], rtol=1e-5, atol=1e-6)
