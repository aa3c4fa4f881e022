"""Every latency row says its engine path, and a budget written on one path never judges a row of another."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_triton.bench.budgets import BudgetFile
from pytest_triton.bench.budgets import load_budgets
from pytest_triton.bench.budgets import parse_budgets
from pytest_triton.bench.engine import Calibration
from pytest_triton.bench.engine import Engine
from pytest_triton.bench.engine import EnginePath
from pytest_triton.bench.engine import engine_of
from pytest_triton.bench.report import table_lines
from pytest_triton.bench.report import to_json
from pytest_triton.bench.report import to_markdown
from pytest_triton.bench.report import to_svg
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.results import assert_within_budget
from pytest_triton.bench.results import build_result
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.session import TritonBench
from pytest_triton.errors import ConfigError
from tests.fake_clock import FakeMachine

MS = 1_000_000
PROJECT_BUDGETS = Path(__file__).resolve().parents[3] / "model_repos" / "budgets.toml"
BUDGETS = parse_budgets(
    """
[gpu-x]
source = "measured through the adapter"
path = "adapter"
[gpu-x.onnx]
p50_ms = 10
[gpu-x.native-onnx]
path = "native"
p50_ms = 10
""",
    "budgets.toml",
)
UNSTATED = parse_budgets('[gpu-x]\nsource = "old file"\n[gpu-x.onnx]\np50_ms = 10\n', "old.toml")


def _measured(values_ms: list[float]) -> Measurement:
    state = {"now": 0}
    values: Iterator[int] = iter([int(v * MS) for v in values_ms] * 1000)

    def clock() -> int:
        return state["now"]

    def call() -> None:
        state["now"] += next(values)

    return measure(call, warmup=0, policy=WindowPolicy(window_requests=len(values_ms)), clock=clock)


def _row(variant: str, path: EnginePath, ms: float, budgets: BudgetFile = BUDGETS) -> VariantResult:
    return build_result(variant, "gpu-x", _measured([ms] * 4), budgets=budgets, path=path)


@pytest.mark.parametrize("ms", [5.0, 50.0])  # within and far over the adapter budget: neither is judged
def test_adapter_budget_never_judges_a_native_row(ms: float) -> None:
    row = _row("onnx", "native", ms)
    assert row.verdict.status == "not-comparable"
    assert "written on the adapter path" in row.verdict.reason
    assert "ran on the native path" in row.verdict.reason
    assert row.verdict.checks == ()
    assert_within_budget(row)  # neither passed nor failed: it does not fail the test


@pytest.mark.parametrize("ms", [5.0, 50.0])
def test_native_budget_never_judges_an_adapter_row(ms: float) -> None:
    row = _row("native-onnx", "adapter", ms)
    assert row.verdict.status == "not-comparable"
    assert "add a budget measured on the adapter path" in row.verdict.reason


def test_a_row_whose_path_is_unknown_is_not_judged_by_a_budget_with_a_path() -> None:
    row = _row("onnx", "unknown", 50.0)
    assert row.verdict.status == "not-comparable"
    assert "does not say how it serves" in row.verdict.reason


def test_the_same_path_is_judged() -> None:
    # the verdict flips with the path: the same numbers pass and fail on the budget's own path
    assert _row("onnx", "adapter", 5.0).verdict.status == "pass"
    assert _row("onnx", "adapter", 50.0).verdict.status == "fail"
    assert _row("native-onnx", "native", 50.0).verdict.status == "fail"


def test_a_budget_without_a_path_judges_any_path_and_the_report_says_so() -> None:
    row = _row("onnx", "native", 50.0, UNSTATED)
    assert row.verdict.status == "fail"
    assert "engine path not stated" in to_markdown([row])


def test_a_bad_path_names_file_key_and_value() -> None:
    with pytest.raises(ConfigError) as info:
        parse_budgets('[gpu-x]\nsource = "s"\npath = "onnxruntime"\n[gpu-x.a]\np50_ms = 1\n', "b.toml")
    text = str(info.value)
    assert "b.toml" in text
    assert "gpu-x.path='onnxruntime'" in text
    assert "'adapter'" in text


def test_every_project_budget_says_its_path() -> None:
    budgets = load_budgets(PROJECT_BUDGETS)
    unstated = [f"{hw}.{v}" for hw, table in budgets.budgets.items() for v, b in table.items() if b.path is None]
    assert unstated == []
    assert budgets.lookup("nvidia-h200", "mdeberta-base-ort-cuda-fp32").path == "adapter"  # type: ignore[union-attr]
    assert budgets.lookup("nvidia-a10g", "triton-ort-gpu").path == "native"  # type: ignore[union-attr]


def _adapter_row(calibration: Calibration | None, missing: str = "") -> VariantResult:
    return build_result(
        "onnx",
        "gpu-x",
        _measured([4.0] * 4),
        budgets=BUDGETS,
        path="adapter",
        engine_reason="onnx: served by the python-backend ONNX Runtime adapter on CUDAExecutionProvider",
        calibration=calibration,
        calibration_missing=missing,
    )


CAL = Calibration("onnx__pytest_triton_calibration", 1.5, 1.7, 40, 0.375, 620.0)


def test_every_format_shows_the_path_and_the_calibration_of_an_adapter_row() -> None:
    row = _adapter_row(CAL)
    lines = table_lines([row])
    assert lines[2].split()[:7] == ["onnx", "adapter", "4.00", "4.00", "4.00", "4.00", "1.50"]
    assert any("adapter calibration" in line and "1.500 ms" in line and "does not pay" in line for line in lines)
    md = to_markdown([row])
    assert "| onnx | adapter | 4.00 |" in md
    assert "p50 1.500 ms, server infer 620 µs, 38% of the row's p50" in md
    data = to_json([row])["results"][0]
    assert data["path"] == "adapter"
    assert data["calibration"]["p50_ms"] == 1.5
    svg = to_svg([row])
    assert "onnx [adapter]" in svg
    assert "adapter calibration p50 1.50 ms" in svg


def test_an_adapter_row_without_calibration_says_why() -> None:
    row = _adapter_row(None, "calibration model not loaded: boom")
    assert row.as_dict()["calibration"] is None
    lines = table_lines([row])
    assert lines[2].split()[6] == "none"
    assert "onnx: no adapter calibration: calibration model not loaded: boom" in lines


def test_a_native_row_has_no_calibration_cell() -> None:
    row = build_result("n", "gpu-x", _measured([4.0] * 4), path="native", engine_reason="nothing adapted")
    assert table_lines([row])[2].split()[:7] == ["n", "native", "4.00", "4.00", "4.00", "4.00", "-"]


def test_measure_times_the_calibration_interleaved_with_the_row() -> None:
    m = FakeMachine()
    bench = TritonBench(hardware="gpu-x", budgets=BUDGETS, policy=WindowPolicy(window_requests=5), clock=m.clock)
    engine = Engine("adapter", "onnx: adapted", "onnx__cal", m.call("onnx__cal", 1.0))
    result = bench.measure("onnx", m.call("onnx", 4.0), warmup=2, engine=engine)
    assert result.path == "adapter"
    assert result.verdict.status == "pass"  # the adapter budget judges the adapter row
    assert result.latency is not None
    assert result.latency.p50_ms == 4.0  # the row's own samples, not the calibration's
    assert result.calibration is not None
    assert result.calibration.p50_ms == 1.0
    assert result.calibration.share == 0.25
    assert result.calibration.model == "onnx__cal"
    assert list(result.warmup_s) == ["1"]  # the calibration's warm-up is not the row's
    measured = m.order[4:]  # after two warm-up calls of each
    switches = sum(a != b for a, b in itertools.pairwise(measured))
    assert switches >= 5  # windows alternate (row, calibration, row, ...), not one run after the other


def test_measure_interleaved_marks_each_row_with_its_path() -> None:
    m = FakeMachine()
    bench = TritonBench(hardware="gpu-x", budgets=BUDGETS, policy=WindowPolicy(window_requests=5), clock=m.clock)
    side = bench.measure_interleaved(
        {"onnx": m.call("onnx", 4.0), "native-onnx": m.call("native-onnx", 3.0)},
        warmup=0,
        engines={"onnx": Engine("native", "nothing adapted"), "native-onnx": Engine("native", "nothing adapted")},
    )
    assert side["onnx"].path == "native"
    assert side["onnx"].verdict.status == "not-comparable"  # an adapter budget, a native row
    assert side["native-onnx"].verdict.status == "pass"


def test_a_server_without_model_control_gets_an_adapter_row_without_calibration(tmp_path: Path) -> None:
    # a SageMaker endpoint (or sagemaker-local's container) serves /invocations only: nothing is written for it
    class _Adapted:
        name = "onnx"

        def describe(self) -> str:
            return "onnx: served by the python-backend ONNX Runtime adapter on CPUExecutionProvider"

    class _Prepared:
        folder = tmp_path
        adapted = (_Adapted(),)

    class SageMakerLike:
        prepared = _Prepared()
        control = None

    engine = engine_of(SageMakerLike(), "onnx")
    assert engine.path == "adapter"
    assert engine.calibration_model is None
    assert "SageMakerLike has no model control" in engine.calibration_missing
    assert list(tmp_path.iterdir()) == []
    assert engine_of(None, "onnx").path == "in-process"
    assert engine_of(object(), "onnx").path == "unknown"
