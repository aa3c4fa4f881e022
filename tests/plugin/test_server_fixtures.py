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
    assert triton_server.control.ready("python_add")
    assert False, "deliberate"
"""


def test_triton_server_and_client_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USES_CLIENT)
    result = pytester.runpytest_subprocess("--triton-repository", str(EXAMPLES), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*tritonserver 0 log (last 50 lines)*", "*successfully loaded 'python_add'*"])


CRASHES = """
import os
import signal
import time


def test_server_crashes_here(triton_server):
    os.kill(triton_server.pid, signal.SIGSEGV)
    while triton_server.running:
        time.sleep(0.02)


def test_client_after_the_crash(triton_client):
    pass
"""


def test_a_crashed_server_is_named_once_and_fails_later_clients(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CRASHES)
    result = pytester.runpytest_subprocess("--triton-repository", str(EXAMPLES), "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, errors=1)
    for line in (  # the sections come in pytest's order (errors, then passes), not the tests'
        "*ServerError: tritonserver (pid *) is no longer running: it was killed by SIGSEGV (exit code -11)",
        "*tritonserver 0 was killed by SIGSEGV: its log (last 50 lines)*",  # on the passing test, with -rA
        "*tritonserver 0 was killed by SIGSEGV; first seen at *::test_server_crashes_here (call)",  # summary
    ):
        result.stdout.fnmatch_lines([line])
    assert result.stdout.str().count("was killed by SIGSEGV: its log") == 1


def test_triton_server_without_repository_says_what_to_do(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(triton_server):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*triton_server needs a repository: pass --triton-repository PATH*"])


def test_repository_from_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini(f"[pytest]\ntriton_repository = {EXAMPLES}\n")
    pytester.makepyfile("def test_ready(triton_server):\n    assert triton_server.control.ready('python_add')\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


TWO_SERVERS = """
import pytest

EXAMPLES = {examples!r}


@pytest.fixture(scope="session")
def first(triton_server_factory):
    return triton_server_factory.start(EXAMPLES)


@pytest.fixture(scope="session")
def second(triton_server_factory):
    return triton_server_factory.start(EXAMPLES)


def test_starts_both(first, second):
    pass


def test_uses_the_second_and_fails(second):
    assert False, "deliberate"


def test_uses_no_server_and_fails():
    assert 1 + 1 == 3
"""


def test_a_failing_test_gets_only_the_logs_of_the_servers_it_used(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(TWO_SERVERS.format(examples=str(EXAMPLES)))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert out.count("log (last 50 lines)") == 1
    result.stdout.fnmatch_lines(["*test_uses_the_second_and_fails*", "*tritonserver 1 log (last 50 lines)*"])
    assert "tritonserver 0 log" not in out
    assert "CUDA driver version is insufficient" not in out  # the CPU-only probe noise is left out, and said so
