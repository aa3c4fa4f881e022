"""Scenario 07's contract suite: parity across engines and latency budgets on any launcher.

Variants (named by what actually runs, so a CPU run never reports a GPU row as passed):
- ``onnxruntime-fp32-inprocess``: the reference, ONNX Runtime fp32 on the CPU in this process;
- ``triton-ort-gpu`` / ``triton-onnx-cpu``: the ``onnx`` repository served, client tokenizes;
- ``triton-tensorrt-fp16``: the ``tensorrt`` repository with TensorRT active (skipped where it is absent);
- ``triton-cuda-fp16``: an fp16 model on the CUDA provider, where TensorRT is absent but CUDA is present;
- ``triton-ensemble-*``: text in, label and score out (tokenize → mdeberta → postprocess).
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
from pytest_triton.servers.base import TritonLauncher
from pytest_triton.serving import TritonServerFactory

pytest.importorskip("onnxruntime", reason="the reference variant needs onnxruntime (pip install '.[serve]')")

ROOT = Path(__file__).resolve().parents[2]
MODEL_REPOS = ROOT / "model_repos"
SCENARIO = MODEL_REPOS / "scenario07"
ASSETS = MODEL_REPOS / "assets" / "tiny-mdeberta"
SAMPLES = MODEL_REPOS / "samples" / "nli_samples.jsonl"

pytestmark = pytest.mark.xdist_group("embedded-triton")


@dataclass(frozen=True)
class Served:
    """A served scenario-07 repository and the name of the variant it really runs as."""

    server: TritonLauncher
    variant: str
    providers: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def precision(self) -> str:
        """The parity preset for what runs: CUDA fp32 matmuls are TF32 by ONNX Runtime's default."""
        if self.variant.endswith(("fp16", "tensorrt")):
            return "fp16"
        return "tf32" if self.providers[0] == "CUDAExecutionProvider" else "fp32"

    def client(self, tokenizer: NliTokenizer) -> NliClient:
        return NliClient(self.server.transport("http"), tokenizer)


@pytest.fixture(scope="session")
def samples() -> list[NliSample]:
    return load_samples(SAMPLES)


@pytest.fixture(scope="session")
def tokenizer() -> NliTokenizer:
    return NliTokenizer(ASSETS / "tokenizer.json", max_length=512)


@pytest.fixture(scope="session")
def reference() -> NliClient:
    """The in-process ONNX Runtime fp32 reference, behind the same client API as the servers."""
    return NliClient(OnnxReference(ASSETS / "model.onnx"), NliTokenizer(ASSETS / "tokenizer.json"))


@pytest.fixture(scope="session")
def reference_logits(reference: NliClient, samples: list[NliSample]) -> NDArray[np.float32]:
    return reference.logits([s.pair for s in samples])


_ENGINES = {"TensorrtExecutionProvider": "tensorrt", "CUDAExecutionProvider": "gpu", "CPUExecutionProvider": "cpu"}


def _serve(factory: TritonServerFactory, repository: str | Path, stem: str) -> Served:
    """Serve a repository; the variant is named after the provider mdeberta really runs on."""
    server = factory.start(repository if isinstance(repository, Path) else SCENARIO / repository)
    prepared = server.prepared
    adapted = [m for m in (prepared.adapted if prepared else ()) if m.name == "mdeberta"]
    if adapted:
        providers, notes = tuple(adapted[0].providers), tuple(adapted[0].notes)
    else:  # the real onnxruntime backend runs what the config asks for
        providers, notes = ("onnxruntime-backend",), ()
    engine = _ENGINES.get(providers[0], "gpu" if server.has_gpu else "cpu")
    return Served(server, f"{stem}-{engine}", providers, notes)


@pytest.fixture(scope="session")
def onnx_served(triton_server_factory: TritonServerFactory) -> Served:
    served = _serve(triton_server_factory, "onnx", "triton-onnx")
    if served.variant == "triton-onnx-gpu":  # the seed's name for this row
        return Served(served.server, "triton-ort-gpu", served.providers, served.notes)
    return served


@pytest.fixture(scope="session")
def ensemble_served(triton_server_factory: TritonServerFactory) -> Served:
    return _serve(triton_server_factory, "ensemble", "triton-ensemble")


def tensorrt_missing_reason(server_has_gpu: bool) -> str | None:
    """Why the TensorRT variant cannot run here, or None when it can."""
    from pytest_triton.repository.onnx_adapter import tensorrt_unavailable_reason

    if not server_has_gpu:
        return "TensorRT needs a GPU and none is visible (run the --gpu suite on a GPU runner)"
    return tensorrt_unavailable_reason()


@pytest.fixture(scope="session")
def tensorrt_served(triton_server_factory: TritonServerFactory, onnx_served: Served) -> Served:
    reason = tensorrt_missing_reason(onnx_served.server.has_gpu)
    if reason is not None:
        pytest.skip(reason)
    served = _serve(triton_server_factory, "tensorrt", "triton")
    if served.providers[0] not in ("TensorrtExecutionProvider", "onnxruntime-backend"):
        pytest.skip(f"TensorRT is not active: the model runs on {served.providers[0]} ({'; '.join(served.notes)})")
    return Served(served.server, "triton-tensorrt-fp16", served.providers, served.notes)


@pytest.fixture(scope="session")
def cuda_fp16_served(
    triton_server_factory: TritonServerFactory, onnx_served: Served, tmp_path_factory: pytest.TempPathFactory
) -> Served:
    """mdeberta converted to fp16 (inputs and outputs kept as they are) on the CUDA provider."""
    import onnxruntime

    if not onnx_served.server.has_gpu:
        pytest.skip("the CUDA fp16 variant needs a GPU and none is visible (run the --gpu suite on a GPU runner)")
    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime offers no CUDAExecutionProvider (install onnxruntime-gpu: the gpu extra)")
    if tensorrt_missing_reason(True) is None:
        pytest.skip("TensorRT is present: the triton-tensorrt-fp16 variant covers fp16 here")
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
    served = _serve(triton_server_factory, builder.build(), "triton-cuda")
    if served.providers[0] != "CUDAExecutionProvider":
        pytest.fail(f"the fp16 model was asked to run on CUDA but runs on {served.providers[0]}")
    return Served(served.server, "triton-cuda-fp16", served.providers, served.notes)
