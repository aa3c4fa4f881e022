"""Our own decoupled model under a declaration, served by the docker launcher in the stand-in image.

The same project as tests/plugin/test_stream_contracts.py (stream_repeat, a slowed and a lossy variant), run
with ``--triton-launcher docker``: the stream goes to Triton's gRPC port published by the container.
"""

from __future__ import annotations

import re

import pytest

from ...plugin.test_stream_contracts import project  # noqa: F401  (the fixture)

pytestmark = pytest.mark.xdist_group("docker")


def test_stream_contracts_in_a_container(project: pytest.Pytester, standin_image: str) -> None:  # noqa: F811
    result = project.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--triton-contracts",
        "contracts.toml",
        "--triton-hardware",
        "streaming-test",
        "--triton-launcher",
        "docker",
        "--triton-image",
        standin_image,
        "--triton-setting",
        "pull=never",
        "-rA",
    )
    out = result.stdout.str()
    result.assert_outcomes(passed=2, failed=2)
    assert "streams agree: 'slow' sent 5 response(s), 'repeat' sent 5" in out, out
    assert "streams differ at response 3: 'lossy' sent 4 response(s), 'repeat' sent 5" in out, out
    assert re.search(r"slow: FAILED: gap_p99_ms \d+\.\d\d ms > 40\.00 ms; ttft_p50_ms \d+\.\d\d ms > 40\.00 ms", out), (
        out
    )
    assert re.search(r"PASSED.*latency\[repeat\].*repeat: PASSED", out), out
