"""Traffic to the servers the plugin starts never goes through a proxy (a user behind one is the normal case).

The whole path a test takes (start and readiness, metadata, inference over HTTP, statistics, metrics, model
control, the tritonclient clients) runs with every proxy variable pointing at a port where nothing listens:
a single call that honoured them would fail with "connection refused".
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")

EXAMPLES = Path(__file__).resolve().parents[2] / "model_repos" / "examples"

pytestmark = pytest.mark.xdist_group("embedded-triton")

EVERY_CALL = """
import numpy as np

from pytest_triton.bench.server_stats import StatsWindow
from pytest_triton.bench.server_stats import fetch_metrics
from pytest_triton.client.rest import TritonRest


def test_every_call_bypasses_the_proxy(triton_server_factory):
    server = triton_server_factory.start(EXAMPLES)
    http = server.transport("http")
    a = np.ones((1, 4), np.float32)
    assert [s.name for s in http.input_specs("python_add")] == ["A", "B"]
    with StatsWindow(server.urls.need("http"), "python_add") as window:
        assert http.infer("python_add", {"A": a, "B": a}, ["SUM"])["SUM"].tolist() == [[2.0] * 4]
    assert window.split is not None and window.split.for_model("python_add") is not None
    assert server.transport("grpc").infer("python_add", {"A": a, "B": a}, ["SUM"])["SUM"].tolist() == [[2.0] * 4]
    assert TritonRest(server.urls.need("http")).statistics("python_add")["model_stats"]
    assert fetch_metrics(server.urls.need("metrics"))
    server.control.unload("python_add")
    server.control.load("python_add")
    assert server.control.ready("python_add")
    assert server.clients().http.is_model_ready("python_add")
"""


def test_the_fixtures_ignore_proxy_variables(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens there
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, dead)
    for name in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(EVERY_CALL.replace("EXAMPLES", repr(str(EXAMPLES))))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
