"""Contract reports: a terminal table, JSON, Markdown and an SVG chart (see :mod:`pytest_triton.bench.svg`).

:func:`write_report` takes a *path prefix* and writes three sibling files, ``PREFIX.json``, ``PREFIX.md`` and
``PREFIX.svg`` (a suffix ``.json``/``.md``/``.svg`` on the prefix is dropped; parent folders are created).
A report holds the latency results, the relative budgets between variants measured side by side, the parity
comparisons and the provenance (:class:`ReportData`). Skipped variants appear in every format as SKIPPED with
their reason, never as passed; absolute numbers that are not asserted on this hardware say so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import final

from pytest_triton.archive.files import write_private
from pytest_triton.bench.outcome import OutcomeWord
from pytest_triton.bench.outcome import outcome_word
from pytest_triton.bench.parity_record import ParityRecord
from pytest_triton.bench.provenance import Provenance
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.bench.results import UnstablePolicy
from pytest_triton.bench.results import VariantResult

__all__ = [
    "ReportData",
    "calibration_cell",
    "inconclusive_policy",
    "parity_lines",
    "parity_row",
    "path_lines",
    "relative_lines",
    "relative_word",
    "short_verdict",
    "table_lines",
    "to_json",
    "to_markdown",
    "to_svg",
    "unstable_policy",
    "verdict_text",
    "write_report",
]

COLUMNS = (
    "variant",
    "path",
    "p50",
    "p90",
    "p95",
    "p99",
    "calibration p50",
    "samples/s",
    "queue/compute",
    "budget",
    "verdict",
)
RELATIVE_COLUMNS = ("relative budget", "variant", "baseline", "ratio", "difference", "limit", "verdict")
PARITY_COLUMNS = ("parity", "preset", "outputs", "max abs err", "max rel err", "worst element", "labels", "verdict")
REPORT_VERSION = 2


@final
@dataclass(frozen=True)
class ReportData:
    """Everything one report shows."""

    results: tuple[VariantResult, ...] = ()
    relative: tuple[RelativeResult, ...] = ()
    parity: tuple[ParityRecord, ...] = ()
    provenance: Provenance | None = None
    explanations: tuple[str, ...] = ()
    # what a merge needs from a part of a run: each contract item's outcome (pytest's verdict, rows or not) and,
    # for a shard, which part of which run it is (see pytest_triton.bench.merge)
    contracts: tuple[Mapping[str, str], ...] = ()
    shard: Mapping[str, Any] | None = None


def _data(data: ReportData | Sequence[VariantResult]) -> ReportData:
    return data if isinstance(data, ReportData) else ReportData(tuple(data))


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _rate(result: VariantResult) -> str:
    stats = result.throughput or result.latency
    return "-" if stats is None else f"{stats.samples_per_s:.1f} (b={stats.batch_size})"


def _split(result: VariantResult) -> str:
    split = result.server.for_model(result.model) if result.server else None
    if split is None:
        return "-"
    queue_us = split.queue_us
    if result.server is not None and result.model is not None and split.requests:
        # an ensemble's own queue is ~0 while its compute already sums its steps': add the steps' queues, per
        # request of the ensemble (the other models of the split are its composing models, see measure())
        steps = [m for m in result.server.models if m.model != split.model]
        queue_us += sum(m.queue_us * m.requests / split.requests for m in steps)
    return f"q {queue_us / 1e3:.2f} / c {split.compute_us / 1e3:.2f} ms"


def calibration_cell(result: VariantResult) -> str:
    """The adapter calibration's p50 and its share of the row's p50; "none" on the adapter path without one."""
    c = result.calibration
    if c is not None:
        return f"{c.p50_ms:.2f} ({c.share:.0%})"
    return "none" if result.path == "adapter" else "-"


def path_lines(result: VariantResult) -> list[str]:
    """What the row's engine path means for its numbers (one line; two on the adapter path)."""
    if result.is_skipped or result.latency is None:
        return []
    lines = [f"path {result.path}" + (f": {result.engine_reason}" if result.engine_reason else "")]
    if result.path == "adapter":
        c = result.calibration
        lines.append(c.describe() if c is not None else f"no adapter calibration: {result.calibration_missing}")
    return lines


def short_verdict(result: VariantResult, unstable: UnstablePolicy = "warn") -> str:
    """One word for a narrow cell, the one every channel uses (:mod:`pytest_triton.bench.outcome`): PASSED,
    FAILED, PASSED, UNSTABLE, REPORT-ONLY, NOT-COMPARABLE or SKIPPED (details below)."""
    return outcome_word(result.verdict.status, unstable, "warn").upper()  # an absolute budget is never inconclusive


def verdict_text(result: VariantResult, unstable: UnstablePolicy = "warn") -> str:
    """The verdict's word with its detail: PASSED, FAILED: <failed checks>, PASSED, UNSTABLE: ..., REPORT-ONLY ..."""
    v = result.verdict
    label = short_verdict(result, unstable)
    if v.status == "pass":
        unmeasured = [c.metric for c in v.checks if c.ok is None]
        return label + (f" ({', '.join(unmeasured)} not measured)" if unmeasured else "")
    if v.status == "fail":
        return label + ": " + "; ".join(c.describe() for c in v.checks if c.ok is False)
    if v.status == "report-only":
        return label + " (no budget)" if result.budget is None else label + ": " + v.reason
    return f"{label}: {v.reason}"


def unstable_policy(data: ReportData) -> UnstablePolicy:
    """The session's ``triton_unstable`` choice the report's words follow (``warn`` when not recorded)."""
    return "fail" if data.provenance is not None and data.provenance.unstable == "fail" else "warn"


def inconclusive_policy(data: ReportData) -> UnstablePolicy:
    """The session's ``triton_inconclusive`` choice the relative budgets' words follow (``warn`` when not
    recorded)."""
    return "fail" if data.provenance is not None and data.provenance.inconclusive == "fail" else "warn"


def _row(result: VariantResult, unstable: UnstablePolicy = "warn") -> list[str]:
    s = result.latency
    return [
        result.variant,
        "-" if result.is_skipped else result.path,
        _ms(s.p50_ms if s else None),
        _ms(s.p90_ms if s else None),
        _ms(s.p95_ms if s else None),
        _ms(s.p99_ms if s else None),
        calibration_cell(result),
        _rate(result),
        _split(result),
        result.budget.describe() if result.budget else "-",
        verdict_text(result, unstable),
    ]


def _relative_row(r: RelativeResult, inconclusive: UnstablePolicy = "warn") -> list[str]:
    b = r.budget
    unit = "/s" if b.is_rate else " ms"
    ratio = "-" if r.ratio is None else f"{r.ratio:.3f}×" + ("" if r.interval is None else f" {r.interval_text()}")
    added = "-" if r.added is None else f"{r.added:+.2f}{unit}"
    mine = "-" if r.variant_value is None else f"{b.variant} {r.variant_value:.2f}{unit}"
    theirs = "-" if r.baseline_value is None else f"{b.baseline} {r.baseline_value:.2f}{unit}"
    return [b.label, mine, theirs, ratio, added, b.describe(), relative_word(r, inconclusive).upper()]


def relative_word(r: RelativeResult, inconclusive: UnstablePolicy) -> OutcomeWord:
    """A relative budget's word (:mod:`pytest_triton.bench.outcome`): its interval never leaves it unstable."""
    return outcome_word(r.status, "warn", inconclusive)


def parity_row(p: ParityRecord) -> list[str]:
    worst = max(p.outputs, key=lambda o: o.max_abs_error, default=None)
    return [
        p.label,
        p.preset,
        ", ".join(o.name for o in p.outputs) or "-",
        f"{max((o.max_abs_error for o in p.outputs), default=0.0):.3g}",
        f"{max((o.max_rel_error for o in p.outputs), default=0.0):.3g}",
        worst.worst_text() if worst else "-",
        p.labels_text(),
        "PASSED" if p.ok else "FAILED",
    ]


def _aligned(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widest cell; the last column is left unpadded (it may be long)."""
    table = [list(columns), *(list(r) for r in rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns) - 1)]
    lines = []
    for i, row in enumerate(table):
        cells = [cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
        if i == 0:
            lines.append("-" * len(lines[0]))
    return lines


def relative_lines(relative: Sequence[RelativeResult], inconclusive: UnstablePolicy = "warn") -> list[str]:
    """The relative-budget table (empty when there are none)."""
    return _aligned(RELATIVE_COLUMNS, [_relative_row(r, inconclusive) for r in relative]) if relative else []


def parity_lines(parity: Sequence[ParityRecord]) -> list[str]:
    """The parity table (empty when nothing was compared)."""
    return _aligned(PARITY_COLUMNS, [parity_row(p) for p in parity]) if parity else []


def table_lines(
    data: ReportData | Sequence[VariantResult],
    unstable: UnstablePolicy | None = None,
    inconclusive: UnstablePolicy | None = None,
) -> list[str]:
    """Aligned text tables (latency, relative budgets, parity), then a line per note; the verdicts' words under
    ``unstable`` and ``inconclusive`` (default: the provenance's choices)."""
    data = _data(data)
    unstable = unstable or unstable_policy(data)
    inconclusive = inconclusive or inconclusive_policy(data)
    results = data.results
    lines = _aligned(COLUMNS, [_row(r, unstable) for r in results]) if results else []
    hardware = sorted({r.hardware for r in results})
    if hardware:
        lines.append(f"hardware: {', '.join(hardware)}; latencies in ms at concurrency 1")
    for r in results:
        for key, values in r.warmup_s.items():
            if values:
                lines.append(
                    f"{r.variant}: warm-up b={key}: first call {values[0]:.3f} s, {len(values)} call(s), excluded"
                )
        if r.latency is not None and not r.stable:
            lines.append(f"{r.variant}: {r.stability}")
        lines.extend(f"{r.variant}: {line}" for line in path_lines(r))
        lines.extend(f"{r.variant}: {note}" for note in r.notes)
    if data.relative:
        lines += ["", *relative_lines(data.relative, inconclusive)]
        lines += [f"{r.budget.label}: {r.reason}" for r in data.relative if r.status != "pass"]
    if data.parity:
        lines += ["", *parity_lines(data.parity)]
    return lines


def to_json(data: ReportData | Sequence[VariantResult]) -> dict[str, Any]:
    """Everything, samples included (see :meth:`VariantResult.as_dict`); each result and relative budget with
    its ``outcome``, the word every channel uses (:mod:`pytest_triton.bench.outcome`)."""
    data = _data(data)
    unstable, inconclusive = unstable_policy(data), inconclusive_policy(data)
    return {
        "version": REPORT_VERSION,
        "provenance": data.provenance.as_dict() if data.provenance else None,
        "results": [{**r.as_dict(), "outcome": outcome_word(r.verdict.status, unstable, "warn")} for r in data.results],
        "relative": [{**r.as_dict(), "outcome": relative_word(r, inconclusive)} for r in data.relative],
        "parity": [p.as_dict() for p in data.parity],
        "explanations": list(data.explanations),
        "contracts": [dict(o) for o in data.contracts],
        "shard": dict(data.shard) if data.shard is not None else None,
    }


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return lines + ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]


def _variant_details(r: VariantResult, unstable: UnstablePolicy) -> list[str]:
    word = short_verdict(r, unstable)
    lines = [f"### {r.variant} ({r.hardware})", "", f"- verdict: **{word}**: {r.verdict.reason}"]
    lines += [f"- {line}" for line in path_lines(r)]
    if r.budget is not None:
        on = f", written on the {r.budget.path} path" if r.budget.path else ", engine path not stated"
        lines.append(f"- budget: {r.budget.describe()}{on}; source: {r.budget.source}")
    if r.stability:
        lines.append(f"- stability: {r.stability}")
    if r.interleaved_with:
        lines.append(f"- measured side by side with: {', '.join(r.interleaved_with)}")
    if r.load_average:
        lines.append(f"- load average when measured: {'/'.join(f'{v:g}' for v in r.load_average)} (1/5/15 min)")
    if r.latency is not None:
        s = r.latency
        lines.append(
            f"- b={s.batch_size}: {s.count} requests, mean {s.mean_ms:.2f} ms, stdev {s.stdev_ms:.2f} ms, "
            f"min {s.min_ms:.2f} ms, max {s.max_ms:.2f} ms, {s.samples_per_s:.1f} samples/s"
        )
    if r.throughput is not None:
        t = r.throughput
        lines.append(f"- b={t.batch_size}: {t.count} requests, p50 {t.p50_ms:.2f} ms, {t.samples_per_s:.1f} samples/s")
    for split in r.server.models if r.server else ():
        lines.append(
            f"- server `{split.model}` v{split.version} ({r.server.source if r.server else ''}): "
            f"{split.requests} requests, queue {split.queue_us:.0f} µs, compute input "
            f"{split.compute_input_us:.0f} µs, infer {split.compute_infer_us:.0f} µs, output "
            f"{split.compute_output_us:.0f} µs, request {split.request_us:.0f} µs"
        )
    for key, values in r.warmup_s.items():
        lines.append(f"- warm-up b={key} (excluded): " + ", ".join(f"{v:.3f} s" for v in values))
    lines += [f"- note: {n}" for n in r.notes]
    return [*lines, ""]


def to_markdown(data: ReportData | Sequence[VariantResult]) -> str:
    """Tables with short verdict cells, then the details of every verdict, the provenance and how to read it."""
    data = _data(data)
    unstable, inconclusive = unstable_policy(data), inconclusive_policy(data)
    lines = ["# Contract report", ""]
    if data.provenance is not None:
        lines += [f"- {line}" for line in data.provenance.lines()] + [""]
    if data.results:
        rows = [[*_row(r)[:-1], short_verdict(r, unstable)] for r in data.results]
        lines += ["## Latency", "", *_md_table(COLUMNS, rows), ""]
    if data.relative:
        rows = [_relative_row(r, inconclusive) for r in data.relative]
        lines += ["## Relative budgets (measured side by side)", "", *_md_table(RELATIVE_COLUMNS, rows), ""]
        for r in data.relative:
            lines.append(f"- {r.budget.label}: **{relative_word(r, inconclusive).upper()}**: {r.reason}")
            if r.stability:
                lines.append(f"  - stability: {r.stability}")
            lines.append(f"  - source: {r.budget.source}")
        lines.append("")
    if data.parity:
        lines += ["## Parity", "", *_md_table(PARITY_COLUMNS, [parity_row(p) for p in data.parity]), ""]
        for p in data.parity:
            lines.append(f"- {p.label} vs {p.reference}: tolerance {p.tolerance}")
            for o in p.outputs:
                state = "ok" if o.ok else f"FAILED: {o.problem}"
                lines.append(
                    f"  - `{o.name}` {o.dtype} {list(o.shape)}: {state}; {o.mismatched} of {o.total} outside "
                    f"tolerance; max abs {o.max_abs_error:.6g}, max rel {o.max_rel_error:.6g}; worst {o.worst_text()}"
                )
            lines += [f"  - label differs: {d}" for d in p.label_disagreements]
        lines.append("")
    if data.results:
        lines += ["## Verdicts in detail", ""]
        for result in data.results:
            lines += _variant_details(result, unstable)
    if data.explanations:
        lines += ["## Reading this report", ""]
        lines += [f"- {text}" for text in data.explanations] + [""]
    return "\n".join(lines)


def to_svg(data: ReportData | Sequence[VariantResult]) -> str:
    """The SVG chart (see :func:`pytest_triton.bench.svg.render`)."""
    from pytest_triton.bench.svg import render

    return render(_data(data))


def write_report(data: ReportData | Sequence[VariantResult], path_prefix: str | Path) -> list[Path]:
    """Write ``PREFIX.json``, ``PREFIX.md`` and ``PREFIX.svg``; return their paths."""
    data = _data(data)
    prefix = Path(path_prefix)
    if prefix.suffix in (".json", ".md", ".svg"):
        prefix = prefix.with_suffix("")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, text in (
        (".json", json.dumps(to_json(data), indent=2, allow_nan=False) + "\n"),
        (".md", to_markdown(data)),
        (".svg", to_svg(data)),
    ):
        written.append(write_private(prefix.with_name(prefix.name + suffix), text))
    return written
