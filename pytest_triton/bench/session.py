"""The session's latency bench, :class:`TritonBench`: measures variants, alone or side by side, into its record.

A row is warmed up, measured in windows until stable (:mod:`pytest_triton.bench.sampling`), optionally beside its
adapter's calibration model (:mod:`pytest_triton.bench.calibrated`) or other variants in alternating windows
(:mod:`pytest_triton.bench.interleave`), split by the server's statistics over exactly the kept windows, judged
against the budgets and kept in the :class:`~pytest_triton.bench.session_record.SessionRecord` it extends (the
results, the verdicts and the report). The plugin keeps one per session in ``config.stash[BENCH_KEY]`` and hands
it to tests through the ``triton_bench`` fixture.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import final

from pytest_triton.bench.budgets import BudgetFile
from pytest_triton.bench.budgets import load_budgets
from pytest_triton.bench.calibrated import CALIBRATION
from pytest_triton.bench.calibrated import measure_calibrated
from pytest_triton.bench.decision import LOOKS
from pytest_triton.bench.decision import VERDICT_SECONDS
from pytest_triton.bench.engine import UNNAMED
from pytest_triton.bench.engine import Calibration
from pytest_triton.bench.engine import Engine
from pytest_triton.bench.engine import engine_at
from pytest_triton.bench.interleave import Interleaved
from pytest_triton.bench.interleave import Settle
from pytest_triton.bench.interleave import measure_interleaved
from pytest_triton.bench.provenance import load_average
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.bench.relative import evaluate_relative
from pytest_triton.bench.relative import until_decided
from pytest_triton.bench.results import UNSTABLE_CHOICES
from pytest_triton.bench.results import SideBySide
from pytest_triton.bench.results import UnstablePolicy
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.results import build_result
from pytest_triton.bench.sampling import Clock
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WarmupRecord
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.sampling import warm_up_shapes
from pytest_triton.bench.server_stats import ServerSplit
from pytest_triton.bench.server_stats import StatsSnapshot
from pytest_triton.bench.server_stats import composing_models
from pytest_triton.bench.server_stats import fetch_server_version
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import stats_delta
from pytest_triton.bench.session_record import SessionRecord
from pytest_triton.errors import ConfigError
from pytest_triton.errors import ServerError

__all__ = ["ServedBy", "Throughput", "TritonBench"]


@dataclass(frozen=True)
class Throughput:
    """The throughput half of a row: ``call`` sends one request of ``batch_size`` rows; the row's samples/s."""

    call: Callable[[], object]
    batch_size: int = 8


@dataclass(frozen=True)
class ServedBy:
    """Which model on which server serves a row: the server's statistics API (at ``http_url``) splits the server
    time of exactly the kept windows per model (``model`` and, for an ensemble, its composing models; every model
    that served requests when ``model`` is None), and the session's server there says the row's engine path."""

    http_url: str
    model: str | None = None


@final
class TritonBench(SessionRecord):
    """Measures model variants against the latency budgets of this machine and collects the results.

    ``hardware`` is the budget key (default :func:`pytest_triton.hardware.hardware_key`); ``budgets`` the loaded
    budget file (None: every variant is report-only); ``policy`` the windows of every measurement (a call may give
    its own); ``unstable`` what an unstable measurement within budget does (``warn``: reported, passes;
    ``fail``); ``inconclusive`` what an INCONCLUSIVE relative budget does (``warn`` or ``fail``), after at most
    ``verdict_seconds`` of measurement.
    """

    def __init__(
        self,
        *,
        hardware: str | None = None,
        budgets: BudgetFile | None = None,
        policy: WindowPolicy | None = None,
        clock: Clock | None = None,
        unstable: UnstablePolicy = "warn",
        inconclusive: UnstablePolicy = "warn",
        verdict_seconds: float = VERDICT_SECONDS,
    ) -> None:
        super().__init__(hardware=hardware, budgets=budgets, unstable=unstable, inconclusive=inconclusive)
        self.policy = policy or WindowPolicy()
        self.clock = clock
        self.verdict_seconds = verdict_seconds
        # the servers this session started (the plugin shares its factory's list): a row measured at one of their
        # URLs gets its engine path from the server
        self.servers: Sequence[Any] = ()

    @classmethod
    def from_options(
        cls,
        budgets_path: str | Path | None,
        hardware: str | None = None,
        *,
        required: bool = True,
        unstable: str = "warn",
        inconclusive: str = "warn",
        verdict_seconds: float = VERDICT_SECONDS,
    ) -> TritonBench:
        """Build from ``--triton-budgets``, ``--triton-hardware`` and ``--triton-unstable``.

        A budget file that does not exist is a ConfigError when ``required`` (the user named it), and means
        "no budgets, report only" otherwise (the default path, in a project that has none).
        """
        if unstable not in UNSTABLE_CHOICES:
            choices = " or ".join(UNSTABLE_CHOICES)
            raise ConfigError(f"triton_unstable={unstable!r}: expected {choices} (what an unstable measurement does)")
        if inconclusive not in UNSTABLE_CHOICES:
            choices = " or ".join(UNSTABLE_CHOICES)
            raise ConfigError(f"triton_inconclusive={inconclusive!r}: expected {choices} (what an open verdict does)")
        if not verdict_seconds > 0:
            raise ConfigError(f"triton_verdict_seconds={verdict_seconds!r}: expected > 0 (seconds of measurement)")
        budgets = None
        if budgets_path is not None and (required or Path(budgets_path).is_file()):
            budgets = load_budgets(budgets_path)
        return cls(
            hardware=hardware,
            budgets=budgets,
            unstable=unstable,
            inconclusive=inconclusive,
            verdict_seconds=verdict_seconds,
        )

    def measure(
        self,
        variant: str,
        call: Callable[[], object],
        *,
        batch_size: int = 1,
        throughput: Throughput | None = None,
        warmup: int = 3,
        warm_shapes: Mapping[Hashable, Callable[[], object]] | None = None,
        policy: WindowPolicy | None = None,
        served_by: ServedBy | None = None,
        engine: Engine | None = None,
        notes: Sequence[str] = (),
        benchmark: Any = None,
    ) -> VariantResult:
        """Warm up every shape, measure ``call`` (percentiles, ``batch_size`` rows a request) and ``throughput``'s
        call (samples/s), judge, record.

        Every shape (``batch_size``, the throughput's and ``warm_shapes``) is warmed ``warmup`` times before the
        first measurement. ``served_by`` names the model and server the requests reach: the server's statistics
        split the kept windows' server time, and the session's server there names the engine path.
        ``engine`` says which engine path serves the row (:mod:`pytest_triton.bench.engine`) where the server
        cannot; with a calibration call (the adapter path), the calibration model is measured in alternating
        windows with ``call`` and the row carries it. A budget written on another path than the row's is not
        judged. ``notes`` join the row's notes; with pytest-benchmark's ``benchmark`` fixture, the latency
        samples are recorded there too.
        """
        from pytest_triton.bench.benchmark import record_benchmark

        kwargs: dict[str, Any] = {"clock": self.clock} if self.clock else {}
        http_url = served_by.http_url if served_by is not None else None
        model = served_by.model if served_by is not None else None
        if http_url is not None:
            self._note_server(http_url)
            if engine is None and model is not None:
                engine = engine_at(self.servers, http_url, model, batch_size)
        shapes: dict[Hashable, Callable[[], object]] = {batch_size: call}
        if throughput is not None:
            shapes[throughput.batch_size] = throughput.call
        shapes.update(warm_shapes or {})
        calibrate = engine.calibration_call if engine is not None else None
        if calibrate is not None:
            shapes[(CALIBRATION, batch_size)] = calibrate
        warmed = warm_up_shapes(shapes, count=warmup, **kwargs) if warmup else None
        if warmed is not None and calibrate is not None:  # the row's record keeps the row's own shapes
            warmed = WarmupRecord({k: v for k, v in warmed.durations_ns.items() if k != (CALIBRATION, batch_size)})
        policy = policy or self.policy
        snapshots: list[StatsSnapshot] = []
        calibration_snapshots: list[StatsSnapshot] = []
        models: list[str] | None = None
        if http_url is not None:
            url = http_url
            if model is not None:
                models = [model, *composing_models(url, model)]
            kwargs["on_boundary"] = lambda: snapshots.append(fetch_statistics(url))
        calibration: Calibration | None = None
        if calibrate is None or engine is None:
            latency = measure(call, batch_size=batch_size, warmup=0, policy=policy, warmed=warmed, **kwargs)
        else:
            latency, calibration = measure_calibrated(
                variant, call, engine, batch_size, policy, warmed, http_url, kwargs, calibration_snapshots
            )
        kwargs.pop("on_boundary", None)
        server: ServerSplit | None = None
        if snapshots:
            # statistics of exactly the kept windows: the snapshot before the first of them, the one after the last
            kept = min(policy.stable_windows, len(latency.windows))
            server = stats_delta(snapshots[-kept - 1], snapshots[-1], models=models)
        rate = None
        if throughput is not None:
            rate = measure(throughput.call, batch_size=throughput.batch_size, warmup=0, policy=policy, **kwargs)
        result = build_result(
            variant,
            self.hardware,
            latency,
            rate,
            budgets=self.budgets,
            server=server,
            model=model,
            notes=notes,
            load_average=load_average(),
            path=engine.path if engine is not None else "unknown",
            engine_reason=engine.reason if engine is not None else UNNAMED,
            calibration=calibration,
            calibration_missing=engine.calibration_missing if engine is not None else "",
        )
        if benchmark is not None:
            record_benchmark(benchmark, latency, result=result)
        return self.add(result)

    def measure_interleaved(
        self,
        calls: Mapping[str, Callable[[], object]],
        *,
        batch_size: int | None = None,
        throughput_calls: Mapping[str, Callable[[], object]] | None = None,
        throughput_batch_size: int | None = None,
        warmup: int = 3,
        policy: WindowPolicy | None = None,
        served_by: Mapping[str, ServedBy] | None = None,
        engines: Mapping[str, Engine] | None = None,
        notes: Mapping[str, Sequence[str]] | None = None,
        benchmark: Any = None,
        benchmark_variant: str | None = None,
    ) -> SideBySide:
        """Measure several variants side by side (alternating windows), judge absolute and relative budgets, record.

        ``calls`` maps a variant name to one request at ``batch_size`` (default: the hardware's budget batch size),
        ``throughput_calls`` to one request at ``throughput_batch_size`` (default: the budgets', usually 8). Every
        shape of every variant is warmed ``warmup`` times before the first window. ``served_by`` maps a variant to
        the model and server it reaches, as in :meth:`measure` (a variant left out: no split, e.g. a SageMaker
        endpoint, which has no statistics API). The run settles on the variants' ratios; where absolute budgets are
        asserted, each variant's own windows must settle too. ``engines`` maps a variant to its engine path
        (:func:`pytest_triton.bench.engine.engine_of`) where its server cannot say it: each row says its path and
        its budget is judged only on its own path (the calibration rows come from :meth:`measure`). ``notes`` maps
        a variant to its row's notes; pytest-benchmark's ``benchmark`` gets the samples of ``benchmark_variant``
        (default: the first).
        """
        from pytest_triton.bench.benchmark import record_benchmark

        hw = self.hardware_policy
        batch = hw.batch_size if batch_size is None else batch_size
        rate_batch = hw.throughput_batch_size if throughput_batch_size is None else throughput_batch_size
        clock: dict[str, Any] = {"clock": self.clock} if self.clock else {}
        with_http = dict(served_by or {})
        for served in with_http.values():
            self._note_server(served.http_url)
        shapes: dict[Hashable, Callable[[], object]] = {}
        for name, call in calls.items():
            shapes[(name, batch)] = call
        for name, call in (throughput_calls or {}).items():
            shapes[(name, rate_batch)] = call
        warmed: dict[str, WarmupRecord] = {}
        if warmup:
            record = warm_up_shapes(shapes, count=warmup, **clock)
            for key, durations in record.durations_ns.items():
                assert isinstance(key, tuple)  # the (variant, batch size) keys built above
                own = WarmupRecord({key[1]: durations})
                warmed[key[0]] = warmed[key[0]].merged(own) if key[0] in warmed else own
        policy = policy or self.policy
        settle: Settle = "all" if self.budgets is not None and hw.enforce_absolute else "ratios"
        snapshots: dict[str, list[StatsSnapshot]] = {name: [] for name in with_http}
        models = {
            name: [served.model, *composing_models(served.http_url, served.model)] if served.model else None
            for name, served in with_http.items()
        }

        def snapshot(name: str) -> None:
            if name in with_http:
                snapshots[name].append(fetch_statistics(with_http[name].http_url))

        judged = self.budgets.relative_budgets(self.hardware, set(calls)) if self.budgets is not None else ()
        latency = measure_interleaved(
            calls,
            batch_size=batch,
            policy=self._looked(policy, judged),
            settle=settle,
            warmed=warmed,
            on_boundary=snapshot,
            **self._looks([b for b in judged if not b.is_rate]),
            **clock,
        )
        splits: dict[str, ServerSplit] = {}
        kept = min(policy.stable_windows, latency.rounds)
        for name, taken in snapshots.items():
            if len(taken) > kept:
                splits[name] = stats_delta(taken[-kept - 1], taken[-1], models=models[name])
        rate = None
        if throughput_calls:
            rate = measure_interleaved(
                throughput_calls,
                batch_size=rate_batch,
                policy=self._looked(policy, judged),
                settle=settle,
                **self._looks([b for b in judged if b.is_rate]),
                **clock,
            )
        names = list(calls)
        engines = dict(engines or {})
        for name, served in with_http.items():  # a side-by-side row of the fixture API says its path too
            if name not in engines and served.model is not None:
                engines[name] = engine_at(self.servers, served.http_url, served.model, batch, calibrate=False)
        results = []
        for name in names:
            rate_run: Measurement | None = rate.measurements.get(name) if rate else None
            results.append(
                build_result(
                    name,
                    self.hardware,
                    latency.measurements[name],
                    rate_run,
                    budgets=self.budgets,
                    server=splits.get(name),
                    model=with_http[name].model if name in with_http else None,
                    notes=(notes or {}).get(name, ()),
                    load_average=load_average(),
                    interleaved_with=[n for n in names if n != name],
                    path=engines[name].path if name in engines else "unknown",
                    engine_reason=engines[name].reason if name in engines else UNNAMED,
                    calibration_missing=engines[name].calibration_missing if name in engines else "",
                )
            )
        relative = self._relative(latency, rate, results)
        settled = "; ".join(
            f"b={run.measurements[names[0]].batch_size}: {run.reason}" for run in (latency, rate) if run
        )
        if benchmark is not None:
            chosen = benchmark_variant or names[0]
            record_benchmark(benchmark, latency.measurements[chosen], result=results[names.index(chosen)])
        for r in results:
            self.add(r)
        self.relative.extend(relative)
        return SideBySide(tuple(results), tuple(relative), settled)

    def _looked(self, policy: WindowPolicy, judged: Sequence[RelativeBudget]) -> WindowPolicy:
        """Where relative budgets are judged, the measurement is bounded by the verdict's time budget."""
        return dataclasses.replace(policy, max_seconds=self.verdict_seconds) if judged else policy

    @staticmethod
    def _looks(judged: Sequence[RelativeBudget]) -> dict[str, Any]:
        """measure_interleaved's looks and stop rule for ``judged`` (none: it stops when it settles)."""
        return {"looks": LOOKS, "decided": until_decided(judged, LOOKS)} if judged else {}

    def _relative(
        self, latency: Interleaved, rate: Interleaved | None, results: Sequence[VariantResult]
    ) -> list[RelativeResult]:
        if self.budgets is None:
            return []
        by_name = {r.variant: r for r in results}
        out = []
        for budget in self.budgets.relative_budgets(self.hardware, by_name):
            run = rate if budget.is_rate else latency
            if run is None:
                out.append(evaluate_relative(budget, None, None))
                continue
            mine, theirs = (by_name[budget.variant], by_name[budget.baseline])
            stats = (mine.throughput, theirs.throughput) if budget.is_rate else (mine.latency, theirs.latency)
            out.append(
                evaluate_relative(
                    budget,
                    stats[0],
                    stats[1],
                    stability=run.pair_stability(budget.variant, budget.baseline)[2],
                    paired=run.paired(budget.variant, budget.baseline, budget.metric),
                )
            )
        return out

    def _note_server(self, http_url: str) -> None:
        """Keep the first server's version for the provenance (best effort: the measurement does not need it)."""
        if self.triton_version is None:
            try:
                self.triton_version = fetch_server_version(http_url)
            except ServerError as exc:
                self.triton_version = f"unknown ({exc})"
