"""The verdict a reviewer reads: one markdown table of every pair, base against PR.

Written to ``$GITHUB_STEP_SUMMARY`` (the job's summary page) when that is set, and to a file a workflow posts
as one sticky pull-request comment. The comment is found again on the next push by :data:`MARKER`, a hidden
HTML comment on the first line, and edited in place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import final

if TYPE_CHECKING:
    from pytest_triton.baseline.measure import PairLatency
    from pytest_triton.bench.relative import RelativeResult

__all__ = ["MARKER", "VerdictRow", "render_verdict", "write_verdict"]

MARKER = "<!-- pytest-triton verdict -->"

_SYMBOL = {"pass": "✅ pass", "fail": "❌ FAIL", "inconclusive": "⚠️ INCONCLUSIVE", "skipped": "➖ skipped"}


@final
@dataclass
class VerdictRow:
    """One variant of one contracts file: what its pair found (filled in as its items run)."""

    contracts: str  # the file, as the table names it
    variant: str
    base: str  # VARIANT@REF
    status: str  # the pair's: changed, unchanged, new, no-base
    reason: str = ""
    latency: PairLatency | None = None
    latency_error: str = ""
    parity_ok: bool | None = None
    parity_text: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        verdicts = []
        if self.parity_ok is not None:
            verdicts.append("pass" if self.parity_ok else "fail")
        if self.latency is not None:
            verdicts.append(self.latency.verdict)
        if self.latency_error:
            verdicts.append("fail")
        if not verdicts:
            return "skipped"
        for worst in ("fail", "inconclusive"):
            if worst in verdicts:
                return worst
        return "pass"

    def cause(self) -> str:
        """What decided a failing or inconclusive verdict, in words."""
        causes, unsettled = [], []
        if self.parity_ok is False:
            causes.append("parity")
        if self.latency_error:
            causes.append(f"latency: {self.latency_error.splitlines()[0]}")
        if self.latency is not None:
            for result in self.latency.judged:
                if result.status in ("fail", "not-measured"):
                    causes.append(f"{_metric(result)} {result.status}")
                elif result.status == "inconclusive":
                    unsettled.append(_metric(result))
        if unsettled:
            causes.append(f"inconclusive: {', '.join(unsettled)}")
        return "; ".join(causes)


def _metric(result: RelativeResult) -> str:
    return "samples/s" if result.budget.is_rate else result.budget.metric.removesuffix("_ms")


def _figure(result: RelativeResult | None) -> str:
    """``5.12 → 6.40 ms (1.25× [1.21, 1.29], ≤ 1.10×) ❌``: the ratio, its interval, the limit and the outcome
    (❌ FAIL, ⚠️ INCONCLUSIVE)."""
    if result is None or result.variant_value is None or result.baseline_value is None or result.ratio is None:
        return "–"
    unit = "/s" if result.budget.is_rate else " ms"
    limit = result.budget.allowed_ratio()
    bound = "" if limit is None else f", {'≥' if result.budget.is_rate else '≤'} {limit:.2f}×"
    flag = {"fail": " ❌", "inconclusive": " ⚠️"}.get(result.status, "") if limit is not None else ""
    interval = "" if result.interval is None else f" [{result.interval[0]:.3f}, {result.interval[1]:.3f}]"
    figures = f"{result.baseline_value:.2f} → {result.variant_value:.2f}{unit}"
    return f"{figures} ({result.ratio:.3f}×{interval}{bound}){flag}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_verdict(rows: Sequence[VerdictRow], *, base: str, head: str = "the working tree", where: str = "") -> str:
    """The whole comment: the marker, a headline, the table and the notes (skips, open answers)."""
    failed = [r for r in rows if r.verdict == "fail"]
    inconclusive = [r for r in rows if r.verdict == "inconclusive"]
    if failed:
        headline = f"❌ {len(failed)} of {len(rows)} variant(s) fail against {base}"
    elif inconclusive:
        headline = f"⚠️ no failure against {base}; {len(inconclusive)} verdict(s) INCONCLUSIVE"
    else:
        headline = f"✅ every compared variant holds against {base}"
    lines = [MARKER, f"### pytest-triton: {head} against {base}", "", headline, ""]
    lines += [
        "| variant | p50 base → PR | p99 base → PR | samples/s base → PR | parity (worst element) | verdict |",
        "|---|---|---|---|---|---|",
    ]
    notes = []
    for row in rows:
        results = {m: row.latency.by_metric(m) for m in ("p50_ms", "p99_ms", "samples_per_s")} if row.latency else {}
        parity = row.parity_text or "–"
        if row.parity_ok is not None:
            parity = f"{'✅' if row.parity_ok else '❌'} {parity}"
        verdict = _SYMBOL[row.verdict]
        if row.verdict in ("fail", "inconclusive") and row.cause():
            verdict += f": {row.cause()}"
        name = f"`{row.variant}`" + (f" ({row.contracts})" if len({r.contracts for r in rows}) > 1 else "")
        if row.verdict == "skipped":
            lines.append(f"| {_cell(name)} | – | – | – | – | {_cell(_SYMBOL['skipped'] + ': ' + row.status)} |")
            notes.append(f"- `{row.variant}`: {row.reason}")
            continue
        figures = [_figure(results.get(m)) for m in ("p50_ms", "p99_ms", "samples_per_s")]
        lines.append("| " + " | ".join(_cell(c) for c in (name, *figures, parity, verdict)) + " |")
        if row.latency is not None and row.latency.verdict == "inconclusive":
            notes.append(f"- `{row.variant}`: INCONCLUSIVE, neither a pass nor a fail: {row.latency.settled}")
        notes.extend(f"- `{row.variant}`: {note}" for note in row.notes)
    lines += ["", "Ratios are PR / base, the median of per-round ratios of base and PR measured in alternating"]
    lines += ["windows on the same runner in one run (pytest --triton-baseline). In brackets: the interval of that"]
    lines += ["median (sign-test order statistics); a limit passes or fails only when the interval lies wholly on"]
    lines += ["one side of it, else the answer is INCONCLUSIVE." + (f" {where}" if where else "")]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines) + "\n"


def write_verdict(text: str, path: Path | None, *, step_summary: str | None) -> list[Path]:
    """Write the table to ``path`` (replaced) and append it to ``step_summary`` (GitHub's summary file)."""
    written = []
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    if step_summary:
        with Path(step_summary).open("a", encoding="utf-8") as summary:
            summary.write(text + "\n")
        written.append(Path(step_summary))
    return written
