"""The server fixtures as another repository uses them: options, ini, clients, log tails."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")

EXAMPLES = Path(__file__).resolve().parents[2] / "model_repos" / "examples"

pytestmark = pytest.mark.xdist_group("embedded-triton")

USES_CLIENT = """
import numpy as np
import tritonclient.http as httpclient


def test_add(triton_client):
    a = np.arange(4, dtype=np.float32).reshape(1, 4)
    inputs = [httpclient.InferInput(n, [1, 4], "FP32") for n in ("A", "B")]
    for tensor in inputs:
        tensor.set_data_from_numpy(a)
    result = triton_client.http.infer("python_add", inputs)
    assert result.as_numpy("SUM").tolist() == [[0.0, 2.0, 4.0, 6.0]]
    assert triton_client.grpc.is_model_ready("python_add")


def test_fails_and_shows_the_server_log(triton_server):
    assert triton_server.model_ready("python_add")
    assert False, "deliberate"
"""


def test_triton_server_and_client_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USES_CLIENT)
    result = pytester.runpytest_subprocess("--triton-repository", str(EXAMPLES), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*tritonserver 0 log (last 50 lines)*", "*successfully loaded 'python_add'*"])


def test_triton_server_without_repository_says_what_to_do(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(triton_server):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*triton_server needs a repository: pass --triton-repository PATH*"])


def test_repository_from_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini(f"[pytest]\ntriton_repository = {EXAMPLES}\n")
    pytester.makepyfile("def test_ready(triton_server):\n    assert triton_server.model_ready('python_add')\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
