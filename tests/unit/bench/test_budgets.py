"""Budget files: the shipped one, validation errors that name file/line/key/value, and verdicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.bench.absolute import evaluate
from pytest_triton.bench.budgets import Budget
from pytest_triton.bench.budgets import load_budgets
from pytest_triton.bench.budgets import parse_budgets
from pytest_triton.bench.stats import LatencyStats
from pytest_triton.bench.stats import summarize
from pytest_triton.errors import ConfigError

SHIPPED = Path(__file__).resolve().parents[3] / "model_repos" / "budgets.toml"
MS = 1_000_000


def stats(p50: float, p99: float, *, batch_size: int = 1) -> LatencyStats:
    """100 samples, 51 at ``p50`` ms and 49 at ``p99`` ms: p50 is index 50, the last of the first group."""
    return summarize([int(p50 * MS)] * 51 + [int(p99 * MS)] * 49, batch_size=batch_size)


def with_rate(s: LatencyStats, rate: float) -> LatencyStats:
    data = s.as_dict()
    data["samples_per_s"] = rate
    return LatencyStats.from_dict(data)


def test_shipped_file_holds_the_seeds_a10g_table() -> None:
    budgets = load_budgets(SHIPPED)
    a10g = budgets.budgets["nvidia-a10g"]
    assert set(a10g) == {"hf-dlc-pytorch", "triton-ort-gpu", "triton-tensorrt-fp16", "triton-ensemble-tensorrt"}
    rows = {
        name: (b.p50_ms, b.p90_ms, b.p95_ms, b.p99_ms, b.samples_per_s, b.batch_size, b.throughput_batch_size)
        for name, b in a10g.items()
    }
    assert rows == {
        "hf-dlc-pytorch": (26.8, 29.8, 32.7, 45.4, 113.0, 1, 8),
        "triton-ort-gpu": (27.3, 28.4, 28.5, 28.6, 57.0, 1, 8),
        "triton-tensorrt-fp16": (15.4, 16.4, 16.8, 17.4, 185.0, 1, 8),
        "triton-ensemble-tensorrt": (16.6, 17.1, 17.4, 17.9, 179.0, 1, 8),
    }
    assert all("A10G" in b.source and "seed" in b.source for b in a10g.values())
    assert all(b.tolerance == 0.10 for b in a10g.values())


def test_missing_hardware_means_report_only() -> None:
    budgets = load_budgets(SHIPPED)
    assert budgets.lookup("cpu-64core-riscv64", "triton-onnx-cpu") is None
    reason = budgets.missing_reason("cpu-64core-riscv64", "triton-onnx-cpu")
    assert reason.startswith("no budgets for hardware 'cpu-64core-riscv64' in ")
    assert reason.endswith("(it has: cpu-2core-x86_64, nvidia-a10g, nvidia-h200): measured and reported only")
    verdict = evaluate(None, stats(10, 12), missing_reason=reason)
    assert (verdict.status, verdict.failed) == ("report-only", False)
    missing_variant = budgets.missing_reason("nvidia-a10g", "typo")
    assert "no budget for variant 'typo' under 'nvidia-a10g'" in missing_variant
    assert "hf-dlc-pytorch" in missing_variant


VALID = """\
[gpu-x]
source = "measured"
tolerance = 0.2
[gpu-x.fast]
p50_ms = 10
p99_ms = 20.5
samples_per_s = 100
[gpu-x.own-tolerance]
tolerance = 0.05
source = "other"
throughput_batch_size = 4
p95_ms = 3
"""


def test_valid_file_inherits_hardware_defaults() -> None:
    budgets = parse_budgets(VALID, "b.toml")
    fast = budgets.lookup("gpu-x", "fast")
    assert fast == Budget("gpu-x", "fast", "measured", 0.2, p50_ms=10.0, p99_ms=20.5, samples_per_s=100.0)
    own = budgets.lookup("gpu-x", "own-tolerance")
    assert own is not None
    assert (own.tolerance, own.source, own.throughput_batch_size, own.p95_ms) == (0.05, "other", 4, 3.0)
    assert fast.describe() == "p50≤10 p99≤20.5 ms ≥100/s ±20%"


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        (
            '[hw]\nsource = "s"\n[hw.v]\np99_ms = -3\n',
            "hw.v.p99_ms=-3: expected milliseconds, a finite number in (0, 3,600,000]",
            4,
        ),
        (
            '[hw]\nsource = "s"\n[hw.v]\np50_ms = "fast"\n',
            "hw.v.p50_ms='fast': expected milliseconds, a finite number in (0, 3,600,000]",
            4,
        ),
        (
            '[hw]\nsource = "s"\n[hw.v]\np50_ms = true\n',
            "hw.v.p50_ms=True: expected milliseconds, a finite number in (0, 3,600,000]",
            4,
        ),
        ('[hw]\nsource = "s"\n[hw.v]\np50_ms = nan\n', "hw.v.p50_ms=nan", 4),
        ('[hw]\nsource = "s"\n[hw.v]\nsamples_per_s = 0\n', "hw.v.samples_per_s=0: expected a number of samples", 4),
        ('[hw]\nsource = "s"\ntolerance = 10\n[hw.v]\np50_ms = 1\n', "hw.tolerance=10: expected a fraction", 3),
        (
            '[hw]\nsource = "s"\n[hw.v]\nbatch_size = 0\n',
            "hw.v.batch_size=0: expected a batch size, an integer from 1 to 4,096",
            4,
        ),
        ('[hw]\nsource = "s"\n[hw.v]\np95 = 3\n', "hw.v.p95: unknown key; allowed keys:", 4),
        ('[hw]\nsource = "s"\n[hw.v]\np50_ms = 5\np99_ms = 4\n', "hw.v.p99_ms=4.0 is below p50_ms=5.0", 5),
        ("[hw]\n[hw.v]\np50_ms = 5\n", "hw.v: no source; say where the numbers come from", 2),
        ('[hw]\nsource = ""\n[hw.v]\np50_ms = 5\n', "hw.source='': expected a non-empty string", 2),
        ('[hw]\nsource = "s"\nv = 3\n', "hw.v=3: not a variant table", 3),
        ("hw = 3\n", "hw=3: expected a [hardware] table", 1),
        ('[hw]\nsource = "s"\n[hw.v]\np50_ms = \n', "not valid TOML", 4),
    ],
)
def test_invalid_values_name_file_line_key_and_value(text: str, message: str, line: int) -> None:
    with pytest.raises(ConfigError) as info:
        parse_budgets(text, "model_repos/budgets.toml")
    err = info.value
    assert err.path == "model_repos/budgets.toml"
    assert message in str(err)
    assert err.line == line
    assert str(err).startswith(f"model_repos/budgets.toml:{line}:")


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read the budget"):
        load_budgets(tmp_path / "nope.toml")


BUDGET = Budget("hw", "v", "src", 0.10, p50_ms=10.0, p99_ms=20.0, samples_per_s=100.0)


@pytest.mark.parametrize(
    ("p50", "p99", "rate", "status", "fragment"),
    [
        (10.0, 20.0, 100.0, "pass", "p99_ms 20.00 ms ≤ 22.00 ms"),
        (10.9, 21.9, 91.0, "pass", "samples_per_s 91.00/s ≥ 90.00/s"),  # inside the 10% tolerance
        (10.0, 22.2, 100.0, "fail", "p99_ms 22.20 ms > 22.00 ms"),
        (11.5, 20.0, 100.0, "fail", "p50_ms 11.50 ms > 11.00 ms"),
        (10.0, 20.0, 89.0, "fail", "samples_per_s 89.00/s < 90.00/s"),
    ],
)
def test_verdict_applies_tolerance(p50: float, p99: float, rate: float, status: str, fragment: str) -> None:
    latency = stats(p50, p99)
    rate_run = with_rate(stats(40, 45, batch_size=8), rate)
    verdict = evaluate(BUDGET, latency, rate_run)
    assert verdict.status == status, verdict.reason
    assert fragment in verdict.reason


def test_unmeasured_limits_are_listed_never_passed() -> None:
    verdict = evaluate(BUDGET, stats(10, 20))  # no batch-8 run
    assert verdict.status == "pass"
    (rate_check,) = [c for c in verdict.checks if c.metric == "samples_per_s"]
    assert rate_check.ok is None
    assert "samples_per_s not measured (budget 100/s)" in verdict.reason
    nothing = evaluate(BUDGET, stats(10, 20, batch_size=4))
    assert nothing.status == "report-only"
    assert "nothing measured at the budget's batch sizes" in nothing.reason


def test_unstable_within_budget_is_flagged_and_over_budget_still_fails() -> None:
    verdict = evaluate(BUDGET, stats(10, 20), stable=False)
    assert verdict.status == "unstable"
    assert verdict.failed
    assert evaluate(BUDGET, stats(10, 30), stable=False).status == "fail"
