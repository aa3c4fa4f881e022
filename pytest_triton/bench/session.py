"""The session's latency bench: measures variants, keeps their results, prints and writes the report.

The plugin keeps one :class:`TritonBench` per session in ``config.stash[BENCH_KEY] (plugin.py)`` and hands it to tests
through a fixture; the terminal summary prints :meth:`TritonBench.summary_lines` and, with
``--triton-report PATH``, :meth:`TritonBench.write_report` writes ``PATH.json``, ``PATH.md`` and ``PATH.svg``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol
from typing import final

if TYPE_CHECKING:
    from pytest_triton.parity.tensors import LabelReport
    from pytest_triton.parity.tensors import ParityReport

from pytest_triton.bench.budgets import BudgetFile
from pytest_triton.bench.budgets import HardwarePolicy
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
from pytest_triton.bench.parity_record import ParityRecord
from pytest_triton.bench.provenance import collect_provenance
from pytest_triton.bench.provenance import load_average
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.bench.relative import evaluate_relative
from pytest_triton.bench.relative import until_decided
from pytest_triton.bench.report import ReportData
from pytest_triton.bench.report import table_lines
from pytest_triton.bench.report import write_report
from pytest_triton.bench.results import UNSTABLE_CHOICES
from pytest_triton.bench.results import SideBySide
from pytest_triton.bench.results import UnstablePolicy
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.results import assert_contracts
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
from pytest_triton.errors import ConfigError
from pytest_triton.errors import ServerError
from pytest_triton.errors import TritonInconclusiveWarning

__all__ = ["LateNote", "TritonBench"]


class LateNote(Protocol):
    """A note a result can only get after the session's tests (CloudWatch publishes a SageMaker endpoint's split
    minutes after the requests): ``placeholder`` stands in the result's notes until :meth:`TritonBench.settle`."""

    @property
    def placeholder(self) -> str: ...

    @classmethod
    def read_late(cls, notes: Sequence[Any], *, wait_s: float, progress: Callable[[str], None]) -> list[str]:
        """The note of each of ``notes`` (all of this kind, read together), waiting up to ``wait_s`` seconds;
        ``progress`` gets lines for the terminal."""
        ...


@final
class TritonBench:
    """Measures model variants against the latency budgets of this machine and collects the results.

    ``hardware`` is the budget key (default :func:`pytest_triton.hardware.hardware_key`); ``budgets`` the loaded
    budget file (None: every variant is report-only); ``unstable`` what an unstable measurement within budget
    does (``warn``: reported, passes; ``fail``); ``inconclusive`` what an INCONCLUSIVE relative budget does
    (``warn`` or ``fail``), after at most ``verdict_seconds`` of measurement.
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
        if hardware is None:
            from pytest_triton.hardware import hardware_key

            hardware = hardware_key()
        self.hardware = hardware
        self.hardware_source = ""  # where the key came from, when not this machine (a SageMaker endpoint's GPU)
        self.budgets = budgets
        self.policy = policy or WindowPolicy()
        self.clock = clock
        self.unstable: UnstablePolicy = unstable
        self.inconclusive: UnstablePolicy = inconclusive
        self.verdict_seconds = verdict_seconds
        self.results: list[VariantResult] = []
        self.relative: list[RelativeResult] = []
        self.parity: list[ParityRecord] = []
        self.explanations: list[str] = []  # the report's "Reading this report" (a merge of shards says so)
        self.triton_version: str | None = None
        self.device = ""  # the GPU(s) this session's servers see, e.g. "GPU 1": a note on every row it adds
        # contracts' own budget files, by path: the file and the variants held to it
        self.declared_budgets: dict[Path, tuple[BudgetFile, list[str]]] = {}
        self.late: list[tuple[int, LateNote]] = []  # (index in results, what to read at the session's end)
        # the servers this session started (the plugin shares its factory's list): a row measured at one of their
        # URLs gets its engine path from the server
        self.servers: Sequence[Any] = ()

    @property
    def hardware_policy(self) -> HardwarePolicy:
        """What this hardware's budgets assert (absolute and relative, or relative only) and its batch sizes."""
        return self.budgets.policy(self.hardware) if self.budgets else HardwarePolicy()

    def enforcement_text(self) -> str:
        """One line for the report and the terminal: what is asserted on this hardware, and why."""
        text = self._enforcement(self.budgets)
        if self.declared_budgets:
            own = "; ".join(
                f"{path.name} for {', '.join(variants)}: {self._enforcement(budgets)}"
                for path, (budgets, variants) in self.declared_budgets.items()
            )
            if self.budgets is None:
                text = f"contracts' own budget files: {own}; no session budget file: others are reported only"
            else:
                text = f"contracts' own budget files: {own}; the session's budget file for the others: {text}"
        if self.hardware_source:
            return f"hardware key {self.hardware!r} from {self.hardware_source}; " + text
        return text

    def use_declared_budgets(self, budgets: BudgetFile, variant: str) -> None:
        """Note that ``variant`` was held to a declaration's own budget file instead of the session's (the
        enforcement line says which budgets applied where)."""
        key = budgets.path or Path("(a contracts file's budgets)")
        _, variants = self.declared_budgets.setdefault(key, (budgets, []))
        if variant not in variants:
            variants.append(variant)

    def _enforcement(self, budgets: BudgetFile | None) -> str:
        policy = budgets.policy(self.hardware) if budgets else HardwarePolicy()
        if budgets is None:
            return "no budget file: everything is measured and reported only"
        if self.hardware not in budgets.budgets:
            return f"no budgets for {self.hardware!r}: everything is measured and reported only"
        if policy.enforce_absolute:
            return f"absolute and relative budgets of {self.hardware!r} are asserted"
        return (
            f"relative budgets of {self.hardware!r} are asserted; absolute numbers are reported, "
            f"not asserted ({policy.reason})"
        )

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

    def add(self, result: VariantResult, *, late: LateNote | None = None) -> VariantResult:
        """Record ``result``; ``late`` is read at the session's end, its note replacing its placeholder."""
        if self.device:
            result = dataclasses.replace(result, notes=(*result.notes, f"ran on {self.device}"))
        if late is not None:
            result = dataclasses.replace(result, notes=(*result.notes, late.placeholder))
            self.late.append((len(self.results), late))
        self.results.append(result)
        return result

    def settle(self, notes: Sequence[str]) -> list[VariantResult]:
        """Put the session-end ``notes`` (one per entry of ``late``, in order) in place of their placeholders;
        returns the results changed."""
        if len(notes) != len(self.late):
            raise ValueError(f"{len(notes)} notes for {len(self.late)} late reads")
        changed = []
        for (index, late), note in zip(self.late, notes):
            result = self.results[index]
            replaced = tuple(note if n == late.placeholder else n for n in result.notes)
            self.results[index] = dataclasses.replace(result, notes=replaced)
            changed.append(self.results[index])
        self.late = []
        return changed

    def read_late(self, *, wait_s: float, progress: Callable[[str], None]) -> dict[str, list[str]]:
        """Read every late note (each kind reads its own together, waiting up to ``wait_s`` seconds) and
        :meth:`settle` them; returns the notes by variant."""
        positions: dict[type[LateNote], list[int]] = {}
        for position, (_, late) in enumerate(self.late):
            positions.setdefault(type(late), []).append(position)
        notes = [late.placeholder for _, late in self.late]
        for kind, where in positions.items():
            read = kind.read_late([self.late[position][1] for position in where], wait_s=wait_s, progress=progress)
            for position, note in zip(where, read):
                notes[position] = note
        by_variant: dict[str, list[str]] = {}
        for result, note in zip(self.settle(notes), notes):
            by_variant.setdefault(result.variant, []).append(note)
        return by_variant

    def record_skipped(self, variant: str, reason: str) -> VariantResult:
        """Record ``variant`` as SKIPPED with ``reason``: shown in the report, never as passed.

        The test then skips itself (``pytest.skip(reason)``): this package does not import pytest.
        """
        budget = self.budgets.lookup(self.hardware, variant) if self.budgets else None
        return self.add(VariantResult.skipped(variant, self.hardware, reason, budget=budget))

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
        engine: Engine | None = None,
    ) -> VariantResult:
        """Warm up every shape, measure ``call`` (percentiles) and ``throughput_call`` (samples/s), judge, record.

        ``engine`` says which engine path serves the row (:mod:`pytest_triton.bench.engine`); with a calibration
        call (the adapter path), the calibration model is measured in alternating windows with ``call`` and the
        row carries it. A budget written on another path than the row's is not judged.

        Every shape (``batch_size``, ``throughput_batch_size`` and ``warm_shapes``) is warmed ``warmup`` times
        before the first measurement. With ``http_url``, the statistics API splits the server time of exactly
        the kept latency windows (one snapshot per window boundary) per model: ``model`` and, for an ensemble, its
        composing models (every model that served requests when ``model`` is None). With pytest-benchmark's
        ``benchmark`` fixture, the latency samples are recorded there too.
        """
        from pytest_triton.bench.benchmark import record_benchmark

        kwargs: dict[str, Any] = {"clock": self.clock} if self.clock else {}
        if http_url is not None:
            self._note_server(http_url)
            if engine is None and model is not None:
                engine = engine_at(self.servers, http_url, model, batch_size)
        shapes: dict[Hashable, Callable[[], object]] = {batch_size: call}
        if throughput_call is not None:
            shapes[throughput_batch_size] = throughput_call
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
        if throughput_call is not None:
            rate = measure(throughput_call, batch_size=throughput_batch_size, warmup=0, policy=policy, **kwargs)
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
        throughput_calls: Mapping[str, Callable[[], object]] | None = None,
        batch_size: int | None = None,
        throughput_batch_size: int | None = None,
        warmup: int = 3,
        policy: WindowPolicy | None = None,
        servers: Mapping[str, tuple[str | None, str | None]] | None = None,
        notes: Mapping[str, Sequence[str]] | None = None,
        benchmark: Any = None,
        benchmark_variant: str | None = None,
        engines: Mapping[str, Engine] | None = None,
    ) -> SideBySide:
        """Measure several variants side by side (alternating windows), judge absolute and relative budgets, record.

        ``calls`` maps a variant name to one request at ``batch_size`` (default: the hardware's budget batch size),
        ``throughput_calls`` to one request at ``throughput_batch_size`` (default: the budgets', usually 8). Every
        shape of every variant is warmed ``warmup`` times before the first window. ``servers`` maps a variant to
        ``(http_url, model)`` for the statistics split of its kept windows (a None URL: no split). The run settles
        on the variants' ratios; where absolute budgets are asserted, each variant's own windows must settle too.
        pytest-benchmark's ``benchmark`` gets the samples of ``benchmark_variant`` (default: the first).
        ``engines`` maps a variant to its engine path (:func:`pytest_triton.bench.engine.engine_of`): each row says
        its path and its budget is judged only on its own path (the calibration rows come from :meth:`measure`).
        """
        from pytest_triton.bench.benchmark import record_benchmark

        hw = self.hardware_policy
        batch = hw.batch_size if batch_size is None else batch_size
        rate_batch = hw.throughput_batch_size if throughput_batch_size is None else throughput_batch_size
        clock: dict[str, Any] = {"clock": self.clock} if self.clock else {}
        # a server without an HTTP endpoint (a SageMaker endpoint) has no statistics to split
        with_http = {name: (url, model) for name, (url, model) in (servers or {}).items() if url}
        for url, _ in with_http.values():
            self._note_server(url)
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
            name: [model, *composing_models(url, model)] if model else None for name, (url, model) in with_http.items()
        }

        def snapshot(name: str) -> None:
            if name in with_http:
                snapshots[name].append(fetch_statistics(with_http[name][0]))

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
        for name, (url, model) in with_http.items():  # a side-by-side row of the fixture API says its path too
            if name not in engines and model is not None:
                engines[name] = engine_at(self.servers, url, model, batch, calibrate=False)
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
                    model=with_http[name][1] if name in with_http else None,
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

    def record_parity(
        self,
        variant: str,
        parity: ParityReport | None,
        labels: LabelReport | None = None,
        *,
        transport: str = "",
    ) -> ParityRecord:
        """Keep a parity comparison (from :func:`pytest_triton.parity.compare` / ``compare_labels``) for the report."""
        if self.device:
            transport = f"{transport}, ran on {self.device}" if transport else f"ran on {self.device}"
        record = ParityRecord.of(variant, parity, labels, transport=transport)
        self.parity.append(record)
        return record

    def check(self, result: VariantResult | SideBySide, *, allow_unstable: bool | None = None) -> None:
        """Assert ``result`` (one variant, or a side-by-side run with its relative budgets) is within budget.

        Report-only results pass; an unstable one within budget fails only under ``triton_unstable = fail``
        (``allow_unstable`` overrides the session's choice); an INCONCLUSIVE relative budget warns
        (:class:`~pytest_triton.errors.TritonInconclusiveWarning`), or fails under ``triton_inconclusive = fail``.
        """
        __tracebackhide__ = True
        unstable: UnstablePolicy = self.unstable
        if allow_unstable is not None:
            unstable = "warn" if allow_unstable else "fail"
        if isinstance(result, SideBySide):
            assert_contracts(result.variants, result.relative, unstable=unstable, inconclusive=self.inconclusive)
            for open_answer in (r for r in result.relative if r.status == "inconclusive"):
                text = f"relative budget INCONCLUSIVE: {open_answer.budget.label}: {open_answer.reason}"
                warnings.warn(TritonInconclusiveWarning(text), stacklevel=2)
        else:
            assert_contracts([result], unstable=unstable)

    def _note_server(self, http_url: str) -> None:
        """Keep the first server's version for the provenance (best effort: the measurement does not need it)."""
        if self.triton_version is None:
            try:
                self.triton_version = fetch_server_version(http_url)
            except ServerError as exc:
                self.triton_version = f"unknown ({exc})"

    def report(self, root: Path | None = None) -> ReportData:
        """Everything measured and recorded so far, with the provenance gathered now."""
        provenance = collect_provenance(
            self.hardware,
            root=root,
            triton=self.triton_version,
            unstable=self.unstable,
            inconclusive=self.inconclusive,
            enforcement=self.enforcement_text(),
        )
        return ReportData(
            tuple(self.results), tuple(self.relative), tuple(self.parity), provenance, tuple(self.explanations)
        )

    def summary_lines(self) -> list[str]:
        """The terminal tables (empty when nothing was measured, skipped or compared)."""
        if not (self.results or self.parity):
            return []
        data = ReportData(tuple(self.results), tuple(self.relative), tuple(self.parity))
        choices = f"; triton_unstable={self.unstable}, triton_inconclusive={self.inconclusive}"
        return [*table_lines(data, self.unstable, self.inconclusive), self.enforcement_text() + choices]

    def write_report(self, path_prefix: str | Path, *, root: Path | None = None) -> list[Path]:
        return write_report(self.report(root), path_prefix)
