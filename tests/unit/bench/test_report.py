"""Reports: terminal table, JSON, Markdown and SVG, with skipped variants never shown as passed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_triton.bench.budgets import parse_budgets
from pytest_triton.bench.report import ReportData
from pytest_triton.bench.report import table_lines
from pytest_triton.bench.report import to_markdown
from pytest_triton.bench.report import to_svg
from pytest_triton.bench.report import write_report
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.results import assert_within_budget
from pytest_triton.bench.results import build_result
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WarmupRecord
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.server_stats import PhaseSplit
from pytest_triton.bench.server_stats import ServerSplit

MS = 1_000_000
SVG = "{http://www.w3.org/2000/svg}"
BUDGETS = parse_budgets(
    """
[gpu-x]
source = "seed table"
[gpu-x.fast]
p50_ms = 16
p99_ms = 18
samples_per_s = 150
[gpu-x.slow]
p99_ms = 5
[gpu-x.trt]
p99_ms = 17.4
""",
    "budgets.toml",
)


def _clock_and_call(values: list[int]) -> tuple[Callable[[], int], Callable[[], None]]:
    state = {"now": 0}
    cycle: Iterator[int] = iter(values * 1000)

    def clock() -> int:
        return state["now"]

    def call() -> None:
        state["now"] += next(cycle)

    return clock, call


def _measured(values_ms: list[float], batch_size: int = 1) -> Measurement:
    clock, call = _clock_and_call([int(v * MS) for v in values_ms])
    policy = WindowPolicy(window_requests=len(values_ms))
    return measure(call, batch_size=batch_size, warmup=0, policy=policy, clock=clock)


@pytest.fixture
def results() -> list[VariantResult]:
    fast = build_result(
        "fast",
        "gpu-x",
        _measured([15.0, 15.5, 16.0, 17.0]),
        _measured([42.0, 44.0], batch_size=8),
        budgets=BUDGETS,
        server=ServerSplit((PhaseSplit("fast_model", "1", 8, 0, 8, 15100.0, 1130.0, 100.0, 13800.0, 70.0),)),
        model="fast_model",
        notes=["served by the python-backend ONNX Runtime adapter"],
    )
    slow = build_result("slow", "gpu-x", _measured([9.0, 10.0]), budgets=BUDGETS)
    unbudgeted = build_result("cpu-only", "gpu-x", _measured([3.0]), budgets=BUDGETS)
    skipped = VariantResult.skipped(
        "trt", "gpu-x", "TensorRT libraries are not installed here", budget=BUDGETS.lookup("gpu-x", "trt")
    )
    return [fast, slow, unbudgeted, skipped]


def test_terminal_table_has_every_column_and_skips_as_skipped(results: list[VariantResult]) -> None:
    lines = table_lines(results)
    header = lines[0].split()
    assert header == [
        *("variant", "path", "p50", "p90", "p95", "p99", "calibration", "p50"),
        *("samples/s", "queue/compute", "budget", "verdict"),
    ]
    assert set(lines[1]) == {"-"}
    fast, slow, cpu, trt = lines[2:6]
    assert fast.split()[:7] == ["fast", "unknown", "16.00", "17.00", "17.00", "17.00", "-"]
    assert "186.0 (b=8)" in fast  # 8 samples * 6 requests / 0.258 s
    assert "q 1.13 / c 13.97 ms" in fast
    assert fast.endswith("PASS")
    assert "FAIL: p99_ms 10.00 ms > 5.50 ms" in slow
    assert cpu.endswith("REPORT-ONLY (no budget)")
    assert trt.endswith("SKIPPED: TensorRT libraries are not installed here")
    assert "PASS" not in trt
    assert "p99≤17.4 ms ±10%" in trt
    assert "hardware: gpu-x; latencies in ms at concurrency 1" in lines
    assert "fast: served by the python-backend ONNX Runtime adapter" in lines


def test_throughput_cell_is_batch_times_requests_over_elapsed(results: list[VariantResult]) -> None:
    throughput = results[0].throughput
    assert throughput is not None
    # the last three windows of 2 requests at 42 and 44 ms: 8 * 6 / 0.258 s
    assert throughput.samples_per_s == pytest.approx(8 * 6 / 0.258)


def test_write_report_writes_json_markdown_and_svg(tmp_path: Path, results: list[VariantResult]) -> None:
    paths = write_report(results, tmp_path / "out" / "latency.json")
    assert [p.name for p in paths] == ["latency.json", "latency.md", "latency.svg"]
    data = json.loads(paths[0].read_text())
    assert data["version"] == 2
    by_name = {r["variant"]: r for r in data["results"]}
    assert by_name["trt"]["verdict"] == {
        "status": "skipped",
        "reason": "TensorRT libraries are not installed here",
        "checks": [],
    }
    assert by_name["trt"]["latency"] is None
    assert by_name["fast"]["latency"]["p99_ms"] == 17.0
    assert by_name["fast"]["throughput"]["batch_size"] == 8
    assert by_name["fast"]["server"]["models"][0]["queue_us"] == 1130.0
    assert by_name["fast"]["budget"]["source"] == "seed table"
    assert len(by_name["fast"]["samples_ms"]) == 12
    assert by_name["slow"]["verdict"]["status"] == "fail"
    md = paths[1].read_text()
    # a short verdict cell in the table, the reason in the details below it
    assert "| trt | - | - | - | - | - | - | - | - | p99≤17.4 ms ±10% | SKIPPED |" in md
    assert "- verdict: **SKIPPED**: TensorRT libraries are not installed here" in md
    assert "- server `fast_model` v1 (statistics): 8 requests, queue 1130 µs" in md
    root = ET.fromstring(paths[2].read_text())
    groups = [g.get("data-variant") for g in root.iter(f"{SVG}g")]
    assert groups == ["fast", "slow", "cpu-only", "trt"]
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert "trt: SKIPPED: TensorRT libraries are not installed here" in texts
    assert "SKIPPED" in texts
    assert "FAIL" in texts
    assert "REPORT-ONLY" in texts


def test_svg_escapes_names_and_handles_a_single_value() -> None:
    one = build_result('a<b&"c"', "hw", _measured([5.0]), budgets=None)
    root = ET.fromstring(to_svg([one]))
    assert [g.get("data-variant") for g in root.iter(f"{SVG}g")] == ['a<b&"c"']


def test_markdown_lists_warmup_as_excluded() -> None:
    result = build_result("v", "hw", _measured([5.0]), budgets=None)
    result = VariantResult(**{**result.__dict__, "warmup_s": WarmupRecord({1: (47_700 * MS,)}).as_dict()})
    assert "- warm-up b=1 (excluded): 47.700 s" in to_markdown([result])
    assert "v: warm-up b=1: first call 47.700 s, 1 call(s), excluded" in table_lines([result])


def test_assert_within_budget(results: list[VariantResult]) -> None:
    fast, slow, unbudgeted, skipped = results
    assert_within_budget(fast)
    assert_within_budget(unbudgeted)
    assert_within_budget(skipped)
    with pytest.raises(AssertionError) as info:
        assert_within_budget(slow)
    text = str(info.value)
    assert text.startswith("latency budget fail: variant 'slow' on 'gpu-x'\n  p99_ms 10.00 ms > 5.50 ms")
    assert "budget: p99≤5 ms ±10% (source: seed table)" in text


def test_an_ensembles_queue_cell_adds_its_steps_queues() -> None:
    # Triton keeps an ensemble's own queue at ~0 and sums its steps' compute into the ensemble's compute
    split = ServerSplit(
        (
            PhaseSplit("ensemble", "1", 10, 0, 10, 16000.0, 2.0, 70.0, 14000.0, 900.0),
            PhaseSplit("model", "1", 10, 0, 10, 14000.0, 1100.0, 20.0, 12500.0, 400.0),
            PhaseSplit("tokenize", "1", 20, 0, 20, 1000.0, 100.0, 20.0, 800.0, 100.0),  # called twice per request
        )
    )
    result = build_result("ens", "gpu-x", _measured([16.0]), budgets=BUDGETS, server=split, model="ensemble")
    row = table_lines([result])[2]
    assert "q 1.30 / c 14.97 ms" in row  # 2 + 1100 + 2 * 100 µs queue; the ensemble's own compute


# -- the whole report: relative budgets, parity, provenance; nothing drawn outside the picture ---------------


def _full_report(results: list[VariantResult]) -> ReportData:
    import numpy as np

    from pytest_triton.bench.parity_record import ParityRecord
    from pytest_triton.bench.provenance import collect_provenance
    from pytest_triton.bench.relative import RelativeBudget
    from pytest_triton.bench.relative import evaluate_relative
    from pytest_triton.parity.tensors import compare
    from pytest_triton.parity.tensors import compare_labels

    fast, slow = results[0], results[1]
    assert fast.latency is not None
    assert slow.latency is not None
    overhead = RelativeBudget(
        "slow", "fast", "p50_ms", hardware="gpu-x", source="seed", tolerance=0.1, max_ratio=1.2, name="a long name " * 4
    )
    ratios = [0.6, 0.62, 0.61, 0.6, 0.63, 0.61, 0.59, 0.62, 0.61]
    paired = (ratios, [10.0 * (r - 1) for r in ratios])
    relative = (evaluate_relative(overhead, slow.latency, fast.latency, paired=paired),)
    reference = np.array([[1.0, -2.0, 0.5], [0.1, 3.0, -1.0]], dtype=np.float32)
    candidate = reference + np.array([[0.0, 0.003, 0.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    parity = ParityRecord.of(
        "fast",
        compare({"logits": reference}, {"logits": candidate}, preset="fp32", candidate_name="fast"),
        compare_labels(["a", "b"], ["a", "c"], ids=["s01", "s02"]),
        transport="http",
    )
    provenance = collect_provenance("gpu-x", triton="triton 2.51.0", unstable="warn", enforcement="asserted")
    long_note = "why the in-process reference is slower here: " + "intra-op threads spin while they wait; " * 8
    return ReportData(tuple(results), relative, (parity,), provenance, (long_note,))


def test_the_report_shows_relative_budgets_parity_and_provenance(tmp_path: Path, results: list[VariantResult]) -> None:
    data = _full_report(results)
    json_path, md_path, _ = write_report(data, tmp_path / "report")
    saved = json.loads(json_path.read_text())
    assert saved["provenance"]["triton"] == "triton 2.51.0"
    assert saved["provenance"]["packages"]["pytest"] == pytest.__version__
    assert saved["relative"][0]["ratio"] == pytest.approx(0.61)  # the median of the paired rounds
    assert saved["relative"][0]["variant_value"] == 10.0  # and both pooled numbers
    (output,) = saved["parity"][0]["outputs"]
    assert output["worst_index"] == [0, 1]
    assert output["max_abs_error"] == pytest.approx(0.003, rel=1e-3)
    assert saved["parity"][0]["labels_agree"] == 1
    assert saved["parity"][0]["label_disagreements"] == ["s02: 'b' -> 'c'"]
    md = md_path.read_text()
    assert "## Relative budgets (measured side by side)" in md
    assert "paired per round: 0.610× [0.590, 0.630]× (99.5%) (-3.90 ms), median of 9" in md
    assert "| 0.610× [0.590, 0.630]× |" in md  # the table's ratio cell says how sure
    assert saved["relative"][0]["ratio_interval"] == [0.59, 0.63]
    assert "| fast (http) | fp32 | logits | 0.003 |" in md
    assert "| 1/2 | FAIL |" in md
    assert "- label differs: s02: 'b' -> 'c'" in md
    assert "## Reading this report" in md
    assert "unstable measurements: triton_unstable=warn; asserted" in md
    lines = table_lines(data)
    assert any(line.startswith("fast (http)") and line.endswith("FAIL") for line in lines)


def test_no_text_of_the_svg_reaches_past_its_edges(results: list[VariantResult]) -> None:
    root = ET.fromstring(to_svg(_full_report(results)))
    width, height = float(root.get("width", 0)), float(root.get("height", 0))
    texts = list(root.iter(f"{SVG}text"))
    assert len(texts) > 40
    for t in texts:
        size, x, y = float(t.get("font-size", 0)), float(t.get("x", 0)), float(t.get("y", 0))
        extent = len(t.text or "") * size * 0.60  # the advance width of every common monospace font
        left = x - extent if t.get("text-anchor") == "end" else x
        assert left >= 0, (t.text, left)
        assert left + extent <= width, (t.text, left + extent, width)
        assert size <= y <= height, (t.text, y, height)
