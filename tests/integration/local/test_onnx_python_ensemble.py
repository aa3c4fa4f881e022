"""Issue 3's end-to-end case: an ONNX model, a python model and an ensemble over both, built
with the triton_repository fixture and served on the embedded Triton (ONNX through the
adapter, since the embedded server has only the python backend)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
ort = pytest.importorskip("onnxruntime", reason="the ONNX adapter and the reference need onnxruntime")

from pytest_triton.client.rest import fetch_text  # noqa: E402
from pytest_triton.plugin.server_factory import TritonServerFactory  # noqa: E402
from pytest_triton.repository import EnsembleStep  # noqa: E402
from pytest_triton.repository import RepositoryBuilder  # noqa: E402
from pytest_triton.repository import TensorSpec  # noqa: E402

pytestmark = pytest.mark.xdist_group("embedded-triton")

SCALE = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        out = []
        for request in requests:
            y = pb_utils.get_input_tensor_by_name(request, "Y").as_numpy()
            out.append(pb_utils.InferenceResponse([pb_utils.Tensor("Z", (y * 2.0).astype(np.float32))]))
        return out
"""


def make_onnx(path: Path) -> Path:
    """y = tanh(x @ W + b), batch dimension symbolic: a tiny model with non-trivial numerics."""
    import onnx
    from onnx import TensorProto
    from onnx import helper
    from onnx import numpy_helper

    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "W")
    bias = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "b")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["X", "W"], ["h"]),
            helper.make_node("Add", ["h", "b"], ["a"]),
            helper.make_node("Tanh", ["a"], ["Y"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 3])],
        [weight, bias],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture(scope="module")
def onnx_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_onnx(tmp_path_factory.mktemp("onnx") / "tiny.onnx")


@pytest.fixture
def pipeline(triton_repository: RepositoryBuilder, onnx_file: Path) -> RepositoryBuilder:
    x, y, z = (
        TensorSpec("X", "TYPE_FP32", (4,)),
        TensorSpec("Y", "TYPE_FP32", (3,)),
        TensorSpec("Z", "TYPE_FP32", (3,)),
    )
    return (
        triton_repository.add_onnx("dense", onnx_file, max_batch_size=8, max_queue_delay_microseconds=100)
        .add_python("scale", source=SCALE, inputs=[y], outputs=[z], max_batch_size=8)
        .add_ensemble(
            "pipeline",
            max_batch_size=8,
            inputs=[x],
            outputs=[TensorSpec("OUT", "TYPE_FP32", (3,)), TensorSpec("MID", "TYPE_FP32", (3,))],
            steps=[EnsembleStep("dense", {"X": "X"}, {"Y": "MID"}), EnsembleStep("scale", {"Y": "MID"}, {"Z": "OUT"})],
        )
    )


def metric(text: str, name: str, model: str) -> float:
    pattern = re.compile(rf'^{name}\{{[^}}]*model="{model}"[^}}]*\}} ([0-9.e+]+)$', re.MULTILINE)
    values = [float(v) for v in pattern.findall(text)]
    assert values, f"{name} for model {model!r} not in metrics"
    return sum(values)


def test_onnx_python_and_ensemble_served_on_embedded_triton(
    pipeline: RepositoryBuilder, triton_server_factory: TritonServerFactory, onnx_file: Path
) -> None:
    server = triton_server_factory.start(pipeline.build())
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    reference = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"]).run(["Y"], {"X": x})[0]

    for transport in (server.transport("http"), server.transport("grpc")):
        served: Any = transport.infer("dense", {"X": x}, ["Y"])["Y"]
        np.testing.assert_allclose(served, reference, rtol=0, atol=1e-6)
        outputs = transport.infer("pipeline", {"X": x}, ["OUT", "MID"])
        np.testing.assert_allclose(outputs["MID"], reference, rtol=0, atol=1e-6)
        np.testing.assert_allclose(outputs["OUT"], reference * 2.0, rtol=0, atol=1e-6)

    metrics = fetch_text(server.urls.need("metrics"), timeout=10)
    assert metric(metrics, "nv_inference_count", "dense") >= 4 * 5
    assert metric(metrics, "nv_inference_queue_duration_us", "dense") > 0
    assert metric(metrics, "nv_inference_compute_infer_duration_us", "dense") > 0

    assert server.prepared is not None
    adapted = [m.name for m in server.prepared.adapted]
    assert adapted == ["dense"]  # announced, never silent; the python models are left as they are
