"""A guest in other suites: with pytest-triton installed, a suite that has its own ``--gpu``, ``--cloud`` /
``--endpoint``, ``gpu`` / ``docker`` / ``cloud`` markers or pytest-docker's fixtures runs exactly as with
``-p no:triton`` (the same outcomes, no new warning); where nothing else defines them, the short forms reach the
plugin's own modes."""

from __future__ import annotations

import importlib.util

import pytest

# every warning is an error and every marker must be registered: a new warning or mark would fail the run
STRICT_INI = "[pytest]\naddopts = --strict-markers -p no:cacheprovider\nfilterwarnings = error\n"


def outcomes(pytester: pytest.Pytester, *args: str) -> tuple[dict[str, int], dict[str, int], str]:
    """The outcomes of one run with the plugin and one with ``-p no:triton``, and the plugin run's output."""
    ours = pytester.runpytest_subprocess(*args)
    theirs = pytester.runpytest_subprocess("-p", "no:triton", *args)
    assert "warning" not in theirs.stdout.str().lower(), theirs.stdout.str()
    return ours.parseoutcomes(), theirs.parseoutcomes(), ours.stdout.str()


def assert_unchanged(pytester: pytest.Pytester, *args: str, expected: dict[str, int]) -> str:
    __tracebackhide__ = True
    ours, theirs, output = outcomes(pytester, *args)
    assert theirs == expected, f"the suite itself changed: {theirs}"
    assert ours == theirs, output
    assert "warning" not in output.lower(), output
    return output


OWN_GPU_CONFTEST = """
import pytest

def pytest_addoption(parser):
    parser.addoption("--gpu", action="store_true", default=False, help="run the suite's GPU tests")

def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs the suite's --gpu")

def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("gpu") and not config.getoption("gpu"):
            item.add_marker(pytest.mark.skip(reason="the suite's own skip: no --gpu"))
"""

OWN_GPU_TESTS = """
import pytest

@pytest.mark.gpu
def test_on_gpu(request):
    assert request.config.getoption("gpu") is True

def test_anywhere():
    pass
"""


def test_own_gpu_option_in_a_conftest(pytester: pytest.Pytester) -> None:
    pytester.makeini(STRICT_INI)
    pytester.makeconftest(OWN_GPU_CONFTEST)
    pytester.makepyfile(OWN_GPU_TESTS)
    output = assert_unchanged(pytester, "--gpu", "-v", expected={"passed": 2})
    # said once, in the header: the suite's --gpu is its own, the plugin's GPU mode is --triton-gpu
    assert output.count("this suite defines --gpu; use --triton-gpu (not --gpu)") == 1, output
    assert_unchanged(pytester, expected={"passed": 1, "skipped": 1})


def test_own_gpu_option_in_a_plugin_loaded_first(pytester: pytest.Pytester) -> None:
    """The other order: a plugin given with -p loads before pytest-triton's entry point."""
    pytester.makeini(STRICT_INI)
    pytester.makepyfile(gpuplugin=OWN_GPU_CONFTEST, test_suite=OWN_GPU_TESTS)
    pytester.syspathinsert()
    output = assert_unchanged(pytester, "-p", "gpuplugin", "--gpu", expected={"passed": 2})
    assert "use --triton-gpu (not --gpu)" in output


def test_own_markers_named_gpu_docker_cloud(pytester: pytest.Pytester) -> None:
    pytester.makeini(STRICT_INI + "markers =\n    gpu: ours\n    docker: ours\n    cloud: ours\n")
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.gpu
        def test_gpu():
            pass

        @pytest.mark.docker
        def test_docker():
            pass

        @pytest.mark.cloud
        def test_cloud():
            pass
        """
    )
    output = assert_unchanged(pytester, "-rs", expected={"passed": 3})
    assert "pytest-triton" not in output  # nothing to say: the suite's markers are its own


def test_own_cloud_and_endpoint_options(pytester: pytest.Pytester) -> None:
    pytester.makeini(STRICT_INI)
    pytester.makeconftest(
        """
        def pytest_addoption(parser):
            parser.addoption("--cloud", action="store_true", default=False)
            parser.addoption("--endpoint", default=None)
        """
    )
    pytester.makepyfile(
        """
        def test_options(request):
            assert request.config.getoption("cloud") is True
            assert request.config.getoption("endpoint") == "prod"
        """
    )
    output = assert_unchanged(pytester, "--cloud", "--endpoint", "prod", expected={"passed": 1})
    assert "use --triton-cloud (not --cloud), --triton-endpoint (not --endpoint)" in output
    assert_unchanged(pytester, "--cloud", "--endpoint=prod", expected={"passed": 1})


def test_own_cloud_option_keeps_endpoint_with_it(pytester: pytest.Pytester) -> None:
    """A suite with --cloud alone keeps --endpoint unknown, as without the plugin (the pair stays together)."""
    pytester.makeini(STRICT_INI)
    pytester.makeconftest('def pytest_addoption(parser):\n    parser.addoption("--cloud", action="store_true")\n')
    pytester.makepyfile("def test_x():\n    pass\n")
    ours = pytester.runpytest_subprocess("--cloud", "--endpoint", "x")
    theirs = pytester.runpytest_subprocess("-p", "no:triton", "--cloud", "--endpoint", "x")
    assert ours.ret == theirs.ret == pytest.ExitCode.USAGE_ERROR
    ours.stderr.fnmatch_lines(["*unrecognized arguments: --endpoint*"])


@pytest.mark.skipif(
    importlib.util.find_spec("pytest_docker") is None,
    reason="pytest-docker is not installed: pip install pytest-docker",
)
def test_pytest_docker_fixtures_and_a_docker_marker(pytester: pytest.Pytester) -> None:
    """pytest-docker's own fixtures (no compose run needed for these) beside a suite's ``docker`` marker."""
    pytester.makeini(STRICT_INI + "markers =\n    docker: needs docker compose\n")
    pytester.makefile(".yml", **{"tests/docker-compose": "services: {}\n"})
    pytester.makepyfile(
        **{
            "tests/test_compose": """
            import pytest

            @pytest.mark.docker
            def test_compose_file(docker_compose_file, docker_compose_project_name):
                assert str(docker_compose_file).endswith("docker-compose.yml")
                assert docker_compose_project_name.startswith("pytest")

            @pytest.mark.docker
            def test_ip(docker_ip, docker_setup, docker_cleanup):
                assert docker_ip
                assert docker_setup and docker_cleanup
            """
        }
    )
    assert_unchanged(pytester, "--container-scope", "module", "-rs", expected={"passed": 2})


# -- where nothing else defines them, the short forms reach the plugin's own modes ---------------------------


def test_short_gpu_reaches_the_plugins_gpu_mode(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    for spelling in ("--gpu", "--triton-gpu"):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", spelling)
        if result.ret == 0:  # a GPU machine: the plugin's GPU mode is on
            continue
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*was asked for (--triton-gpu, or --gpu) but no GPU is visible*"])
    # without the plugin, --gpu is nobody's
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:triton", "--gpu")
    result.stderr.fnmatch_lines(["*unrecognized arguments: --gpu*"])


def test_short_cloud_and_endpoint_reach_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_options(request):
            assert request.config.getoption("triton_cloud") is True
            assert request.config.getoption("triton_endpoint") == "prod"
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--cloud", "--endpoint", "prod")
    result.assert_outcomes(passed=1)
    assert "this suite defines" not in result.stdout.str()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--endpoint=prod")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--endpoint only applies with --cloud; add --cloud*"])


def test_short_forms_after_double_dash_are_left_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--", "--gpu")
    result.stderr.fnmatch_lines(["*unrecognized arguments: --gpu"])  # pytest's own answer, untranslated


def test_plugin_markers_are_namespaced(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.triton_gpu
        def test_gpu():
            pass

        @pytest.mark.triton_docker
        def test_docker():
            pass

        @pytest.mark.triton_cloud
        def test_cloud():
            pass
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", "-rs")
    result.assert_outcomes(skipped=3)
    result.stdout.fnmatch_lines(
        [
            "*needs a GPU: run with --gpu on a GPU runner*",
            "*needs the docker launcher: run with --triton-launcher docker*",
            "*needs a SageMaker endpoint: run with --cloud*",
        ]
    )
