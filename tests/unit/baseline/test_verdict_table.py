"""The verdict table: one row per variant, base → PR figures with the paired ratio and the limit, the parity
cell, the verdict with its cause; skipped pairs say why; inconclusive verdicts say so, with their intervals."""

from __future__ import annotations

from pathlib import Path

from pytest_triton.baseline.measure import PairLatency
from pytest_triton.baseline.pairs import Pair
from pytest_triton.baseline.verdict import MARKER
from pytest_triton.baseline.verdict import VerdictRow
from pytest_triton.baseline.verdict import render_verdict
from pytest_triton.baseline.verdict import write_verdict
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.contracts.spec import Declaration
from pytest_triton.contracts.spec import Inputs
from pytest_triton.contracts.spec import Reference
from pytest_triton.contracts.spec import Variant

VARIANT = Variant("add", Path("repos/add"), "add", {"cpu": "fp32", "gpu": "fp32"})
DECLARATION = Declaration(Path("contracts.toml"), {"add": VARIANT}, Reference("add", variant="add"), Inputs())
PAIR = Pair(DECLARATION, "add", "main", "changed")


def result(metric: str, status: str, base: float, pr: float, limit: float | None) -> RelativeResult:
    rate = metric == "samples_per_s"
    budget = RelativeBudget(
        "add",
        "add@main",
        metric,
        hardware="cpu",
        source="test",
        max_ratio=None if rate else limit,
        min_ratio=limit if rate else None,
    )
    ratio = pr / base
    interval = (ratio * 0.95, ratio * 1.05)
    return RelativeResult(budget, status, "why", pr, base, paired_ratio=ratio, rounds=9, interval=interval)  # type: ignore[arg-type]


def latency(p50: str, rate: str, *, p50_pr: float = 5.5) -> PairLatency:
    return PairLatency(
        PAIR,
        (
            result("p50_ms", p50, 5.0, p50_pr, 1.10),
            result("p99_ms", "inconclusive", 6.0, 9.0, None),  # no limit: reported, never judged
            result("samples_per_s", rate, 200.0, 150.0, 0.90),
        ),
        "settled after 9 rounds",
    )


def test_a_failing_latency_row_names_the_metric_that_failed() -> None:
    row = VerdictRow("contracts.toml", "add", "add@main", "changed", latency=latency("fail", "fail", p50_pr=6.5))
    row.parity_ok, row.parity_text = True, "SUM: identical"
    text = render_verdict([row], base="main (abc)")
    assert text.startswith(MARKER + "\n")
    assert "❌ 1 of 1 variant(s) fail against main (abc)" in text
    line = next(x for x in text.splitlines() if x.startswith("| `add`"))
    assert line == (
        "| `add` | 5.00 → 6.50 ms (1.300× [1.235, 1.365], ≤ 1.10×) ❌ | 6.00 → 9.00 ms (1.500× [1.425, 1.575]) | "
        "200.00 → 150.00/s (0.750× [0.712, 0.788], ≥ 0.90×) ❌ | ✅ SUM: identical | "
        "❌ FAIL: p50 fail; samples/s fail |"
    )


def test_an_open_answer_is_inconclusive_in_the_table_and_says_how_it_ended() -> None:
    row = VerdictRow("contracts.toml", "add", "add@main", "changed", latency=latency("inconclusive", "pass"))
    text = render_verdict([row], base="main")
    assert "| 5.00 → 5.50 ms (1.100× [1.045, 1.155], ≤ 1.10×) ⚠️ |" in text
    assert "⚠️ INCONCLUSIVE: inconclusive: p50 |" in text
    assert "- `add`: INCONCLUSIVE, neither a pass nor a fail: settled after 9 rounds" in text
    assert "⚠️ no failure against main; 1 verdict(s) INCONCLUSIVE" in text


def test_a_parity_failure_names_parity_and_skipped_pairs_say_why() -> None:
    failed = VerdictRow("contracts.toml", "add", "add@main", "changed", latency=latency("pass", "pass"))
    failed.parity_ok, failed.parity_text = False, "SUM[1, 2]: base 1, PR 1.01 (|diff| 0.01, allowed 0.0002)"
    new = VerdictRow("contracts.toml", "fresh", "fresh@main", "new", reason="new in this PR: no baseline")
    text = render_verdict([failed, new], base="main")
    assert "| ❌ SUM[1, 2]: base 1, PR 1.01 (\\|diff\\| 0.01, allowed 0.0002) | ❌ FAIL: parity |" in text
    assert "| `fresh` | – | – | – | – | ➖ skipped: new |" in text
    assert "- `fresh`: new in this PR: no baseline" in text


def test_the_table_goes_to_the_file_and_is_appended_to_the_step_summary(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    written = write_verdict("TABLE\n", tmp_path / "report" / "pr-verdict.md", step_summary=str(summary))
    assert written == [tmp_path / "report" / "pr-verdict.md", summary]
    assert (tmp_path / "report" / "pr-verdict.md").read_text(encoding="utf-8") == "TABLE\n"
    assert summary.read_text(encoding="utf-8") == "earlier step\nTABLE\n\n"
    assert write_verdict("TABLE\n", None, step_summary=None) == []
