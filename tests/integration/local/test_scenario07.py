"""Issue 4: the three scenario-07 repositories serve on the embedded Triton and agree with
in-process ONNX Runtime on every sample; the ensemble agrees with client-side tokenization,
over Triton HTTP and over SageMaker's /invocations (both body formats)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
pytest.importorskip("onnxruntime", reason="the reference and the ONNX adapter need onnxruntime")

from pytest_triton.archive.model_tar import read_env_file
from pytest_triton.archive.model_tar import sidecar_env
from pytest_triton.client.nli import NliClient
from pytest_triton.client.nli import NliSample
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.nli import load_samples
from pytest_triton.client.reference import OnnxReference
from pytest_triton.client.transports import InputSpec
from pytest_triton.client.transports import SageMakerTransport
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.parity.tensors import assert_parity
from pytest_triton.plugin.server_factory import TritonServerFactory
from pytest_triton.repository.sagemaker import package_model_tar

pytestmark = pytest.mark.xdist_group("embedded-triton")

ROOT = Path(__file__).resolve().parents[3]
ASSETS = ROOT / "model_repos" / "assets" / "tiny-mdeberta"
SCENARIO = ROOT / "model_repos" / "scenario07"
TEXT_SPECS = [InputSpec("PREMISE", "BYTES", (-1, 1)), InputSpec("HYPOTHESIS", "BYTES", (-1, 1))]
TOKEN_SPECS = [InputSpec("input_ids", "INT64", (-1, 512)), InputSpec("attention_mask", "INT64", (-1, 512))]


@pytest.fixture(scope="module")
def samples() -> list[NliSample]:
    return load_samples(ROOT / "model_repos" / "samples" / "nli_samples.jsonl")


@pytest.fixture(scope="module")
def tokenizer() -> NliTokenizer:
    return NliTokenizer(ASSETS / "tokenizer.json")


@pytest.fixture(scope="module")
def reference_logits(samples: list[NliSample]) -> np.ndarray:  # type: ignore[type-arg]
    client = NliClient(OnnxReference(ASSETS / "model.onnx"), NliTokenizer(ASSETS / "tokenizer.json"))
    return client.logits([s.pair for s in samples])


@pytest.mark.parametrize("repository", ["onnx", "tensorrt", "ensemble"])
def test_repository_agrees_with_onnxruntime_on_every_sample(
    repository: str,
    triton_server_factory: TritonServerFactory,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    reference_logits: np.ndarray,  # type: ignore[type-arg]
) -> None:
    server = triton_server_factory.start(SCENARIO / repository)
    client = NliClient(TritonHttpTransport(server.urls.need("http")), tokenizer)
    results = client.classify([s.pair for s in samples])
    assert [r.label for r in results] == [s.label for s in samples]
    logits = np.array([r.logits for r in results], dtype=np.float32)
    assert_parity({"logits": reference_logits}, {"logits": logits}, preset="fp32", candidate_name=repository)


@pytest.mark.parametrize("binary", [True, False], ids=["binary+json", "octet-stream-json"])
def test_ensemble_over_sagemaker_invocations(
    binary: bool,
    triton_server_factory: TritonServerFactory,
    tokenizer: NliTokenizer,
    samples: list[NliSample],
    tmp_path: Path,
) -> None:
    # the environment SageMaker gets from the archive --cloud uploads, packaged here (not the main job's dist/)
    archive = package_model_tar(SCENARIO / "ensemble", tmp_path / "ensemble.tar.gz", default_model="ensemble_mdeberta")
    env = read_env_file(sidecar_env(archive))
    server = triton_server_factory.start(SCENARIO / "ensemble", sagemaker=True, env=env)
    assert server.urls.sagemaker is not None
    sagemaker = NliClient(SageMakerTransport(server.urls.sagemaker, TEXT_SPECS, binary=binary), tokenizer)
    text_results = sagemaker.classify_text([s.pair for s in samples])
    client_side = NliClient(TritonHttpTransport(server.urls.need("http")), tokenizer).classify(
        [s.pair for s in samples]
    )
    assert [r.label for r in text_results] == [s.label for s in samples]
    assert [r.label for r in text_results] == [r.label for r in client_side]
    np.testing.assert_allclose([r.score for r in text_results], [r.score for r in client_side], rtol=1e-5, atol=1e-6)
