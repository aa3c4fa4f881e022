"""pytest-benchmark integration, driven in a subprocess: saved JSON holds our samples and percentiles."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pytest_benchmark")

TEST_FILE = """
import os

from pytest_triton.bench.benchmark import record_benchmark
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WarmupRecord
from pytest_triton.bench.sampling import Window

SCALE = float(os.environ.get("PYTEST_TRITON_TEST_SCALE", "1"))
LATENCIES_MS = [15.0, 16.0, 15.5, 17.0, 16.5, 15.2, 15.8, 16.1, 15.9, 30.0]


def test_latency(benchmark):
    samples = tuple(int(v * 1_000_000 * SCALE) for v in LATENCIES_MS)
    window = Window(samples, sum(samples))
    measurement = Measurement(samples, sum(samples), 1, True, "stable", (window,), WarmupRecord({1: (47_700_000_000,)}))
    record_benchmark(benchmark, measurement, extra={"variant": "triton-tensorrt-fp16"})
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--benchmark-storage=file://./store", *args)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # pytest-benchmark disables itself in a process that sees PYTEST_XDIST_WORKER (we may run under xdist)
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    pytester.makepyfile(test_latency=TEST_FILE)
    return pytester


def test_saved_json_holds_the_measured_samples_and_percentiles(project: pytest.Pytester) -> None:
    result = _run(project, "--benchmark-json=out.json")
    result.assert_outcomes(passed=1)
    data = json.loads((project.path / "out.json").read_text())
    (bench,) = data["benchmarks"]
    stats = bench["stats"]
    expected_s = [v / 1000 for v in (15.0, 16.0, 15.5, 17.0, 16.5, 15.2, 15.8, 16.1, 15.9, 30.0)]
    assert stats["data"] == pytest.approx(expected_s)
    assert stats["rounds"] == 10
    assert stats["min"] == pytest.approx(0.015)
    assert stats["max"] == pytest.approx(0.030)
    assert stats["median"] == pytest.approx(0.01595)  # pytest-benchmark's own (interpolated) median
    extra = bench["extra_info"]
    # ours: perf_analyzer nearest rank on 15.0 15.2 15.5 15.8 15.9 16.0 16.1 16.5 17.0 30.0
    assert (extra["p50_ms"], extra["p90_ms"], extra["p95_ms"], extra["p99_ms"]) == (16.0, 17.0, 30.0, 30.0)
    assert extra["samples_per_s"] == pytest.approx(10 / sum(expected_s))
    assert extra["variant"] == "triton-tensorrt-fp16"
    assert extra["warmup_s"] == {"1": [47.7]}
    assert bench["options"]["timer"] == "pytest_triton_replayed_perf_counter_ns"


def test_compare_works_on_the_measured_latencies(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(project, "--benchmark-autosave").assert_outcomes(passed=1)
    saved = list((project.path / "store").rglob("0001_*.json"))
    assert len(saved) == 1
    assert json.loads(saved[0].read_text())["benchmarks"][0]["extra_info"]["p99_ms"] == 30.0

    same = _run(project, "--benchmark-compare=0001", "--benchmark-compare-fail=median:5%")
    assert same.ret == 0, same.stdout.str()

    monkeypatch.setenv("PYTEST_TRITON_TEST_SCALE", "1.5")  # every request 50% slower
    slower = _run(project, "--benchmark-compare=0001", "--benchmark-compare-fail=median:5%")
    assert slower.ret != 0
    slower.stdout.fnmatch_lines(["test_latency (NOW) * 22.5000 (1.50) * 45.0000 (1.50)*"])
    slower.stderr.fnmatch_lines(["*Performance has regressed*", "*test_latency*median*"])


def test_disabled_benchmarks_record_nothing(project: pytest.Pytester) -> None:
    result = _run(project, "--benchmark-disable", "--benchmark-json=out.json")
    result.assert_outcomes(passed=1)
    # pytest-benchmark >= 5.3.1 writes no --benchmark-json file when nothing was recorded (5.2 left it empty)
    assert not (project.path / "out.json").exists()
    result.stdout.no_fnmatch_line("*benchmark: 1 tests*")


def test_skipped_benchmarks_never_run(project: pytest.Pytester) -> None:
    _run(project, "--benchmark-skip").assert_outcomes(skipped=1)


def test_record_needs_samples() -> None:
    from pytest_triton.bench.benchmark import record_benchmark
    from pytest_triton.bench.sampling import Measurement
    from pytest_triton.bench.sampling import WarmupRecord

    empty = Measurement((), 0, 1, False, "none", (), WarmupRecord())

    class Fixture:
        def __init__(self) -> None:
            self.extra_info: dict[str, object] = {}

    with pytest.raises(ValueError, match="no samples"):
        record_benchmark(Fixture(), empty)


def test_compare_finds_the_same_machine_info_it_saved(project: pytest.Pytester) -> None:
    # a test that measures with the session's bench: it exists when the run is saved, not yet when the next run
    # compares (pytest-benchmark compares in its pytest_configure)
    project.makepyfile(test_bench="def test_bench(triton_bench, benchmark):\n    benchmark(lambda: None)\n")
    _run(project, "--benchmark-autosave", "test_bench.py").assert_outcomes(passed=1)
    (saved,) = (project.path / "store").rglob("0001_*.json")
    data = json.loads(saved.read_text())
    assert data["machine_info"]["triton_hardware"]
    assert "triton_enforcement" in data["triton"]  # what the run found, beside the machine's facts
    compared = _run(project, "--benchmark-compare=0001", "test_bench.py")
    assert compared.ret == 0, compared.stdout.str()
    assert "machine_info is different" not in compared.stdout.str() + compared.stderr.str()
