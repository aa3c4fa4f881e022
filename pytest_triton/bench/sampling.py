"""Latency sampling with warm-up and perf_analyzer-style stability windows.

``call`` is one inference (one request, any batch size), called sequentially (concurrency 1), or
:class:`Clients`, several calls sent at once from their own threads (concurrency N). Each request is timed with
``clock`` (``time.perf_counter_ns`` by default; tests pass a fake one).

1. Warm-up: :func:`warm_up_shapes` calls one request per *shape that will be measured* (every batch size),
   ``count`` times each, before any measurement: TensorRT builds an engine for each new shape (a first call
   can take longer than SageMaker's 60 s invocation limit) and that must never land in a sample.
   :func:`measure` also runs ``warmup`` plain calls of its own ``call`` first. Warm-up durations are kept
   (:class:`WarmupRecord`) so reports can show what the first calls cost, but never enter the statistics.
2. Windows: requests are measured in windows of ``window_requests`` requests (``mode="count"``, perf_analyzer's
   ``--measurement-mode count_windows``) or of ``window_ms`` wall time (``mode="time"``). After each window, the
   last ``stable_windows`` (3) windows are stable when, as in perf_analyzer's ``IsInferWindowStable`` and
   ``IsLatencyWindowStable``, ``max / min <= 1 + threshold`` (10%) holds for their p50 and for their throughput.
3. Bounds: at most ``max_windows`` windows and ``max_seconds`` of measuring; when a bound is hit first, the
   result is flagged unstable (with the spreads) instead of looping forever. A single request that never
   returns is the client's timeout to catch, not this loop's.

The result holds every sample of the last ``stable_windows`` windows (stable or not).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from collections.abc import Hashable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal
from typing import final

from pytest_triton.bench.stats import LatencyStats
from pytest_triton.bench.stats import nearest_rank
from pytest_triton.bench.stats import summarize
from pytest_triton.bench.stats import throughput
from pytest_triton.errors import ConfigError

__all__ = [
    "Clients",
    "Clock",
    "Measurement",
    "SentRequest",
    "WarmupRecord",
    "Window",
    "WindowPolicy",
    "is_stable",
    "measure",
    "rows_of",
    "run_window",
    "spread",
    "warm_up",
    "warm_up_shapes",
]

Clock = Callable[[], int]
"""A monotonic clock in nanoseconds (``time.perf_counter_ns``)."""


@final
@dataclass(frozen=True)
class WindowPolicy:
    """How to measure: window size, stability threshold and the bounds that end an unstable run."""

    mode: Literal["count", "time"] = "count"
    window_requests: int = 50
    window_ms: float = 1000.0
    threshold: float = 0.10
    stable_windows: int = 3
    max_windows: int = 10
    max_seconds: float | None = 120.0

    def __post_init__(self) -> None:
        problems = []
        if self.mode not in ("count", "time"):
            problems.append(f"mode={self.mode!r}; expected 'count' or 'time'")
        if self.window_requests < 1:
            problems.append(f"window_requests={self.window_requests!r}; expected >= 1")
        if not self.window_ms > 0:
            problems.append(f"window_ms={self.window_ms!r}; expected > 0")
        if not self.threshold >= 0:
            problems.append(f"threshold={self.threshold!r}; expected >= 0 (0.10 is 10%)")
        if self.stable_windows < 1:
            problems.append(f"stable_windows={self.stable_windows!r}; expected >= 1")
        if self.max_windows < self.stable_windows:
            problems.append(f"max_windows={self.max_windows!r} < stable_windows={self.stable_windows!r}")
        if self.max_seconds is not None and not self.max_seconds > 0:
            problems.append(f"max_seconds={self.max_seconds!r}; expected > 0 or None")
        if problems:
            raise ConfigError("invalid WindowPolicy: " + "; ".join(problems))


@final
@dataclass(frozen=True)
class Window:
    """One measurement window: each request's latency and the window's wall time."""

    latencies_ns: tuple[int, ...]
    elapsed_ns: int
    batch_size: int = 1

    @property
    def p50_ns(self) -> int:
        return nearest_rank(sorted(self.latencies_ns), 50)

    def percentile_ns(self, percentile: float) -> int:
        return nearest_rank(sorted(self.latencies_ns), percentile)

    @property
    def samples_per_s(self) -> float:
        return throughput(self.batch_size, len(self.latencies_ns), self.elapsed_ns)


@final
@dataclass(frozen=True)
class WarmupRecord:
    """Durations of the warm-up calls per shape key (e.g. batch size), in nanoseconds; never in statistics."""

    durations_ns: Mapping[Hashable, tuple[int, ...]] = field(default_factory=dict)

    def merged(self, other: WarmupRecord) -> WarmupRecord:
        combined: dict[Hashable, tuple[int, ...]] = dict(self.durations_ns)
        for key, values in other.durations_ns.items():
            combined[key] = combined.get(key, ()) + values
        return WarmupRecord(combined)

    def as_dict(self) -> dict[str, list[float]]:
        """Warm-up durations in seconds, keyed by ``str(shape key)``."""
        return {str(k): [v / 1e9 for v in values] for k, values in self.durations_ns.items()}


@final
@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found: the kept samples, every window, and whether they were stable."""

    samples_ns: tuple[int, ...]
    elapsed_ns: int
    batch_size: int
    stable: bool
    reason: str
    windows: tuple[Window, ...]
    warmup: WarmupRecord

    def stats(self) -> LatencyStats:
        """Percentiles and throughput of the kept samples (the last windows)."""
        return summarize(self.samples_ns, batch_size=self.batch_size, elapsed_ns=self.elapsed_ns)


def warm_up(call: Callable[[], object], count: int, *, clock: Clock = time.perf_counter_ns) -> tuple[int, ...]:
    """Call ``call`` ``count`` times and return how long each call took (ns)."""
    durations = []
    for _ in range(count):
        start = clock()
        call()
        durations.append(clock() - start)
    return tuple(durations)


def warm_up_shapes(
    calls: Mapping[Any, Callable[[], object]], *, count: int = 3, clock: Clock = time.perf_counter_ns
) -> WarmupRecord:
    """Warm up every shape that will be measured: ``calls`` maps a shape key (batch size) to one request.

    Run this for *all* batch sizes before measuring any of them: an engine built for batch 8 while batch 1 is
    being measured would land in batch 1's samples on a server that shares one engine cache.
    """
    if count < 1:
        raise ConfigError(f"warm-up count={count!r}; expected >= 1 (the first call per shape builds engines)")
    return WarmupRecord({key: warm_up(call, count, clock=clock) for key, call in calls.items()})


def spread(values: Sequence[float]) -> float:
    """``max / min - 1``; infinite when a value is 0 (perf_analyzer treats 0 infer/sec as unstable)."""
    low = min(values)
    return float("inf") if low <= 0 else max(values) / low - 1


def is_stable(windows: Sequence[Window], threshold: float) -> tuple[bool, str]:
    """perf_analyzer's test: ``max / min <= 1 + threshold`` for the windows' p50 and throughput; and why."""
    p50 = spread([w.p50_ns for w in windows])
    rate = spread([w.samples_per_s for w in windows])
    text = f"last {len(windows)} windows: p50 spread {p50:.1%}, throughput spread {rate:.1%} (limit {threshold:.0%})"
    return p50 <= threshold and rate <= threshold, text


@final
@dataclass(frozen=True)
class SentRequest:
    """One prepared request and the rows (samples) it carries, read from the tensors it sends: a model that
    does not batch takes one sample per request whatever batch size was asked for, and samples/s counts these
    rows, never a setting."""

    send: Callable[[], object]
    rows: int

    def __call__(self) -> object:
        return self.send()


def rows_of(call: Callable[[], object], asked: int) -> int:
    """The rows each request of ``call`` sends: a :class:`SentRequest`'s own count (also inside
    :class:`Clients`), else ``asked`` (a caller's own call: its batch size is what the caller says it sends)."""
    if isinstance(call, Clients):
        call = call.calls[0]
    return call.rows if isinstance(call, SentRequest) else asked


@final
@dataclass(frozen=True)
class Clients:
    """Several clients sending back to back at once, perf_analyzer's ``--concurrency-range N``: one call each
    (each its own connection: an HTTP/1.1 connection carries one request at a time). Every request is a sample
    and a window's throughput counts every client's requests. Called plainly (warm-up), the first client sends.
    """

    calls: tuple[Callable[[], object], ...]

    def __post_init__(self) -> None:
        if not self.calls:
            raise ConfigError("Clients() needs at least one call")

    def __call__(self) -> object:
        return self.calls[0]()


def run_window(call: Callable[[], object], policy: WindowPolicy, batch_size: int, clock: Clock) -> Window:
    """Measure one window of ``call`` by ``policy`` (``window_requests`` requests or ``window_ms`` of wall time);
    ``call`` may be :class:`Clients`, which send at once."""
    if isinstance(call, Clients) and len(call.calls) > 1:
        return _run_concurrent_window(call, policy, batch_size, clock)
    latencies: list[int] = []
    append = latencies.append
    start = clock()
    if policy.mode == "count":
        for _ in range(policy.window_requests):
            t0 = clock()
            call()
            append(clock() - t0)
    else:
        deadline = start + int(policy.window_ms * 1e6)
        t1 = start
        while t1 < deadline or not latencies:
            t0 = clock()
            call()
            t1 = clock()
            append(t1 - t0)
    return Window(tuple(latencies), clock() - start, batch_size)


def _run_concurrent_window(clients: Clients, policy: WindowPolicy, batch_size: int, clock: Clock) -> Window:
    """One window with every client sending back to back in its own thread (the calls wait on I/O, so the GIL
    is not what limits them); a count window ends when the clients together sent ``window_requests``."""
    per_client: list[list[int]] = [[] for _ in clients.calls]
    failures: list[BaseException] = []
    started = threading.Barrier(len(clients.calls) + 1)
    sent = itertools.count()
    start_box: list[int] = []

    def client(index: int) -> None:
        own, call = per_client[index], clients.calls[index]
        started.wait()
        deadline = start_box[0] + int(policy.window_ms * 1e6)
        try:
            while not failures:
                if policy.mode == "count" and next(sent) >= policy.window_requests:
                    return
                t0 = clock()
                call()
                t1 = clock()
                own.append(t1 - t0)
                if policy.mode == "time" and t1 >= deadline:
                    return
        except BaseException as exc:  # re-raised in the measuring thread
            failures.append(exc)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(len(clients.calls))]
    for thread in threads:
        thread.start()
    start_box.append(clock())
    started.wait()
    for thread in threads:
        thread.join()
    elapsed = clock() - start_box[0]
    if failures:
        raise failures[0]
    return Window(tuple(v for own in per_client for v in own), elapsed, batch_size)


def measure(
    call: Callable[[], object],
    *,
    batch_size: int = 1,
    warmup: int = 10,
    policy: WindowPolicy | None = None,
    clock: Clock = time.perf_counter_ns,
    warmed: WarmupRecord | None = None,
    on_boundary: Callable[[], object] | None = None,
) -> Measurement:
    """Warm up with ``warmup`` calls, then measure windows until stable or a bound is hit.

    ``warmed`` is the record of an earlier :func:`warm_up_shapes`, kept in the result for the report.
    ``on_boundary`` is called before the first window and after each one, outside the timed windows (e.g. to
    snapshot server statistics, so the kept windows can be attributed exactly).
    """
    policy = policy or WindowPolicy()
    if batch_size < 1:
        raise ConfigError(f"batch_size={batch_size!r}; expected >= 1")
    if warmup < 0:
        raise ConfigError(f"warmup={warmup!r}; expected >= 0")
    record = warmed or WarmupRecord()
    if warmup:
        record = record.merged(WarmupRecord({batch_size: warm_up(call, warmup, clock=clock)}))
    k = policy.stable_windows
    windows: list[Window] = []
    begin = clock()
    max_ns = None if policy.max_seconds is None else int(policy.max_seconds * 1e9)
    if on_boundary is not None:
        on_boundary()
    while True:
        windows.append(run_window(call, policy, batch_size, clock))
        if on_boundary is not None:
            on_boundary()
        stable = False
        text = f"{len(windows)} window(s) so far; need {k}"
        if len(windows) >= k:
            stable, text = is_stable(windows[-k:], policy.threshold)
        if stable:
            reason = f"stable after {len(windows)} windows; {text}"
            break
        if len(windows) >= policy.max_windows:
            reason = f"unstable: max_windows={policy.max_windows} reached; {text}"
            break
        if max_ns is not None and clock() - begin >= max_ns:
            reason = f"unstable: max_seconds={policy.max_seconds:g} reached after {len(windows)} windows; {text}"
            break
    kept = windows[-k:]
    return Measurement(
        samples_ns=tuple(v for w in kept for v in w.latencies_ns),
        elapsed_ns=sum(w.elapsed_ns for w in kept),
        batch_size=batch_size,
        stable=stable,
        reason=reason,
        windows=tuple(windows),
        warmup=record,
    )
