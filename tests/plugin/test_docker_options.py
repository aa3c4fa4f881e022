"""The docker launcher's pytest options reach the launcher a fixture builds (no daemon needed to check it)."""

from __future__ import annotations

import pytest

CHECKS_OPTIONS = """
from pathlib import Path

from pytest_triton.servers.docker.launcher import DockerLauncher


def test_options(triton_server_factory, tmp_path):
    assert triton_server_factory.launcher == "docker"
    launcher = triton_server_factory._factory.create(tmp_path)
    assert isinstance(launcher, DockerLauncher)
    assert launcher.image == "example.org/triton:1"
    assert launcher.container.network == "bridge"
    assert launcher.container.shm_size == "2g"
    assert launcher.container.pull == "never"
    assert launcher.container.ryuk is True
    assert launcher.container.gpu is False  # --triton-gpu-devices only counts with --gpu
    assert launcher.startup_timeout == 900.0
    assert launcher.container.ulimits["stack"] == 67108864


def test_docker_marker_runs(request):
    assert request.node.get_closest_marker("docker") is None


import pytest


@pytest.mark.docker
def test_marked_docker():
    pass
"""


def test_docker_options_become_launcher_settings(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CHECKS_OPTIONS)
    pytester.makeini("[pytest]\ntriton_container_startup_timeout = 900\n")
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--triton-launcher",
        "docker",
        "--triton-image",
        "example.org/triton:1",
        "--triton-network",
        "bridge",
        "--triton-shm-size",
        "2g",
        "--triton-pull",
        "never",
        "--triton-ryuk",
        "--triton-gpu-devices",
        "0",
    )
    result.assert_outcomes(passed=3)


def test_docker_marker_skips_with_another_launcher(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n\n@pytest.mark.docker\ndef test_marked():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs the docker launcher: run with --triton-launcher docker*"])
