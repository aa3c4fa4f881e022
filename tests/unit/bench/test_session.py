"""TritonBench: warm-up of every shape, measurement, budgets by hardware, skips, summary and report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_triton.bench.budgets import parse_budgets
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.session import ServedBy
from pytest_triton.bench.session import Throughput
from pytest_triton.bench.session import TritonBench
from pytest_triton.errors import ConfigError

MS = 1_000_000
SHIPPED = Path(__file__).resolve().parents[3] / "model_repos" / "budgets.toml"


class FakeServer:
    """A TensorRT-like server: the first request of each batch size builds an engine (seconds)."""

    def __init__(self, latency_ms: dict[int, float]) -> None:
        self.now = 0
        self.latency_ms = latency_ms
        self.built: set[int] = set()
        self.log: list[tuple[int, bool]] = []  # (batch size, was an engine build)

    def clock(self) -> int:
        return self.now

    def request(self, batch_size: int) -> Callable[[], None]:
        def call() -> None:
            build = batch_size not in self.built
            self.built.add(batch_size)
            self.log.append((batch_size, build))
            self.now += int((47_700 if build else self.latency_ms[batch_size]) * MS)

        return call


BUDGETS = parse_budgets(
    """
[nvidia-a10g]
source = "seed 002"
[nvidia-a10g.trt]
p50_ms = 15.4
p99_ms = 17.4
samples_per_s = 185
""",
    "budgets.toml",
)


def test_measure_warms_every_shape_first_and_never_samples_an_engine_build() -> None:
    server = FakeServer({1: 15.0, 8: 42.0})
    bench = TritonBench(hardware="nvidia-a10g", budgets=BUDGETS, clock=server.clock)
    result = bench.measure(
        "trt",
        server.request(1),
        throughput=Throughput(server.request(8)),
        policy=WindowPolicy(window_requests=10),
        warmup=2,
    )
    builds = [i for i, (_, build) in enumerate(server.log) if build]
    assert builds == [0, 2]  # b=1 then b=8 engine builds, both in the warm-up (first 4 calls)
    assert server.log[:4] == [(1, True), (1, False), (8, True), (8, False)]
    assert result.latency is not None
    assert result.latency.max_ms == 15.0
    assert result.throughput is not None
    assert result.throughput.samples_per_s == pytest.approx(8 / 0.042)
    assert result.warmup_s == {"1": (47.7, 0.015), "8": (47.7, 0.042)}
    assert result.verdict.status == "pass", result.verdict.reason
    assert bench.results == [result]
    bench.check(result)


def test_hardware_without_budgets_is_reported_not_asserted() -> None:
    server = FakeServer({1: 500.0})
    bench = TritonBench(hardware="cpu-2core-x86_64", budgets=BUDGETS, clock=server.clock)
    result = bench.measure("trt", server.request(1), policy=WindowPolicy(window_requests=3))
    assert result.verdict.status == "report-only"
    assert "no budgets for hardware 'cpu-2core-x86_64'" in result.verdict.reason
    bench.check(result)  # does not raise


def test_over_budget_fails_the_check() -> None:
    server = FakeServer({1: 25.0})
    bench = TritonBench(hardware="nvidia-a10g", budgets=BUDGETS, clock=server.clock)
    result = bench.measure("trt", server.request(1), policy=WindowPolicy(window_requests=3))
    assert result.verdict.status == "fail"
    with pytest.raises(AssertionError, match=r"p50_ms 25.00 ms > 16.94 ms"):
        bench.check(result)


def test_record_skipped_adds_a_skipped_row() -> None:
    bench = TritonBench(hardware="nvidia-a10g", budgets=BUDGETS)
    assert bench.record_skipped("trt", "TensorRT is not available on this machine").is_skipped
    (row,) = bench.results
    assert row.is_skipped
    assert row.budget is not None
    lines = bench.summary_lines()
    assert lines[2].endswith("SKIPPED: TensorRT is not available on this machine")


def test_summary_and_report(tmp_path: Path) -> None:
    server = FakeServer({1: 15.0})
    bench = TritonBench(hardware="nvidia-a10g", budgets=BUDGETS, clock=server.clock)
    assert bench.summary_lines() == []
    bench.measure("trt", server.request(1), policy=WindowPolicy(window_requests=3))
    paths = bench.write_report(tmp_path / "report")
    assert sorted(p.name for p in paths) == ["report.json", "report.md", "report.svg"]


def test_from_options(tmp_path: Path) -> None:
    bench = TritonBench.from_options(SHIPPED, "nvidia-a10g")
    assert bench.budgets is not None
    assert bench.budgets.lookup("nvidia-a10g", "triton-tensorrt-fp16") is not None
    assert TritonBench.from_options(tmp_path / "none.toml", "x", required=False).budgets is None
    with pytest.raises(ConfigError, match="cannot read the budgets file"):
        TritonBench.from_options(tmp_path / "none.toml", "x")
    assert TritonBench.from_options(None).hardware  # default: this machine's key


def test_server_split_covers_exactly_the_kept_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_triton.bench.session as session_module
    from pytest_triton.bench.server_stats import parse_statistics

    def snapshot(requests: int) -> dict[str, object]:
        phase = {"count": requests, "ns": requests * 1000}
        stats = {p: phase for p in ("success", "queue", "compute_input", "compute_infer", "compute_output")}
        return {"model_stats": [{"name": "mdeberta", "version": "1", "inference_stats": stats}]}

    served = {"n": 0}
    monkeypatch.setattr(session_module, "composing_models", lambda url, model: [])
    monkeypatch.setattr(session_module, "fetch_statistics", lambda url: parse_statistics(snapshot(served["n"])))
    server = FakeServer({1: 10.0})
    call = server.request(1)

    def counted() -> None:
        served["n"] += 1
        call()

    # 5 windows of 4 requests (the first two still settling), 2 warm-up calls: the split must count 12 requests
    script = iter([30.0] * 4 + [20.0] * 4 + [10.0] * 100)
    bench = TritonBench(hardware="hw", clock=server.clock)

    def settling() -> None:
        counted()
        server.now += int((next(script) - 10.0) * MS) if len(server.log) > 2 else 0

    result = bench.measure(
        "v", settling, warmup=2, policy=WindowPolicy(window_requests=4), served_by=ServedBy("http://x", "mdeberta")
    )
    assert result.latency is not None
    assert result.latency.count == 12
    assert "stable after 5 windows" in result.stability
    assert result.server is not None
    (split,) = result.server.models
    assert (split.model, split.requests) == ("mdeberta", 12)
    assert split.queue_us == 1.0


def test_side_by_side_warms_each_variant_and_splits_each_servers_kept_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_triton.bench.session as session_module
    from pytest_triton.bench.server_stats import parse_statistics

    served = {"http://a": 0, "http://b": 0}

    def snapshot(url: str) -> object:
        phase = {"count": served[url], "ns": served[url] * 1000}
        stats = {p: phase for p in ("success", "queue", "compute_input", "compute_infer", "compute_output")}
        return parse_statistics({"model_stats": [{"name": "m", "version": "1", "inference_stats": stats}]})

    monkeypatch.setattr(session_module, "composing_models", lambda url, model: [])
    monkeypatch.setattr(session_module, "fetch_statistics", snapshot)
    monkeypatch.setattr(session_module, "fetch_server_version", lambda url: "triton 2.51.0")
    server = FakeServer({1: 10.0, 8: 40.0})

    def on(url: str, batch_size: int) -> Callable[[], None]:
        call = server.request(batch_size)

        def counted() -> None:
            served[url] += 1
            call()

        return counted

    bench = TritonBench(hardware="hw", clock=server.clock)
    result = bench.measure_interleaved(
        {"a": on("http://a", 1), "b": on("http://b", 1)},
        throughput_calls={"a": on("http://a", 8), "b": on("http://b", 8)},
        warmup=2,
        policy=WindowPolicy(window_requests=4),
        served_by={"a": ServedBy("http://a", "m"), "b": ServedBy("http://b", "m")},
    )
    a, b = result["a"], result["b"]
    assert a.warmup_s.keys() == {"1", "8"}  # its own shapes only, never the other variant's
    assert a.warmup_s["1"][0] == pytest.approx(47.7)  # the first call of a shape, excluded from the samples
    assert a.latency is not None
    assert a.latency.count == 12
    assert a.interleaved_with == ("b",)
    for r in (a, b):
        assert r.server is not None
        (split,) = r.server.models
        assert split.requests == 12  # the kept three windows of four, not warm-up nor b=8 requests
    assert bench.triton_version == "triton 2.51.0"
    assert result.relative == ()  # no budget file: nothing to judge
    assert "settled after 3 rounds" in result.settled


OFFLINE = parse_budgets(
    """
[nvidia-a10g]
source = "the seed's A10G numbers"
enforce_absolute = false
enforce_reason = "a CPU stands in for the endpoint"
[nvidia-a10g.trt]
p50_ms = 15.4
""",
    Path("project/budgets.toml"),
)


def test_enforcement_names_a_declarations_own_budget_file() -> None:
    bench = TritonBench(hardware="nvidia-a10g", budgets=None)
    assert bench.enforcement_text() == "no budget file: everything is measured and reported only"
    bench.use_declared_budgets(OFFLINE, "trt")
    bench.use_declared_budgets(OFFLINE, "onnx")
    bench.use_declared_budgets(OFFLINE, "trt")
    bench.hardware_source = "the GPU of ml.g5.xlarge"
    assert bench.enforcement_text() == (
        "hardware key 'nvidia-a10g' from the GPU of ml.g5.xlarge; contracts' own budget files: budgets.toml for "
        "trt, onnx: relative budgets of 'nvidia-a10g' are asserted; absolute numbers are reported, not asserted "
        "(a CPU stands in for the endpoint); no session budget file: others are reported only"
    )
    session = TritonBench(hardware="nvidia-a10g", budgets=BUDGETS)
    session.use_declared_budgets(OFFLINE, "trt")
    assert session.enforcement_text().endswith(
        "; the session's budget file for the others: absolute and relative budgets of 'nvidia-a10g' are asserted"
    )
