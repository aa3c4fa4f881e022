"""Scenario 07's contracts that its declaration cannot say (model_repos/scenario07.contracts.toml says the rest:
parity of the onnx repository over HTTP and gRPC, of TensorRT fp16 and of the ensemble's logits and labels; the
latency of each, of the in-process reference and the relative budgets between them).

What is left here:
- the reference itself gets the samples' ground-truth labels, by a clear margin (a declaration compares variants
  with the reference, not the reference with the truth);
- ``triton-cuda-fp16``: an fp16 model built at test time for the CUDA provider, where TensorRT is absent but
  CUDA is present (a declaration names committed repositories);
- the ensemble's SCORE against tokenizing in the client (NLI-specific client code).

Every server is reached over the first protocol it offers (``server.urls``: http, grpc, sagemaker), so the suite
runs on any launcher.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from pytest_triton.client.nli import NliClient
from pytest_triton.client.nli import NliSample
from pytest_triton.client.nli import NliTokenizer
from pytest_triton.client.nli import load_samples
from pytest_triton.client.reference import OnnxReference
from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.plugin.server_factory import TritonServerFactory
from pytest_triton.servers.protocol import TritonServer

pytest.importorskip("onnxruntime", reason="the reference variant needs onnxruntime (pip install '.[serve]')")

ROOT = Path(__file__).resolve().parents[2]
MODEL_REPOS = ROOT / "model_repos"
SCENARIO = MODEL_REPOS / "scenario07"
ASSETS = MODEL_REPOS / "assets" / "tiny-mdeberta"
SAMPLES = MODEL_REPOS / "samples" / "nli_samples.jsonl"
REFERENCE = "onnxruntime-fp32-inprocess"  # the reference's name in the declaration and the reports

pytestmark = pytest.mark.xdist_group("embedded-triton")

PROTOCOLS: tuple[InferenceEndpoint, ...] = ("http", "grpc", "sagemaker")


def protocol_of(server: TritonServer) -> InferenceEndpoint:
    """The first inference protocol ``server`` offers (a SageMaker endpoint offers only ``sagemaker``)."""
    urls = server.urls
    offered = [p for p in PROTOCOLS if getattr(urls, p) is not None]
    if not offered:
        pytest.fail(f"the server offers no inference endpoint: {urls.as_dict()}")
    return offered[0]


@dataclass(frozen=True)
class Served:
    """A served scenario-07 repository, the protocol it is reached by and what its mdeberta runs on."""

    server: TritonServer
    variant: str
    providers: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def protocol(self) -> InferenceEndpoint:
        return protocol_of(self.server)

    def client(self, tokenizer: NliTokenizer) -> NliClient:
        return NliClient(self.server.transport(self.protocol), tokenizer)


@pytest.fixture(scope="session")
def samples() -> list[NliSample]:
    return load_samples(SAMPLES)


@pytest.fixture(scope="session")
def tokenizer() -> NliTokenizer:
    return NliTokenizer(ASSETS / "tokenizer.json", max_length=512)


@pytest.fixture(scope="session")
def reference_logits(samples: list[NliSample]) -> NDArray[np.float32]:
    """The in-process ONNX Runtime fp32 reference's logits of every sample."""
    reference = NliClient(OnnxReference(ASSETS / "model.onnx"), NliTokenizer(ASSETS / "tokenizer.json"))
    return reference.logits([s.pair for s in samples])


def serve(factory: TritonServerFactory, repository: str | Path, variant: str) -> Served:
    server = factory.start(repository if isinstance(repository, Path) else SCENARIO / repository)
    prepared = server.prepared
    adapted = [m for m in (prepared.adapted if prepared else ()) if m.name == "mdeberta"]
    if adapted:
        providers, notes = tuple(adapted[0].providers), tuple(adapted[0].notes)
    else:  # the real onnxruntime backend runs what the config asks for
        providers, notes = ("onnxruntime-backend",), ()
    return Served(server, variant, providers, notes)


@pytest.fixture(scope="session")
def ensemble_served(triton_server_factory: TritonServerFactory) -> Served:
    return serve(triton_server_factory, "ensemble", "triton-ensemble")


def cuda_fp16_missing_reason(triton_server_factory: TritonServerFactory) -> str | None:
    """Why the CUDA fp16 variant cannot run here, or None (decided before any server starts)."""
    import onnxruntime

    from pytest_triton.repository.onnx_adapter import tensorrt_unavailable_reason

    if not triton_server_factory.options.gpu:
        return "the CUDA fp16 variant needs a GPU: run the --gpu suite on a GPU runner"
    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        return "this onnxruntime offers no CUDAExecutionProvider (install onnxruntime-gpu: the gpu extra)"
    if tensorrt_unavailable_reason() is None:
        return "TensorRT is present: the declaration's tensorrt-fp16 variant covers fp16 here"
    return None


@pytest.fixture(scope="session")
def cuda_fp16_served(triton_server_factory: TritonServerFactory, tmp_path_factory: pytest.TempPathFactory) -> Served:
    """mdeberta converted to fp16 (inputs and outputs kept as they are) on the CUDA provider."""
    reason = cuda_fp16_missing_reason(triton_server_factory)
    if reason is not None:
        pytest.skip(reason)
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    from pytest_triton.repository import RepositoryBuilder

    folder = tmp_path_factory.mktemp("cuda-fp16")
    fp16 = convert_float_to_float16(onnx.load(str(ASSETS / "model.onnx")), keep_io_types=True)
    onnx.save(fp16, str(folder / "model_fp16.onnx"))
    builder = RepositoryBuilder(folder / "repository").add_onnx(
        "mdeberta",
        folder / "model_fp16.onnx",
        max_batch_size=32,
        max_queue_delay_microseconds=1000,
        instance_kind="KIND_GPU",
    )
    served = serve(triton_server_factory, builder.build(), "triton-cuda-fp16")
    if served.providers[0] != "CUDAExecutionProvider":
        pytest.fail(f"the fp16 model was asked to run on CUDA but runs on {served.providers[0]}")
    return served
