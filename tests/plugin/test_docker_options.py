"""Launcher settings (``--triton-setting KEY=VALUE``, ini ``triton_settings``) reach the launcher a fixture builds,
and the launcher refuses a key it does not read, listing its own (no daemon needed to check it)."""

from __future__ import annotations

import pytest

CHECKS_SETTINGS = """
from pytest_triton.servers.docker.launcher import DockerLauncher


def test_settings(triton_server_factory, tmp_path):
    assert triton_server_factory.launcher == "docker"
    launcher = triton_server_factory.create(tmp_path)
    assert isinstance(launcher, DockerLauncher)
    assert launcher.image == "example.org/triton:1"
    assert launcher.container.network == "bridge"
    assert launcher.container.shm_size == "2g"
    assert launcher.container.pull == "never"
    assert launcher.container.gpu is False  # gpu_devices only counts with --triton-gpu
    assert launcher.startup_timeout == 900.0
    assert launcher.container.ulimits["stack"] == 67108864


def test_docker_marker_runs(request):
    assert request.node.get_closest_marker("triton_docker") is None


import pytest


@pytest.mark.triton_docker
def test_marked_docker():
    pass
"""


def test_settings_from_option_and_ini_become_launcher_settings(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CHECKS_SETTINGS)
    # ini first, the command line after it: a key given on both takes the command line's value
    pytester.makeini("[pytest]\ntriton_settings =\n    container_startup_timeout = 900\n    shm_size=8g\n")
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--triton-launcher",
        "docker",
        "--triton-image",
        "example.org/triton:1",
        "--triton-setting",
        "network=bridge",
        "--triton-setting",
        "shm_size=2g",
        "--triton-setting",
        "pull=never",
        "--triton-setting",
        "gpu_devices=0",
    )
    result.assert_outcomes(passed=3)


def test_unknown_setting_lists_the_launchers_keys(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--triton-launcher", "docker", "--triton-setting", "shm=2g"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*setting shm='2g' is not one the 'docker' launcher reads*its settings: *network: *shm_size: *"]
    )
    # each launcher has its own keys: the local launcher reads the binary, not a container's shared memory
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--triton-setting", "shm_size=2g")
    result.stderr.fnmatch_lines(["*setting shm_size='2g' is not one the 'local' launcher reads*tritonserver: *"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--triton-setting", "no-equals")
    result.stderr.fnmatch_lines(["*--triton-setting 'no-equals' is not KEY=VALUE*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--triton-startup-timeout", "soon"], "*--triton-startup-timeout='soon': expected a number of seconds >= 0*"),
        (["-o", "triton_window_ms=-1"], "*ini triton_window_ms='-1': expected a number of milliseconds >= 0*"),
        (["--triton-cloud-metrics-wait", "nan"], "*--triton-cloud-metrics-wait='nan': expected a number of seconds*"),
    ],
)
def test_numbers_are_checked_before_tests_run(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_docker_marker_skips_with_another_launcher(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("import pytest\n\n@pytest.mark.triton_docker\ndef test_marked():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs the docker launcher: run with --triton-launcher docker*"])
