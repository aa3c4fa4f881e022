"""A budgets file written from a measured run (``--triton-budgets-record FILE``).

Each measured latency row becomes ``[<hardware key>.<variant>]`` with its percentiles times the margin (maximums)
and its samples/s divided by it (a minimum), the engine path it was measured on and the batch sizes; the hardware
table says when, where and with which margin. Tables of other hardware keys already in the file are kept, so one
file collects the budgets of every machine it was recorded on.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import socket
from collections.abc import Sequence
from pathlib import Path

from pytest_triton.archive.files import read_file_text
from pytest_triton.bench.engine import BUDGET_PATHS
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.stats import PERCENTILES
from pytest_triton.errors import ConfigError

__all__ = ["MAX_MARGIN", "merge_budgets", "parse_margin", "recordable", "render_budgets", "write_budgets"]

MAX_MARGIN = 1000.0  # beyond it a budget asserts nothing a timeout would not
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# the percentiles a recorded budget holds: p95/p99 of a first run's short windows are the machine's noise more
# than the model's (they are in each row's notes; add p99_ms by hand for a tail budget)
RECORDED_PERCENTILES = (50, 90)
_TOP_HEADER = re.compile(r"^\s*\[\[?\s*\"?([^\].\"]+)\"?\s*[.\]]")


def parse_margin(text: str, where: str) -> float:
    """``text`` as a margin factor in [1, MAX_MARGIN]; ConfigError naming ``where`` otherwise."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 1.0 <= value <= MAX_MARGIN):
        raise ConfigError(
            f"{where}={text!r}: expected a factor from 1 to {MAX_MARGIN:g} (2: budgets at twice the measured "
            "percentiles and half the measured samples/s)"
        )
    return value


def recordable(results: Sequence[VariantResult]) -> list[VariantResult]:
    """The rows that measured something, the last one per variant (a variant measured twice keeps its latest)."""
    rows = {r.variant: r for r in results if r.latency is not None and not r.is_skipped}
    return list(rows.values())


def _key(name: str) -> str:
    """A TOML key: bare where TOML allows it (the budget reader's errors then find its line), quoted otherwise."""
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


def _round(value: float) -> float:
    return float(f"{value:.3g}")


def render_budgets(rows: Sequence[VariantResult], hardware: str, margin: float, *, version: str) -> str:
    """The TOML table of ``hardware`` holding ``rows`` at ``margin``."""
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    source = (
        f"recorded by pytest-triton {version} on {socket.gethostname()} ({hardware}), {when}: "
        f"budgets = measured x {margin:g} (samples/s: measured / {margin:g})"
    )
    lines = [
        f"# -- {hardware}: recorded with --triton-budgets-record; record again to replace this table --",
        f"[{_key(hardware)}]",
        f"source = {json.dumps(source)}",
        "tolerance = 0.0          # the margin is in the numbers already",
        "",
    ]
    for row in rows:
        latency = row.latency
        assert latency is not None
        rate = row.throughput or latency
        measured = ", ".join(f"p{p} {latency.percentile_ms(p):.3g} ms" for p in PERCENTILES)
        lines.append(f"[{_key(hardware)}.{_key(row.variant)}]")
        notes = f"measured {measured}, {rate.samples_per_s:.3g} samples/s at batch {rate.batch_size}"
        lines.append(f"notes = {json.dumps(notes)}")
        if row.path in BUDGET_PATHS:
            lines.append(f"path = {json.dumps(row.path)}")
        lines.append(f"batch_size = {latency.batch_size}")
        lines.append(f"throughput_batch_size = {rate.batch_size}")
        if not row.stable:
            lines.append(f"# measured unsettled ({row.stability}): a margin above {margin:g} may be needed")
        for p in RECORDED_PERCENTILES:
            lines.append(f"p{p}_ms = {_round(latency.percentile_ms(p) * margin)}")
        if rate.samples_per_s > 0:
            lines.append(f"samples_per_s = {_round(rate.samples_per_s / margin)}")
        lines.append("")
    return "\n".join(lines)


def merge_budgets(existing: str, hardware: str, table: str) -> str:
    """``existing`` budgets text without its ``hardware`` tables, then ``table``. A block runs from one top-level
    header to the next; the comments right above a header go with it."""
    kept: list[str] = []
    block: list[str] = []
    pending: list[str] = []  # comment and blank lines: they belong to the next header
    dropping = False
    for line in existing.splitlines():
        if line.strip().startswith("#") or not line.strip():
            pending.append(line)
            continue
        match = _TOP_HEADER.match(line)
        if match:
            (kept if not dropping else []).extend(block)
            block, dropping = [*pending, line], match.group(1).strip() == hardware
        else:
            block.extend([*pending, line])
        pending = []
    if not dropping:
        kept.extend(block)
    kept.extend(pending)
    head = "\n".join(kept).rstrip()
    return (head + "\n\n" if head else "") + table


def write_budgets(
    path: Path, results: Sequence[VariantResult], hardware: str, margin: float, *, version: str
) -> list[VariantResult]:
    """Write (or update) ``path`` with the recordable ``results``; returns the rows written (none: not written)."""
    rows = recordable(results)
    if not rows:
        return []
    table = render_budgets(rows, hardware, margin, version=version)
    existing = read_file_text(path, "budgets") if path.exists() else ""  # a FIFO or device: a ConfigError
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(merge_budgets(existing, hardware, table), encoding="utf-8")
    return rows
