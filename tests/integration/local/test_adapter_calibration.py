"""An adapted row carries the adapter's cost, measured on the same server, interleaved with it.

Scenario 07's ``onnx`` repository on the embedded Triton (no onnxruntime backend: its model is adapted). The
calibration model is written into the server's staged repository, loaded there, answers with the row's output
names, types and batch, and is measured in alternating windows with the row's model.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
pytest.importorskip("onnxruntime", reason="the ONNX adapter needs onnxruntime")

from pytest_triton.bench.engine import CALIBRATION_SUFFIX
from pytest_triton.bench.engine import engine_of
from pytest_triton.bench.report import table_lines
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.session import ServedBy
from pytest_triton.bench.session import TritonBench
from pytest_triton.client.transports import TritonHttpTransport
from pytest_triton.plugin.server_factory import TritonServerFactory

pytestmark = pytest.mark.xdist_group("embedded-triton")
ONNX = Path(__file__).resolve().parents[3] / "model_repos" / "scenario07" / "onnx"


def test_an_adapted_row_is_marked_and_calibrated_on_the_same_server(
    triton_server_factory: TritonServerFactory,
) -> None:
    server = triton_server_factory.start(ONNX)
    engine = engine_of(server, "mdeberta")
    assert engine.path == "adapter"
    assert engine.calibration_model == "mdeberta" + CALIBRATION_SUFFIX, engine.calibration_missing
    url = server.urls.http
    assert url is not None
    transport = TritonHttpTransport(url)
    try:
        ids = np.ones((1, 512), np.int64)
        inputs = {"input_ids": ids, "attention_mask": ids}
        answer = transport.infer(engine.calibration_model, inputs, ["logits"])
        assert answer["logits"].shape == (1, 3)
        assert answer["logits"].dtype == np.float32
        row = transport.prepare("mdeberta", inputs, ["logits"])
        calibration = transport.prepare(engine.calibration_model, inputs, ["logits"])
        bench = TritonBench(hardware="test-machine", policy=WindowPolicy(window_requests=8, max_windows=6))
        result = bench.measure(
            "onnx",
            lambda: transport.send(row),
            served_by=ServedBy(url, "mdeberta"),
            engine=engine.with_call(lambda: transport.send(calibration)),
        )
    finally:
        transport.close()
    assert result.path == "adapter"
    assert result.calibration is not None
    assert result.calibration.model == engine.calibration_model
    assert result.calibration.count >= 8
    assert result.calibration.server_infer_us is not None  # Triton's split of the calibration's own windows
    assert result.server is not None
    assert [m.model for m in result.server.models] == ["mdeberta"]  # the row's split holds only its model
    assert any("adapter calibration" in line for line in table_lines([result]))


def test_a_model_the_server_runs_natively_is_marked_native(triton_server_factory: TritonServerFactory) -> None:
    # the python-backend models of the ensemble repository (tokenize, postprocess) are nobody's adaptation
    server = triton_server_factory.start(ONNX.parent / "ensemble")
    assert engine_of(server, "tokenize").path == "native"
    ensemble = engine_of(server, "ensemble_mdeberta", calibrate=False)
    assert ensemble.path == "adapter"
    assert "mdeberta" in ensemble.reason
