"""The ONNX adapter's session options and I/O modes, served on the embedded Triton (CPU provider here).

Each variant must answer exactly what ONNX Runtime answers in-process, for two batch sizes in a row
(the persistent-buffer mode keeps one set of buffers per input shape and must not mix them up), and the
adapter's per-execute timings file must name the model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
ort = pytest.importorskip("onnxruntime", reason="the ONNX adapter and the reference need onnxruntime")

from pytest_triton.client.transports import TritonHttpTransport  # noqa: E402
from pytest_triton.config import read_config  # noqa: E402
from pytest_triton.config import write_config  # noqa: E402
from pytest_triton.plugin.server_factory import TritonServerFactory  # noqa: E402
from pytest_triton.repository import RepositoryBuilder  # noqa: E402

from .test_onnx_python_ensemble import make_onnx  # noqa: E402

pytestmark = pytest.mark.xdist_group("embedded-triton")


def _params(**values: str) -> Callable[[Any], None]:
    def edit(config: Any) -> None:
        for key, value in values.items():
            config.parameters[key].string_value = value

    return edit


def _graph_level(config: Any) -> None:
    config.optimization.graph.level = 1


VARIANTS: dict[str, Callable[[Any], None]] = {
    "persistent": _params(pytest_triton_persistent_io="1"),
    "extended": _graph_level,
    "one_thread": _params(intra_op_thread_count="1", execution_mode="0"),
}


def test_adapter_options_answer_like_onnxruntime(
    triton_repository: RepositoryBuilder,
    triton_server_factory: TritonServerFactory,
    tmp_path: Path,
) -> None:
    onnx_file = make_onnx(tmp_path / "dense.onnx")
    for name in VARIANTS:
        triton_repository.add_onnx(name, onnx_file, max_batch_size=8)
    repo = triton_repository.build()
    for name, edit in VARIANTS.items():
        config = read_config(repo / name / "config.pbtxt").message
        edit(config)
        write_config(config, repo / name / "config.pbtxt")
    timings = tmp_path / "timings.txt"
    server = triton_server_factory.start(repo, env={"PYTEST_TRITON_ADAPTER_TIMINGS": str(timings)})
    reference = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    assert server.urls.http is not None
    http = TritonHttpTransport(server.urls.http)
    rng = np.random.default_rng(7)
    try:
        for rows in (3, 5, 3):
            x = rng.standard_normal((rows, 4)).astype(np.float32)
            expected = reference.run(["Y"], {"X": x})[0]
            for name in VARIANTS:
                served = http.infer(name, {"X": x}, ["Y"])["Y"]
                np.testing.assert_allclose(served, expected, rtol=0, atol=1e-6, err_msg=f"variant {name}, {rows} rows")
    finally:
        http.close()
    lines = [line.split() for line in timings.read_text(encoding="utf-8").splitlines()]
    assert {line[0] for line in lines} == set(VARIANTS)
    assert all(float(line[2]) > 0 and float(line[3]) >= float(line[2]) for line in lines)  # run within execute
