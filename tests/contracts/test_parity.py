"""Parity that scenario 07's declaration cannot say: the reference against the samples' ground truth, the fp16
model built at test time for CUDA, and the ensemble's SCORE against tokenizing in the client.

Each comparison with the reference is recorded in the session's bench (``triton_bench.record_parity``) before it
is asserted, so the report's parity table shows it beside the declared variants'.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.typing import NDArray

from pytest_triton.bench.session import TritonBench
from pytest_triton.client.nli import NliSample
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.nli import results_from_logits
from pytest_triton.parity import assert_same_labels
from pytest_triton.parity import compare
from pytest_triton.parity import compare_labels
from tests.contracts.conftest import REFERENCE
from tests.contracts.conftest import Served

pytestmark = pytest.mark.xdist_group("embedded-triton")


def labels_of(logits: NDArray[np.float32]) -> list[str]:
    return [r.label for r in results_from_logits(logits)]


def test_reference_gets_the_sample_labels(reference_logits: NDArray[np.float32], samples: list[NliSample]) -> None:
    """The reference itself is right and decisive, so the declaration's label parity means something."""
    assert_same_labels([s.label for s in samples], labels_of(reference_logits), ids=[s.id for s in samples])
    top2 = np.sort(reference_logits, axis=1)[:, -2:]
    assert float((top2[:, 1] - top2[:, 0]).min()) >= 1.0


def test_cuda_fp16_matches_reference(
    triton_bench: TritonBench,
    cuda_fp16_served: Served,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    reference_logits: NDArray[np.float32],
) -> None:
    """Labels first (a wrong label matters more than an epsilon), then logits within fp16's tolerance."""
    served = cuda_fp16_served
    logits = served.client(tokenizer).logits([s.pair for s in samples])
    ids = [s.id for s in samples]
    labels = compare_labels(
        labels_of(reference_logits), labels_of(logits), ids=ids, reference_name=REFERENCE, candidate_name=served.variant
    )
    parity = compare(
        {"logits": reference_logits},
        {"logits": logits},
        preset="fp16",
        reference_name=REFERENCE,
        candidate_name=served.variant,
    )
    triton_bench.record_parity(served.variant, parity, labels, transport=served.protocol)
    assert labels.ok, labels.message()
    assert parity.ok, parity.message()


def test_ensemble_score_matches_client_tokenization(
    ensemble_served: Served, tokenizer: NliTokenizer, samples: list[NliSample]
) -> None:
    """Text in, label and score out: the same as tokenizing in the client and asking the ensemble's model."""
    client = ensemble_served.client(tokenizer)
    pairs = [s.pair for s in samples]
    served_side = client.classify_text(pairs)
    client_side = client.classify(pairs)
    assert [r.label for r in served_side] == [r.label for r in client_side]
    np.testing.assert_allclose([r.score for r in served_side], [r.score for r in client_side], rtol=1e-5, atol=1e-6)
