"""The session's latency bench: measures variants, keeps their results, prints and writes the report.

The plugin keeps one :class:`TritonBench` per session in ``config.stash[BENCH_KEY]`` and hands it to tests
through a fixture; the terminal summary prints :meth:`TritonBench.summary_lines` and, with
``--triton-report PATH``, :meth:`TritonBench.write_report` writes ``PATH.json``, ``PATH.md`` and ``PATH.svg``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import NoReturn
from typing import final

import pytest

from pytest_triton.bench.budgets import BudgetFile
from pytest_triton.bench.budgets import load_budgets
from pytest_triton.bench.report import table_lines
from pytest_triton.bench.report import write_report
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.results import assert_within_budget
from pytest_triton.bench.results import build_result
from pytest_triton.bench.sampling import Clock
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.sampling import warm_up_shapes
from pytest_triton.bench.server_stats import ServerSplit
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import composing_models
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import stats_delta

__all__ = ["BENCH_KEY", "TritonBench"]


@final
class TritonBench:
    """Measures model variants against the latency budgets of this machine and collects the results.

    ``hardware`` is the budget key (default :func:`pytest_triton.hardware.hardware_key`); ``budgets`` the loaded
    budget file (None: every variant is report-only).
    """

    def __init__(
        self,
        *,
        hardware: str | None = None,
        budgets: BudgetFile | None = None,
        policy: WindowPolicy | None = None,
        clock: Clock | None = None,
    ) -> None:
        if hardware is None:
            from pytest_triton.hardware import hardware_key

            hardware = hardware_key()
        self.hardware = hardware
        self.budgets = budgets
        self.policy = policy or WindowPolicy()
        self.clock = clock
        self.results: list[VariantResult] = []

    @classmethod
    def from_options(
        cls, budgets_path: str | Path | None, hardware: str | None = None, *, required: bool = True
    ) -> TritonBench:
        """Build from ``--triton-budgets`` and ``--triton-hardware``.

        A budget file that does not exist is a ConfigError when ``required`` (the user named it), and means
        "no budgets, report only" otherwise (the default path, in a project that has none).
        """
        budgets = None
        if budgets_path is not None and (required or Path(budgets_path).is_file()):
            budgets = load_budgets(budgets_path)
        return cls(hardware=hardware, budgets=budgets)

    def add(self, result: VariantResult) -> VariantResult:
        self.results.append(result)
        return result

    def skip_variant(self, variant: str, reason: str) -> NoReturn:
        """Record ``variant`` as SKIPPED with ``reason`` (shown in the report, never as passed) and skip the test."""
        budget = self.budgets.lookup(self.hardware, variant) if self.budgets else None
        self.add(VariantResult.skipped(variant, self.hardware, reason, budget=budget))
        pytest.skip(reason)

    def measure(
        self,
        variant: str,
        call: Callable[[], object],
        *,
        batch_size: int = 1,
        throughput_call: Callable[[], object] | None = None,
        throughput_batch_size: int = 8,
        warm_shapes: Mapping[Hashable, Callable[[], object]] | None = None,
        warmup: int = 3,
        policy: WindowPolicy | None = None,
        http_url: str | None = None,
        model: str | None = None,
        notes: Sequence[str] = (),
        benchmark: Any = None,
    ) -> VariantResult:
        """Warm up every shape, measure ``call`` (percentiles) and ``throughput_call`` (samples/s), judge, record.

        Every shape (``batch_size``, ``throughput_batch_size`` and ``warm_shapes``) is warmed ``warmup`` times
        before the first measurement. With ``http_url``, the statistics API splits the server time of exactly
        the kept latency windows (one snapshot per window boundary) per model: ``model`` and, for an ensemble, its
        composing models (every model that served requests when ``model`` is None). With pytest-benchmark's
        ``benchmark`` fixture, the latency samples are recorded there too.
        """
        from pytest_triton.bench.benchmark import record_benchmark

        kwargs: dict[str, Any] = {"clock": self.clock} if self.clock else {}
        shapes: dict[Hashable, Callable[[], object]] = {batch_size: call}
        if throughput_call is not None:
            shapes[throughput_batch_size] = throughput_call
        shapes.update(warm_shapes or {})
        warmed = warm_up_shapes(shapes, count=warmup, **kwargs) if warmup else None
        policy = policy or self.policy
        snapshots: list[StatsSnapshot] = []
        models: list[str] | None = None
        if http_url is not None:
            url = http_url
            if model is not None:
                models = [model, *composing_models(url, model)]
            kwargs["on_boundary"] = lambda: snapshots.append(fetch_statistics(url))
        latency = measure(call, batch_size=batch_size, warmup=0, policy=policy, warmed=warmed, **kwargs)
        kwargs.pop("on_boundary", None)
        server: ServerSplit | None = None
        if snapshots:
            # statistics of exactly the kept windows: the snapshot before the first of them, the one after the last
            kept = min(policy.stable_windows, len(latency.windows))
            server = stats_delta(snapshots[-kept - 1], snapshots[-1], models=models)
        rate = None
        if throughput_call is not None:
            rate = measure(throughput_call, batch_size=throughput_batch_size, warmup=0, policy=policy, **kwargs)
        result = build_result(
            variant, self.hardware, latency, rate, budgets=self.budgets, server=server, model=model, notes=notes
        )
        if benchmark is not None:
            record_benchmark(benchmark, latency, result=result)
        return self.add(result)

    def check(self, result: VariantResult, *, allow_unstable: bool = False) -> VariantResult:
        """Assert ``result`` is within its budget (report-only results pass; see ``assert_within_budget``)."""
        __tracebackhide__ = True
        assert_within_budget(result, allow_unstable=allow_unstable)
        return result

    def summary_lines(self) -> list[str]:
        """The terminal table (empty when nothing was measured or skipped)."""
        return table_lines(self.results) if self.results else []

    def write_report(self, path_prefix: str | Path) -> list[Path]:
        return write_report(self.results, path_prefix)


BENCH_KEY = pytest.StashKey[TritonBench]()
