"""Every row says its path, whichever door it came through: a user's own test measuring through the public
fixtures (``triton_bench.measure(call, served_by=ServedBy(url, model))``) on an ONNX model the embedded server adapts
gets ``adapter`` with the adapter's calibration, as a contract row does, and so does an ensemble whose step is
adapted (its calibration: the ensemble with a no-work step); a URL the session did not start says ``unknown``
and why."""

from __future__ import annotations

import json

import pytest

from pytest_triton.bench.engine import engine_at
from pytest_triton.repository import EnsembleStep
from pytest_triton.repository import RepositoryBuilder
from pytest_triton.repository import TensorSpec
from tests.plugin.test_contract_items import POSTPROCESS
from tests.plugin.test_contract_items import scorer_onnx

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")
pytest.importorskip("onnxruntime", reason="the ONNX adapter needs onnxruntime (pip install '.[serve]')")

pytestmark = pytest.mark.xdist_group("embedded-triton")

USER_TEST = """
import numpy as np

from pytest_triton.bench.session import ServedBy


def test_scorer_latency(triton_server_factory, triton_bench):
    server = triton_server_factory.start("repo")
    transport = server.transport()
    x = np.ones((1, 4), np.float32)
    scorer = lambda: transport.infer("scorer", {"x": x}, ["scores"])
    triton_bench.measure("scorer", scorer, served_by=ServedBy(server.urls.http, "scorer"))
    pipe = lambda: transport.infer("pipeline", {"X": x}, ["PROBS"])
    triton_bench.measure("pipeline", pipe, served_by=ServedBy(server.urls.http, "pipeline"))
    triton_bench.measure_interleaved({"alone": scorer}, served_by={"alone": ServedBy(server.urls.http, "scorer")})
"""


def test_a_fixture_api_row_on_an_adapted_model_says_adapter_with_its_calibration(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    onnx = scorer_onnx(pytester.path / "scorer.onnx")
    repo = RepositoryBuilder(pytester.path / "repo").add_onnx("scorer", onnx, max_batch_size=8)
    scores = TensorSpec("scores", "TYPE_FP32", (3,))
    probs = TensorSpec("PROBS", "TYPE_FP32", (3,))
    repo.add_python("post", source=POSTPROCESS, inputs=[scores], outputs=[probs], max_batch_size=8)
    repo.add_ensemble(
        "pipeline",
        max_batch_size=8,
        inputs=[TensorSpec("X", "TYPE_FP32", (4,))],
        outputs=[probs],
        steps=[
            EnsembleStep("scorer", {"x": "X"}, {"scores": "S"}),
            EnsembleStep("post", {"scores": "S"}, {"PROBS": "PROBS"}),
        ],
    ).build()
    pytester.makepyfile(test_user=USER_TEST)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--triton-report", "out/run", "--triton-window-ms", "100"
    )
    result.assert_outcomes(passed=1)
    rows = {r["variant"]: r for r in json.loads((pytester.path / "out" / "run.json").read_text())["results"]}
    scorer, alone = rows["scorer"], rows["alone"]
    assert scorer["path"] == "adapter", scorer["engine_reason"]
    assert scorer["calibration"] is not None, scorer["calibration_missing"]
    assert scorer["calibration"]["count"] > 0
    # an ensemble whose step is adapted carries its steps' calibration: the ensemble with no-work ONNX steps
    pipeline = rows["pipeline"]
    assert pipeline["path"] == "adapter", pipeline["engine_reason"]
    assert pipeline["calibration"] is not None, pipeline["calibration_missing"]
    assert pipeline["calibration"]["model"] == "pipeline__pytest_triton_calibration"
    assert alone["path"] == "adapter"
    assert "side-by-side row" in alone["calibration_missing"]


def test_a_url_the_session_did_not_start_is_unknown_with_the_reason() -> None:
    engine = engine_at([], "http://127.0.0.1:1", "scorer", 1)
    assert engine.path == "unknown"
    assert engine.reason == "http://127.0.0.1:1 is not a server this session started: how it serves scorer is not known"
