"""The report's SVG as a person sees it: rendered by a real renderer (cairosvg, on the system's cairo), nothing
drawn outside the canvas, each panel on a scale that shows its rows, a legend for every mark, and the relative
panel's p50 told apart from the latency panel's.

The data is a main job's mix: a sub-millisecond row beside a 30 ms one, 23/s beside 2000/s, an adapted row with
its calibration, long variant names and relative budgets whose labels and figures are long."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator

import pytest

from pytest_triton.bench.budgets import parse_budgets
from pytest_triton.bench.engine import Calibration
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import evaluate_relative
from pytest_triton.bench.report import ReportData
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.results import build_result
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.svg import render

cairosvg = pytest.importorskip("cairosvg", reason="the SVG is rendered with cairosvg (pip install '.[test]')")
Image = pytest.importorskip("PIL.Image", reason="the rendered pixels are read with Pillow (cairosvg's dependency)")

MS = 1_000_000
BUDGETS = parse_budgets(
    """
[cpu-test]
source = "made up"
[cpu-test."contracts.toml: a very long variant name for the tokenizer ensemble"]
p50_ms = 40
samples_per_s = 20
[cpu-test.tiny]
p50_ms = 0.5
""",
    "budgets.toml",
)


def _measured(values_ms: list[float], batch_size: int = 1) -> Measurement:
    state = {"now": 0}
    cycle: Iterator[int] = iter([int(v * MS) for v in values_ms] * 1000)

    def clock() -> int:
        return state["now"]

    def call() -> None:
        state["now"] += next(cycle)

    policy = WindowPolicy(window_requests=len(values_ms))
    return measure(call, batch_size=batch_size, warmup=0, policy=policy, clock=clock)


def _report() -> ReportData:
    long = "contracts.toml: a very long variant name for the tokenizer ensemble"
    slow = build_result(long, "cpu-test", _measured([30.0, 33.0, 41.0]), _measured([340.0], 8), budgets=BUDGETS)
    tiny = build_result("tiny", "cpu-test", _measured([0.21, 0.25, 0.3]), _measured([0.5], 8), budgets=BUDGETS)
    calibration = Calibration("tiny__pytest_triton_calibration", 0.12, 0.15, 50, 0.5, 80.0)
    adapted = build_result(
        "adapted",
        "cpu-test",
        _measured([0.4, 0.5, 0.6]),
        path="adapter",
        engine_reason="served by the python-backend ONNX Runtime adapter",
        calibration=calibration,
    )
    relative = []
    for metric, name in (("p50_ms", "contracts.toml: latency[a very long ensemble/fp32 baseline] p50"), ("p99_ms", "")):
        budget = RelativeBudget(
            long, "tiny", metric, hardware="cpu-test", source="contracts.toml", max_ratio=200.0, name=name
        )
        stats = (_measured([29.0, 31.0, 35.0]).stats(), _measured([0.2, 0.22, 0.4]).stats())
        relative.append(evaluate_relative(budget, *stats))
    return ReportData((slow, tiny, adapted, VariantResult.skipped("trt", "cpu-test", "no TensorRT")), tuple(relative))


def _ink_outside(svg: str) -> list[tuple[int, int]]:
    """Pixels drawn beyond the declared canvas, found by rendering the picture on a canvas twice as large."""
    width, height = (int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups())  # type: ignore[union-attr]
    wide = svg.replace(
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}"',
        f'width="{2 * width}" height="{2 * height}" viewBox="0 0 {2 * width} {2 * height}"',
        1,
    )
    png = cairosvg.svg2png(bytestring=wide.encode(), background_color="white")
    picture = Image.open(io.BytesIO(png)).convert("L")
    pixels = picture.load()
    return [
        (x, y)
        for x in range(0, 2 * width, 2)
        for y in range(0, 2 * height, 2)
        if (x >= width or y >= height) and pixels[x, y] < 250
    ]


def test_nothing_is_drawn_outside_the_canvas() -> None:
    outside = _ink_outside(render(_report()))
    assert not outside, f"{len(outside)} pixels drawn outside the canvas, e.g. {outside[:5]}"


def test_each_panel_shows_its_rows_and_explains_its_marks() -> None:
    svg = render(_report())
    # 0.25 ms beside 33 ms and 0.5/8 beside 340 ms per 8: a log axis, said so
    assert svg.count("log scale") >= 2
    # every mark drawn has its legend entry
    for mark in ("adapter calibration p50", "budget limit", "1.0 = the baseline"):
        assert mark in svg, mark
    # the relative panel's p50 is the side-by-side run's, not the latency panel's: said where they differ
    assert "p50 31.00 ms side by side, 33.00 ms measured alone" in svg
