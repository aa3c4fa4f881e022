"""--triton-budgets-record's file: read back by the budget reader, it passes the run it came from and fails one
slower by more than the margin; other hardware's tables are kept; a bad margin says what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.bench.absolute import Verdict
from pytest_triton.bench.absolute import evaluate
from pytest_triton.bench.budgets import load_budgets
from pytest_triton.bench.budgets_record import merge_budgets
from pytest_triton.bench.budgets_record import parse_margin
from pytest_triton.bench.budgets_record import write_budgets
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.stats import LatencyStats
from pytest_triton.bench.stats import summarize
from pytest_triton.errors import ConfigError

MS = 1_000_000
HARDWARE = "cpu-2core-x86_64"


def stats(p50: float, slow: float, *, batch_size: int = 1) -> LatencyStats:
    return summarize([int(p50 * MS)] * 80 + [int(slow * MS)] * 20, batch_size=batch_size)


def row(variant: str, latency: LatencyStats | None, throughput: LatencyStats | None = None) -> VariantResult:
    verdict = Verdict("report-only", "no budget file: measured and reported only")
    return VariantResult(variant, HARDWARE, verdict, latency=latency, throughput=throughput, path="adapter")


def test_recorded_budgets_pass_their_run_and_fail_a_slower_one(tmp_path: Path) -> None:
    path = tmp_path / "budgets.toml"
    fast, rate = stats(2.0, 5.0), stats(4.0, 8.0, batch_size=8)
    skipped = VariantResult.skipped("trt", HARDWARE, "needs TensorRT")
    written = write_budgets(path, [row("onnx", fast, rate), skipped], HARDWARE, 2.0, version="0.1.0")
    assert [r.variant for r in written] == ["onnx"]  # a skipped row measured nothing

    budgets = load_budgets(path)
    budget = budgets.lookup(HARDWARE, "onnx")
    assert budget is not None
    assert (budget.p50_ms, budget.p90_ms, budget.p99_ms) == (4.0, 10.0, None)
    assert budget.throughput_batch_size == 8
    assert budget.path == "adapter"
    assert budget.samples_per_s == pytest.approx(rate.samples_per_s / 2, rel=1e-2)
    assert "recorded by pytest-triton 0.1.0" in budget.source
    assert "measured x 2" in budget.source
    assert evaluate(budget, fast, rate, path="adapter").status == "pass"
    slower = evaluate(budget, stats(4.5, 5.0), rate, path="adapter")
    assert slower.status == "fail"
    assert "p50" in slower.reason


def test_other_hardware_is_kept_and_this_hardware_replaced(tmp_path: Path) -> None:
    path = tmp_path / "budgets.toml"
    path.write_text(
        '# the A10G numbers\n[nvidia-a10g]\nsource = "by hand"\n\n[nvidia-a10g.onnx]\np50_ms = 9.0\n\n'
        f'[{HARDWARE}]\nsource = "old"\n\n[{HARDWARE}.gone]\np50_ms = 1.0\n\n[[{HARDWARE}.relative]]\n'
        'variant = "a"\nbaseline = "b"\nmax_ratio = 2.0\nsource = "old"\n',
        encoding="utf-8",
    )
    write_budgets(path, [row("onnx", stats(2.0, 3.0))], HARDWARE, 1.5, version="0.1.0")
    budgets = load_budgets(path)
    assert set(budgets.budgets) == {"nvidia-a10g", HARDWARE}
    assert set(budgets.budgets[HARDWARE]) == {"onnx"}
    assert budgets.relative_budgets(HARDWARE, {"a", "b"}) == ()
    assert budgets.lookup("nvidia-a10g", "onnx") is not None
    assert path.read_text().startswith("# the A10G numbers\n[nvidia-a10g]")


def test_merge_of_nothing_is_the_table() -> None:
    assert merge_budgets("", HARDWARE, "[x]\n") == "[x]\n"


@pytest.mark.parametrize("text", ["0.5", "abc", "nan", "inf", "1001"])
def test_a_margin_out_of_range_is_refused_saying_what_is_allowed(text: str) -> None:
    with pytest.raises(ConfigError, match=rf"--triton-budgets-margin={text!r}: expected a factor from 1 to 1000"):
        parse_margin(text, "--triton-budgets-margin")
