"""A latency row measured beside its calibration model: the adapter path's way to say how much of its time is
the python-backend adapter itself (:mod:`pytest_triton.bench.engine`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pytest_triton.bench.engine import Calibration
from pytest_triton.bench.engine import Engine
from pytest_triton.bench.interleave import measure_interleaved
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WarmupRecord
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import stats_delta

CALIBRATION = "adapter calibration"  # the calibration model's name among the interleaved calls


def measure_calibrated(
    variant: str,
    call: Callable[[], object],
    engine: Engine,
    batch_size: int,
    policy: WindowPolicy,
    warmed: WarmupRecord | None,
    http_url: str | None,
    kwargs: dict[str, Any],
    calibration_snapshots: list[StatsSnapshot],
) -> tuple[Measurement, Calibration]:
    """The row ``variant`` (``call``) and the calibration model of its engine path in alternating windows, each
    settling on its own; ``kwargs`` are the row's measurement options (its clock and window-boundary callback), and
    ``calibration_snapshots`` gathers the statistics at the calibration windows' boundaries (with ``http_url``)."""
    calibrate = engine.calibration_call
    assert calibrate is not None, "measure_calibrated needs an engine path with a calibration call"
    row_boundary = kwargs.get("on_boundary")

    def boundary(name: str) -> None:
        if name == variant and row_boundary is not None:
            row_boundary()
        elif name == CALIBRATION and http_url is not None:
            calibration_snapshots.append(fetch_statistics(http_url))

    clock = {"clock": kwargs["clock"]} if "clock" in kwargs else {}
    run = measure_interleaved(
        {variant: call, CALIBRATION: calibrate},
        batch_size=batch_size,
        policy=policy,
        settle="all",
        warmed={variant: warmed} if warmed is not None else None,
        on_boundary=boundary,
        **clock,
    )
    latency, measured = run.measurements[variant], run.measurements[CALIBRATION].stats()
    infer_us = None
    name = engine.calibration_model or ""
    kept = min(policy.stable_windows, run.rounds)
    if len(calibration_snapshots) > kept:
        split = stats_delta(calibration_snapshots[-kept - 1], calibration_snapshots[-1], models=[name])
        own = split.for_model(name)
        infer_us = own.compute_infer_us if own is not None and own.requests else None
    row_p50 = latency.stats().p50_ms
    share = measured.p50_ms / row_p50 if row_p50 > 0 else float("nan")
    return latency, Calibration(name, measured.p50_ms, measured.p90_ms, measured.count, share, infer_us)
