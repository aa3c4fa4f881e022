"""A launcher from another package runs tests through the ordinary fixtures, chosen by --triton-launcher."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")

EXAMPLES = Path(__file__).resolve().parents[2] / "model_repos" / "examples"

pytestmark = pytest.mark.xdist_group("embedded-triton")

# a launcher package of someone else's: it wraps the local launcher and counts what it was asked to do
TOY_LAUNCHER = """
from pytest_triton.servers.local.launcher import LocalLauncher

CALLS = []


class ToyLauncher:
    name = "toy"

    def __init__(self, inner):
        self._inner = inner

    @classmethod
    def from_options(cls, repository, options, *, models=None):
        CALLS.append(("from_options", repository.name if repository else None, options.startup_timeout))
        return cls(LocalLauncher.from_options(repository, options, models=models))

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def start(self):
        CALLS.append(("start",))
        self._inner.start()
        return self

    def stop(self):
        CALLS.append(("stop",))
        self._inner.stop()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
"""

USES_THE_TOY = """
import numpy as np
import tritonclient.http as httpclient

import toy_launcher


def test_session_server_is_the_toy(triton_server, triton_client):
    assert type(triton_server).__name__ == "ToyLauncher"
    a = np.arange(4, dtype=np.float32).reshape(1, 4)
    inputs = [httpclient.InferInput(n, [1, 4], "FP32") for n in ("A", "B")]
    for tensor in inputs:
        tensor.set_data_from_numpy(a)
    assert triton_client.http.infer("python_add", inputs).as_numpy("SUM").tolist() == [[0.0, 2.0, 4.0, 6.0]]
    assert triton_server.control.ready("python_add")


def test_factory_uses_the_toy_too(triton_server_factory):
    server = triton_server_factory.start(EXAMPLES)
    assert type(server).__name__ == "ToyLauncher"
    ones = np.ones((1, 4), np.float32)
    out = server.transport().infer("python_add", {"A": ones, "B": ones}, ["SUM"])
    assert out["SUM"].tolist() == [[2.0, 2.0, 2.0, 2.0]]
    assert [c[0] for c in toy_launcher.CALLS].count("start") == 2
    assert ("from_options", "examples", 77.0) in toy_launcher.CALLS
"""


def _install_toy(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``toy`` launcher importable and declared in the entry-point group, as an installed package is."""
    pytester.makepyfile(toy_launcher=TOY_LAUNCHER)
    dist = pytester.path / "toy_launcher-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-launcher\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[pytest_triton.launchers]\ntoy = toy_launcher:ToyLauncher\n")
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))


def test_a_launcher_from_another_package_serves_the_fixtures(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _install_toy(pytester, monkeypatch)
    pytester.makeini("[pytest]\ntriton_startup_timeout = 77\n")
    pytester.makepyfile(test_toy=USES_THE_TOY.replace("EXAMPLES", repr(str(EXAMPLES))))
    # "--opt=PATH": pytest takes a bare existing path among the arguments into its rootdir/ini search
    result = pytester.runpytest_subprocess(
        "--triton-launcher=toy", f"--triton-repository={EXAMPLES}", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)


def test_an_unknown_launcher_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(triton_server_factory):\n    pass\n")
    result = pytester.runpytest_subprocess("--triton-launcher", "nope", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*launcher='nope' is not a known launcher (known: docker, local, sagemaker, sagemaker-local, url*"]
    )
    assert "passed" not in result.stdout.str()


def test_a_launcher_cleans_up_at_the_session_end_without_the_hooks_naming_it(pytester: pytest.Pytester) -> None:
    # a launcher that labels what it leaves with the session's run cleans it up in end_session(run): the
    # controller calls it once, with the run id its workers shared, whatever the launcher is called
    ended = pytester.path / "ended.txt"
    pytester.makeconftest(
        f"""
        import os
        from pytest_triton.servers.registry import register_launcher

        class NotedLauncher:
            @classmethod
            def end_session(cls, run):
                with open({str(ended)!r}, "a") as out:
                    out.write(run + " " + os.environ["PYTEST_TRITON_RUN_ID"] + "\\n")

        register_launcher("noted", NotedLauncher)
        """
    )
    pytester.makepyfile("def test_nothing_served():\n    pass\n")
    try:
        pytester.runpytest("--triton-launcher", "noted").assert_outcomes(passed=1)
    finally:  # the registry is this process's: other tests list the known launchers
        from pytest_triton.servers.registry import unregister_launcher

        unregister_launcher("noted")
    ((run, current),) = [line.split() for line in ended.read_text().splitlines()]
    assert run == current  # this session's own run, still set while it cleans up
    assert len(run) == 16
