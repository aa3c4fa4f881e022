"""What a test measured, in pytest's own channels: ``record_property`` (JUnit XML's ``<properties>``) and
pytest-benchmark's machine info.

Every latency result and relative budget the session's bench records while a test runs becomes a property of
that test: ``triton_verdict[NAME]``, ``triton_p50_ms[NAME]``, ``triton_samples_per_s[NAME]`` and, for a relative
budget, ``triton_ratio[NAME]``, ``triton_ratio_interval[NAME]`` (``LOW..HIGH``) and ``triton_rounds[NAME]``; a
contract item also gets its own ``triton_verdict``. Nothing heavy is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

import pytest

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench

# how many results and relative results of the bench earlier tests have already reported
_SEEN_KEY = pytest.StashKey[tuple[int, int]]()


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


def bench_properties(bench: TritonBench, seen: tuple[int, int]) -> list[tuple[str, Any]]:
    """The properties of what ``bench`` recorded after ``seen`` (counts of results and relative results)."""
    found: list[tuple[str, Any]] = []
    for result in bench.results[seen[0] :]:
        name = result.variant
        found.append((f"triton_verdict[{name}]", result.verdict.status))
        if result.latency is not None:
            found.append((f"triton_p50_ms[{name}]", _number(result.latency.p50_ms)))
        stats = result.throughput or result.latency
        if stats is not None:
            found.append((f"triton_samples_per_s[{name}]", _number(stats.samples_per_s)))
    for relative in bench.relative[seen[1] :]:
        name = relative.budget.label
        found.append((f"triton_verdict[{name}]", relative.status))
        found.append((f"triton_ratio[{name}]", _number(relative.ratio)))
        if relative.interval is not None:
            found.append((f"triton_ratio_interval[{name}]", "{:.6g}..{:.6g}".format(*relative.interval)))
        found.append((f"triton_rounds[{name}]", str(relative.rounds)))
    return found


def record_bench_properties(item: pytest.Item) -> None:
    """Add to ``item.user_properties`` what the session's bench recorded since the previous test."""
    from pytest_triton.plugin.state import BENCH_KEY

    bench = item.config.stash.get(BENCH_KEY, None)
    if bench is None:
        return
    seen = item.config.stash.get(_SEEN_KEY, (0, 0))
    item.user_properties.extend(bench_properties(bench, seen))
    item.config.stash[_SEEN_KEY] = (len(bench.results), len(bench.relative))


def machine_info(bench: TritonBench, machine_info: dict[str, Any]) -> None:
    """pytest-benchmark's machine info gets the budget hardware key and where it came from, so that
    ``--benchmark-compare`` across hardware says the machines differ. Only what is known before any test: the
    compare runs in pytest-benchmark's ``pytest_configure``, the save at the session's end, and the two must agree
    on one machine."""
    machine_info["triton_hardware"] = bench.hardware
    machine_info["triton_hardware_source"] = bench.hardware_source or "this machine"


def run_info(bench: TritonBench) -> dict[str, str]:
    """What the run found (the server's version, what was asserted): saved beside the machine info, under
    ``triton`` in pytest-benchmark's JSON."""
    return {"triton_server": bench.triton_version or "unknown", "triton_enforcement": bench.enforcement_text()}
