"""The report's SVG chart, drawn by hand (no dependency), laid out so that nothing is clipped.

Why not matplotlib: it is a large optional dependency, and the report must render the same in a browser, a CI
artifact viewer and a converter (cairosvg, rsvg, chromium). Text is the only thing an SVG cannot measure, so
every label here is in a monospace font, whose advance width is a fixed fraction of the font size (DejaVu Sans
Mono, Liberation Mono, Menlo and Consolas: 0.60 em); widths are computed with a margin above that (``_EM``),
long text is wrapped to the picture's width and columns grow with their longest label.

Panels: the latency of every variant on one shared axis from 0 (p50, p90, p95, p99 markers; below each variant
its budget: the limit as a tick and the tolerance as a band), samples/s at the throughput batch size on a
second shared axis (the budget's minimum, its band below it), the relative budgets as ratios (1.0 = the
baseline), the parity comparisons, then every verdict's detail and the notes, wrapped.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape
from xml.sax.saxutils import quoteattr

from pytest_triton.bench.report import PARITY_COLUMNS
from pytest_triton.bench.report import parity_row
from pytest_triton.bench.report import path_lines
from pytest_triton.bench.report import short_verdict
from pytest_triton.bench.results import VariantResult

if TYPE_CHECKING:
    from pytest_triton.bench.relative import RelativeResult
    from pytest_triton.bench.report import ReportData

__all__ = ["render"]

_W = 1000
_MARGIN = 16
_EM = 0.64  # width of one monospace character per unit of font size, with margin (fonts measure 0.60)
_FONT = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace"
_PCT_COLORS = {50: "#1f77b4", 90: "#2ca02c", 95: "#ff7f0e", 99: "#d62728"}
_VERDICT_COLORS = {
    "PASS": "#2ca02c",
    "FAIL": "#d62728",
    "UNSTABLE": "#ff7f0e",
    "INCONCLUSIVE": "#ff7f0e",
    "REPORT-ONLY": "#4c6a8a",
    "NOT-COMPARABLE": "#8a6d3b",
    "SKIPPED": "#7f7f7f",
    "NOT-MEASURED": "#7f7f7f",
}


def _width(text: str, size: float) -> float:
    return len(text) * size * _EM


def _chars(width: float, size: float) -> int:
    return max(10, int(width / (size * _EM)))


class _Canvas:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.y: float = _MARGIN

    def text(
        self,
        x: float,
        y: float,
        text: str,
        *,
        size: float = 11,
        color: str = "#222",
        bold: bool = False,
        end: bool = False,
    ) -> None:
        attrs = f'x="{x:.1f}" y="{y:.1f}" font-size="{size:g}" fill="{color}"'
        if bold:
            attrs += ' font-weight="bold"'
        if end:
            attrs += ' text-anchor="end"'
        self.parts.append(f"<text {attrs}>{escape(text)}</text>")

    def wrapped(
        self, text: str, *, size: float = 11, color: str = "#222", indent: float = 0, bold: bool = False
    ) -> None:
        usable = _W - 2 * _MARGIN - indent
        for line in textwrap.wrap(text, _chars(usable, size), subsequent_indent="  ") or [""]:
            self.y += size * 1.35
            self.text(_MARGIN + indent, self.y, line, size=size, color=color, bold=bold)

    def rect(self, x: float, y: float, w: float, h: float, color: str, opacity: float = 1.0, title: str = "") -> None:
        tip = f"<title>{escape(title)}</title>" if title else ""
        self.parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.5):.1f}" height="{h:.1f}" fill="{color}" '
            f'fill-opacity="{opacity:g}">{tip}</rect>'
        )

    def line(self, x1: float, y1: float, x2: float, y2: float, color: str = "#333", dash: str = "") -> None:
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        self.parts.append(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}"{extra}/>')

    def heading(self, text: str) -> None:
        self.y += 26
        self.text(_MARGIN, self.y, text, size=13, bold=True)
        self.y += 6


def _nice_max(value: float) -> float:
    """The smallest 1/2/5 × 10^k at or above ``value``."""
    if value <= 0:
        return 1.0
    exp = math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * 10**exp >= value:
            return float(step * 10**exp)
    return float(10 ** (exp + 1))


class _Axis:
    """A shared horizontal axis from 0 to ``hi`` between ``x0`` and ``x1``."""

    def __init__(self, x0: float, x1: float, hi: float) -> None:
        self.x0, self.x1, self.hi = x0, x1, _nice_max(hi * 1.05)

    def x(self, value: float) -> float:
        return self.x0 + min(max(value, 0.0), self.hi) / self.hi * (self.x1 - self.x0)

    def draw(self, canvas: _Canvas, top: float, bottom: float, unit: str) -> None:
        for i in range(6):
            value = self.hi * i / 5
            x = self.x(value)
            canvas.line(x, top, x, bottom, color="#e3e3e3")
            canvas.text(x, bottom + 13, f"{value:g}", size=10, color="#555", end=i == 5)
        canvas.line(self.x0, bottom, self.x1, bottom)
        canvas.text(self.x1, bottom + 26, unit, size=10, color="#555", end=True)


def _columns(labels: Sequence[str]) -> tuple[float, float, float]:
    """The axis's left and right ends and the verdict column's x, from the longest label and verdict."""
    label_w = max((_width(s, 11) for s in labels), default=0) + 12
    verdict_w = _width("NOT-COMPARABLE", 11) + 12
    return _MARGIN + label_w, _W - _MARGIN - verdict_w, _W - _MARGIN


def _verdict_cell(canvas: _Canvas, x_end: float, y: float, verdict: str) -> None:
    canvas.text(x_end, y, verdict, size=11, color=_VERDICT_COLORS.get(verdict, "#222"), bold=True, end=True)


def _label(result: VariantResult) -> str:
    """The row's name with its engine path, e.g. ``onnx [adapter]``."""
    return result.variant if result.is_skipped else f"{result.variant} [{result.path}]"


def _latency_panel(canvas: _Canvas, results: Sequence[VariantResult]) -> None:
    measured = [r for r in results if r.latency is not None]
    batch = measured[0].latency.batch_size if measured and measured[0].latency else 1
    canvas.heading(f"Latency at b={batch}, concurrency 1: one axis for every variant")
    _legend(canvas)
    highs = [r.latency.p99_ms for r in measured if r.latency]
    for r in results:
        if r.budget is not None:
            highs += [v * (1 + r.budget.tolerance) for v in r.budget.percentile_limits().values()]
    x0, x1, xv = _columns([_label(r) for r in results])
    axis = _Axis(x0, x1, max(highs, default=1.0))
    top = canvas.y + 8
    row_h = 46
    bottom = top + len(results) * row_h
    axis.draw(canvas, top, bottom, "latency (ms)")
    for i, r in enumerate(results):
        y = top + i * row_h
        canvas.parts.append(f'<g class="variant" data-variant={quoteattr(r.variant)}>')
        canvas.text(_MARGIN, y + 14, _label(r), size=11)
        _verdict_cell(canvas, xv, y + 14, short_verdict(r))
        s = r.latency
        if s is None:
            canvas.text(
                x0 + 4, y + 14, f"not measured: {r.verdict.reason}"[: _chars(x1 - x0, 10)], size=10, color="#777"
            )
        else:
            canvas.line(axis.x(s.p50_ms), y + 10, axis.x(s.p99_ms), y + 10, color="#999")
            for p, color in _PCT_COLORS.items():
                value = s.percentile_ms(p)
                canvas.rect(axis.x(value) - 2, y + 4, 4, 12, color, title=f"p{p} {value:.2f} ms")
            numbers = f"p50 {s.p50_ms:.2f}  p90 {s.p90_ms:.2f}  p95 {s.p95_ms:.2f}  p99 {s.p99_ms:.2f} ms  n={s.count}"
            cal = r.calibration
            if cal is not None:
                tip = f"adapter calibration p50 {cal.p50_ms:.2f} ms, measured interleaved on the same server"
                canvas.rect(axis.x(cal.p50_ms) - 1, y + 2, 2, 16, "#000", title=tip)
                numbers += f"  | adapter calibration p50 {cal.p50_ms:.2f} ms ({cal.share:.0%}; native pays none of it)"
            elif r.path == "adapter":
                numbers += "  | adapter path, no calibration"
            canvas.text(x0 + 2, y + 41, numbers, size=9, color="#555")
        if r.budget is not None:
            canvas.text(x0 - 4, y + 29, "budget", size=8, color="#777", end=True)
            for j, (p, limit) in enumerate(r.budget.percentile_limits().items()):
                band_y = y + 20 + j * 3.5
                allowed = limit * (1 + r.budget.tolerance)
                tip = f"p{p} budget {limit:g} ms, +{r.budget.tolerance:.0%} tolerance: {allowed:.2f} ms"
                canvas.rect(axis.x(limit), band_y, axis.x(allowed) - axis.x(limit), 3, _PCT_COLORS[p], 0.35, tip)
                canvas.rect(axis.x(limit) - 1, band_y - 0.5, 2, 4, _PCT_COLORS[p])
        canvas.parts.append("</g>")
    canvas.y = bottom + 30


def _legend(canvas: _Canvas) -> None:
    canvas.y += 14
    x = float(_MARGIN)
    for p, color in _PCT_COLORS.items():
        canvas.rect(x, canvas.y - 8, 4, 10, color)
        canvas.text(x + 7, canvas.y, f"p{p}", size=10, color="#555")
        x += 7 + _width(f"p{p}", 10) + 12
    text = "budget lane: | the limit, then its tolerance band (one strip per percentile)"
    canvas.text(x, canvas.y, text, size=10, color="#555")


def _throughput_panel(canvas: _Canvas, results: Sequence[VariantResult]) -> None:
    rows = [r for r in results if r.throughput is not None or (r.budget is not None and r.budget.samples_per_s)]
    if not rows:
        return
    batch = next((r.throughput.batch_size for r in rows if r.throughput), None)
    canvas.heading(f"Throughput at b={batch or '-'}: samples/s, one axis (budget: minimum | with its band below)")
    highs = [r.throughput.samples_per_s for r in rows if r.throughput]
    highs += [r.budget.samples_per_s for r in rows if r.budget is not None and r.budget.samples_per_s]
    x0, x1, _ = _columns([r.variant for r in results])
    axis = _Axis(x0, x1, max(highs, default=1.0))
    top = canvas.y + 8
    row_h = 24
    bottom = top + len(rows) * row_h
    axis.draw(canvas, top, bottom, "samples/s")
    for i, r in enumerate(rows):
        y = top + i * row_h
        canvas.text(_MARGIN, y + 14, r.variant, size=11)
        if r.throughput is not None:
            rate = r.throughput.samples_per_s
            canvas.rect(x0, y + 5, axis.x(rate) - x0, 12, "#4c78a8", title=f"{rate:.1f} samples/s")
            label = f"{rate:.1f}/s"
            inside = axis.x(rate) - x0 > _width(label, 10) + 8
            lx = axis.x(rate) - 4 if inside else axis.x(rate) + 4
            canvas.text(lx, y + 15, label, size=10, color="white" if inside else "#222", end=inside)
        if r.budget is not None and r.budget.samples_per_s:
            limit = r.budget.samples_per_s
            low = limit * (1 - r.budget.tolerance)
            canvas.rect(axis.x(low), y + 18, axis.x(limit) - axis.x(low), 4, "#d62728", 0.35)
            canvas.rect(axis.x(limit) - 0.75, y + 2, 1.5, 20, "#d62728", title=f"budget ≥{limit:g}/s")
    canvas.y = bottom + 30


def _relative_figures(r: RelativeResult) -> str:
    """``0.610× [0.590, 0.630]× (99.5%, 9 rounds), 10.00 vs 16.00 ms``: the ratio and how sure, in one short line."""
    if r.ratio is None or r.variant_value is None or r.baseline_value is None:
        return "not measured"
    unit = "/s" if r.budget.is_rate else " ms"
    sure = f" {r.interval_text()} ({r.confidence:.1%}, {r.rounds} rounds)" if r.interval is not None else ""
    return f"{r.ratio:.3f}×{sure}, {r.variant_value:.2f} vs {r.baseline_value:.2f}{unit}"


def _relative_panel(canvas: _Canvas, data: ReportData) -> None:
    if not data.relative:
        return
    canvas.heading("Relative budgets, measured side by side: variant / baseline (1.0 = as fast as the baseline)")
    labels = [r.budget.label for r in data.relative]
    x0, x1, xv = _columns(labels)
    highs = [r.ratio or 0.0 for r in data.relative] + [r.budget.allowed_ratio() or 0.0 for r in data.relative]
    highs += [r.interval[1] for r in data.relative if r.interval is not None]
    axis = _Axis(x0, x1, max([*highs, 1.0]))
    top = canvas.y + 8
    row_h = 36
    bottom = top + len(data.relative) * row_h
    axis.draw(canvas, top, bottom, "ratio")
    for i, r in enumerate(data.relative):
        y = top + i * row_h
        canvas.text(_MARGIN, y + 14, r.budget.label, size=11)
        _verdict_cell(canvas, xv, y + 14, r.status.upper())
        canvas.line(axis.x(1.0), y + 2, axis.x(1.0), y + 22, color="#555", dash="3,2")
        limit, allowed = r.budget.min_ratio or r.budget.max_ratio, r.budget.allowed_ratio()
        if limit is not None and allowed is not None:
            lo, hi = sorted((limit, allowed))
            canvas.rect(axis.x(lo), y + 17, axis.x(hi) - axis.x(lo), 4, "#d62728", 0.35)
            canvas.rect(axis.x(limit) - 0.75, y + 2, 1.5, 20, "#d62728")
        if r.ratio is not None:
            canvas.rect(x0, y + 6, axis.x(r.ratio) - x0, 9, "#4c78a8", 0.85, title=f"{r.ratio:.3f}×")
        if r.interval is not None:  # the interval the outcome rests on, as a whisker across the bar's end
            low, high = (axis.x(v) for v in r.interval)
            canvas.line(low, y + 10.5, high, y + 10.5, color="#222")
            canvas.line(low, y + 6, low, y + 15, color="#222")
            canvas.line(high, y + 6, high, y + 15, color="#222")
        canvas.text(x0 + 2, y + 33, f"{_relative_figures(r)}; budget {r.budget.describe()}", size=9, color="#555")
    canvas.y = bottom + 30


def _parity_panel(canvas: _Canvas, data: ReportData) -> None:
    if not data.parity:
        return
    canvas.heading(f"Parity against {data.parity[0].reference}")
    rows = [list(PARITY_COLUMNS), *(parity_row(p) for p in data.parity)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(PARITY_COLUMNS))]
    size = 10.0
    while sum(widths) + 2 * len(widths) > _chars(_W - 2 * _MARGIN, size) and size > 6:
        size -= 0.5  # a monospace table that is too wide gets a smaller font, never clipped
    for i, row in enumerate(rows):
        canvas.y += size * 1.5
        x = float(_MARGIN)
        for j, cell in enumerate(row):
            color = _VERDICT_COLORS.get(cell, "#222") if j == len(row) - 1 and i else "#222"
            canvas.text(x, canvas.y, cell, size=size, color=color, bold=i == 0 or j == len(row) - 1)
            x += (widths[j] + 2) * size * _EM
    canvas.y += 6


def _details(canvas: _Canvas, data: ReportData) -> None:
    canvas.heading("Verdicts in detail")
    for r in data.results:
        canvas.wrapped(f"{r.variant}: {r.verdict.status.upper()}: {r.verdict.reason}", size=10)
        for line in path_lines(r):
            canvas.wrapped(line, size=9, color="#555", indent=16)
        if r.stability and r.latency is not None:
            canvas.wrapped(f"stability: {r.stability}", size=9, color="#555", indent=16)
        for note in r.notes:
            canvas.wrapped(f"note: {note}", size=9, color="#555", indent=16)
    for rel in data.relative:
        canvas.wrapped(f"{rel.budget.label}: {rel.status.upper()}: {rel.reason}", size=10)
        if rel.stability:
            canvas.wrapped(f"stability: {rel.stability}", size=9, color="#555", indent=16)
    for p in data.parity:
        for d in p.label_disagreements:
            canvas.wrapped(f"{p.label}: label differs: {d}", size=10, color="#d62728")
    if data.explanations:
        canvas.heading("Reading this report")
        for text in data.explanations:
            canvas.wrapped(text, size=10)


def render(data: ReportData) -> str:
    canvas = _Canvas()
    canvas.y += 8
    canvas.text(_MARGIN, canvas.y, "pytest-triton contract report", size=15, bold=True)
    if data.provenance is not None:
        for line in data.provenance.lines():
            canvas.wrapped(line, size=10, color="#444")
    if data.results:
        _latency_panel(canvas, data.results)
        _throughput_panel(canvas, data.results)
    _relative_panel(canvas, data)
    _parity_panel(canvas, data)
    if data.results or data.relative or data.explanations:
        _details(canvas, data)
    height = int(canvas.y + _MARGIN + 8)
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" viewBox="0 0 {_W} {height}" '
        f"font-family={quoteattr(_FONT)}>"
    )
    return "\n".join([head, f'<rect width="{_W}" height="{height}" fill="white"/>', *canvas.parts, "</svg>", ""])
