"""Latency reports: a terminal table, JSON, Markdown and an SVG of latency histograms (written by hand).

:func:`write_report` takes a *path prefix* and writes three sibling files, ``PREFIX.json``, ``PREFIX.md`` and
``PREFIX.svg`` (a suffix ``.json``/``.md``/``.svg`` on the prefix is dropped; parent folders are created).
Skipped variants appear in every format as SKIPPED with their reason, never as passed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape
from xml.sax.saxutils import quoteattr

from pytest_triton.bench.results import VariantResult

__all__ = ["table_lines", "to_json", "to_markdown", "to_svg", "write_report"]

COLUMNS = ("variant", "p50", "p90", "p95", "p99", "samples/s", "queue/compute", "budget", "verdict")
REPORT_VERSION = 1


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


def verdict_text(result: VariantResult) -> str:
    """The verdict cell: PASS, FAIL: <failed checks>, UNSTABLE, REPORT-ONLY or SKIPPED: <reason>."""
    v = result.verdict
    label = v.status.upper()
    if v.status == "pass":
        unmeasured = [c.metric for c in v.checks if c.ok is None]
        return label + (f" ({', '.join(unmeasured)} not measured)" if unmeasured else "")
    if v.status == "fail":
        return label + ": " + "; ".join(c.describe() for c in v.checks if c.ok is False)
    if v.status == "report-only":
        return label + " (no budget)" if result.budget is None else label + ": " + v.reason
    return f"{label}: {v.reason}"


def _row(result: VariantResult) -> list[str]:
    s = result.latency
    return [
        result.variant,
        _ms(s.p50_ms if s else None),
        _ms(s.p90_ms if s else None),
        _ms(s.p95_ms if s else None),
        _ms(s.p99_ms if s else None),
        _rate(result),
        _split(result),
        result.budget.describe() if result.budget else "-",
        verdict_text(result),
    ]


def table_lines(results: Sequence[VariantResult]) -> list[str]:
    """An aligned text table (latencies in ms), then a line per note: hardware, stability, warm-up, notes."""
    rows = [list(COLUMNS), *(_row(r) for r in results)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS) - 1)]
    lines = []
    for i, row in enumerate(rows):
        cells = [cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
        if i == 0:
            lines.append("-" * len(lines[0]))
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
        lines.extend(f"{r.variant}: {note}" for note in r.notes)
    return lines


def to_json(results: Sequence[VariantResult]) -> dict[str, Any]:
    """Everything, samples included, with ``columns``-free structure (see :meth:`VariantResult.as_dict`)."""
    return {"version": REPORT_VERSION, "results": [r.as_dict() for r in results]}


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(results: Sequence[VariantResult]) -> str:
    """A Markdown table, then each variant's verdict reason, stability, budget source and notes."""
    lines = ["# Latency report", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_md_cell(c) for c in _row(r)) + " |" for r in results]
    lines.append("")
    for r in results:
        lines += [
            f"## {r.variant} ({r.hardware})",
            "",
            f"- verdict: **{r.verdict.status.upper()}**: {r.verdict.reason}",
        ]
        if r.budget is not None:
            lines.append(f"- budget: {r.budget.describe()}; source: {r.budget.source}")
        if r.stability:
            lines.append(f"- stability: {r.stability}")
        if r.latency is not None:
            s = r.latency
            lines.append(
                f"- b={s.batch_size}: {s.count} requests, mean {s.mean_ms:.2f} ms, stdev {s.stdev_ms:.2f} ms, "
                f"min {s.min_ms:.2f} ms, max {s.max_ms:.2f} ms, {s.samples_per_s:.1f} samples/s"
            )
        if r.throughput is not None:
            t = r.throughput
            lines.append(
                f"- b={t.batch_size}: {t.count} requests, p50 {t.p50_ms:.2f} ms, {t.samples_per_s:.1f} samples/s"
            )
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
        lines.append("")
    return "\n".join(lines)


# -- SVG ------------------------------------------------------------------------------------------------------

_W, _PANEL, _SKIP_PANEL, _LEFT, _RIGHT, _TOP = 760, 190, 44, 60, 20, 34
_TITLE_CHARS = 100


def _ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    return [lo + (hi - lo) * i / (count - 1) for i in range(count)]


def _histogram_panel(r: VariantResult, y0: int) -> list[str]:
    out = []
    title = f"{r.variant} ({r.hardware})"
    if r.latency is not None:
        s = r.latency
        title += f" b={s.batch_size} n={s.count}: p50 {s.p50_ms:.2f} ms, p99 {s.p99_ms:.2f} ms"
    title += f" | {verdict_text(r)}"
    if len(title) > _TITLE_CHARS:  # keep it inside the picture; the full text is in the JSON and Markdown
        title = title[: _TITLE_CHARS - 1] + "…"
    out.append(f'<text x="{_LEFT}" y="{y0 + 16}" font-size="12" font-weight="bold">{escape(title)}</text>')
    samples = sorted(r.samples_ms)
    budget_p99 = None
    if r.budget is not None and r.budget.p99_ms is not None:
        budget_p99 = r.budget.p99_ms * (1 + r.budget.tolerance)
    lo = samples[0]
    hi = max(samples[-1], budget_p99 or 0.0)
    if hi <= lo:
        hi = lo + max(abs(lo) * 0.01, 1e-3)
    bins = min(40, max(5, math.ceil(math.sqrt(len(samples)))))
    counts = [0] * bins
    for v in samples:
        counts[min(bins - 1, int((v - lo) / (hi - lo) * bins))] += 1
    plot_w, plot_h = _W - _LEFT - _RIGHT, _PANEL - _TOP - 40
    base = y0 + _TOP + plot_h
    peak = max(counts)
    bar_w = plot_w / bins

    def x_of(value: float) -> float:
        return _LEFT + (value - lo) / (hi - lo) * plot_w

    for i, c in enumerate(counts):
        h = plot_h * c / peak if peak else 0
        out.append(
            f'<rect x="{_LEFT + i * bar_w:.1f}" y="{base - h:.1f}" width="{max(bar_w - 1, 0.5):.1f}" '
            f'height="{h:.1f}" fill="#4c78a8"><title>{c} request(s)</title></rect>'
        )
    out.append(f'<line x1="{_LEFT}" y1="{base}" x2="{_W - _RIGHT}" y2="{base}" stroke="#333"/>')
    for t in _ticks(lo, hi):
        out.append(f'<text x="{x_of(t):.1f}" y="{base + 14}" font-size="10" text-anchor="middle">{t:.2f}</text>')
    out.append(f'<text x="{_W - _RIGHT}" y="{base + 28}" font-size="10" text-anchor="end">latency (ms)</text>')
    out.append(f'<text x="{_LEFT - 6}" y="{base - plot_h + 8}" font-size="10" text-anchor="end">{peak}</text>')
    marks = []
    if r.latency is not None:
        marks += [(r.latency.p50_ms, "#2ca02c", "p50", ""), (r.latency.p99_ms, "#ff7f0e", "p99", "")]
    if budget_p99 is not None:
        marks.append((budget_p99, "#d62728", "budget p99", ' stroke-dasharray="5,3"'))
    for value, color, label, dash in marks:
        x = x_of(value)
        out.append(f'<line x1="{x:.1f}" y1="{base - plot_h}" x2="{x:.1f}" y2="{base}" stroke="{color}"{dash}/>')
        near_right = x > _W - _RIGHT - 80  # label to the left of its line, inside the picture
        anchor = f'x="{x - 3:.1f}" text-anchor="end"' if near_right else f'x="{x + 3:.1f}"'
        out.append(f'<text {anchor} y="{base - plot_h + 10}" font-size="10" fill="{color}">{label}</text>')
    return out


def to_svg(results: Sequence[VariantResult]) -> str:
    """One latency histogram per measured variant (p50, p99 and the budget's p99 marked); one line per skip."""
    body: list[str] = []
    y = 10
    for r in results:
        if r.samples_ms:
            body.append(f'<g class="histogram" data-variant={quoteattr(r.variant)}>')
            body += _histogram_panel(r, y)
            body.append("</g>")
            y += _PANEL
        else:
            text = f"{r.variant} ({r.hardware}): {verdict_text(r)}"
            body.append(
                f'<text class="no-samples" x="{_LEFT}" y="{y + 20}" font-size="11" fill="#7f7f7f">'
                f"{escape(text if len(text) <= _TITLE_CHARS + 10 else text[: _TITLE_CHARS + 9] + '…')}</text>"
            )
            y += _SKIP_PANEL
    height = max(y + 10, 40)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" viewBox="0 0 {_W} {height}" '
        'font-family="sans-serif">'
    )
    return "\n".join([head, f'<rect width="{_W}" height="{height}" fill="white"/>', *body, "</svg>", ""])


def write_report(results: Sequence[VariantResult], path_prefix: str | Path) -> list[Path]:
    """Write ``PREFIX.json``, ``PREFIX.md`` and ``PREFIX.svg``; return their paths."""
    prefix = Path(path_prefix)
    if prefix.suffix in (".json", ".md", ".svg"):
        prefix = prefix.with_suffix("")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for suffix, text in (
        (".json", json.dumps(to_json(results), indent=2, allow_nan=False) + "\n"),
        (".md", to_markdown(results)),
        (".svg", to_svg(results)),
    ):
        path = prefix.with_name(prefix.name + suffix)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written
