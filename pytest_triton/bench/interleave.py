"""Side-by-side measurement: several variants in alternating windows, so drift of the machine cancels in ratios.

:func:`measure_interleaved` runs one window of each variant in turn (A B C, A B C, ...: a *round*), with the
window policy of :func:`pytest_triton.bench.sampling.measure`. A neighbour that takes the cores for a few seconds
slows every variant of the rounds it overlaps, so the ratio of two variants' p50 in one round moves far less
than either p50 does. The run settles when, over the last ``stable_windows`` rounds, every variant's per-round
ratio to the first variant (p50 and throughput) agrees within ``threshold`` (perf_analyzer's 10% rule applied to
the ratio); with ``settle="all"`` each variant's own windows must settle too (what absolute budgets need).

Each variant gets a :class:`~pytest_triton.bench.sampling.Measurement` of its own: the samples of its last
``stable_windows`` windows, the wall time of those windows only (the other variants' windows are not counted in
its throughput) and its own stability verdict.

With ``decided`` (a relative budget's or a PR verdict's rule, :mod:`pytest_triton.bench.decision`), the run does
not stop on settling: it is looked at only after the rounds listed in ``looks``, every round is paired, and it
stops at the first look whose answer is no longer open, at the last look, or when the next look would not fit
in ``policy.max_seconds`` (judged from the rounds so far): more rounds are measured only while the answer is open.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from typing import final

from pytest_triton.bench.sampling import Clock
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WarmupRecord
from pytest_triton.bench.sampling import Window
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import is_stable
from pytest_triton.bench.sampling import run_window
from pytest_triton.bench.sampling import spread
from pytest_triton.errors import ConfigError

__all__ = ["Interleaved", "Settle", "measure_interleaved", "ratio_spreads"]

Settle = Literal["ratios", "all"]


def ratio_spreads(variant: Sequence[Window], baseline: Sequence[Window]) -> tuple[float, float]:
    """The spread (``max / min - 1``) of the per-round p50 ratio and throughput ratio of two aligned windows."""
    if len(variant) != len(baseline) or not variant:
        raise ValueError(f"need aligned rounds: {len(variant)} windows against {len(baseline)}")
    p50 = [v.p50_ns / b.p50_ns if b.p50_ns else 0.0 for v, b in zip(variant, baseline)]
    rate = [v.samples_per_s / b.samples_per_s if b.samples_per_s else 0.0 for v, b in zip(variant, baseline)]
    return spread(p50), spread(rate)


@final
@dataclass(frozen=True)
class Interleaved:
    """What :func:`measure_interleaved` found: one measurement per variant, and whether the ratios settled."""

    measurements: Mapping[str, Measurement]
    rounds: int
    stable: bool
    reason: str
    threshold: float
    stable_windows: int
    paired_rounds: int = 0  # the last rounds paired() compares; 0: the last stable_windows

    @property
    def baseline(self) -> str:
        return next(iter(self.measurements))

    def paired(self, variant: str, baseline: str, metric: str) -> tuple[list[float], list[float]]:
        """Per kept round: ``variant``'s ``metric`` over ``baseline``'s, and minus it (ms or samples/s).

        ``metric`` is ``p50_ms``..``p99_ms`` (of each round's window) or ``samples_per_s``. Comparing within a
        round pairs windows measured under the same load; pooling all samples first would not (a mixture of slow
        and fast rounds has a median that drift moves).
        """
        k = min(self.paired_rounds or self.stable_windows, self.rounds)
        ratios, differences = [], []
        for mine, theirs in zip(self.measurements[variant].windows[-k:], self.measurements[baseline].windows[-k:]):
            if metric == "samples_per_s":
                a, b = mine.samples_per_s, theirs.samples_per_s
            else:
                p = float(metric[1:-3])
                a, b = mine.percentile_ns(p) / 1e6, theirs.percentile_ns(p) / 1e6
            ratios.append(a / b if b else math.inf)
            differences.append(a - b)
        return ratios, differences

    def pair_stability(self, variant: str, baseline: str) -> tuple[bool, bool, str]:
        """Whether ``variant``/``baseline`` settled over the kept rounds: (p50 ratio, throughput ratio, why)."""
        k = min(self.stable_windows, self.rounds)
        mine = self.measurements[variant].windows[-k:]
        theirs = self.measurements[baseline].windows[-k:]
        p50, rate = ratio_spreads(mine, theirs)
        text = (
            f"{variant}/{baseline} over the last {k} rounds: p50 ratio spread {p50:.1%}, "
            f"throughput ratio spread {rate:.1%} (limit {self.threshold:.0%})"
        )
        return p50 <= self.threshold, rate <= self.threshold, text


def measure_interleaved(
    calls: Mapping[str, Callable[[], object]],
    *,
    batch_size: int = 1,
    policy: WindowPolicy | None = None,
    settle: Settle = "ratios",
    clock: Clock = time.perf_counter_ns,
    warmed: Mapping[str, WarmupRecord] | None = None,
    on_boundary: Callable[[str], object] | None = None,
    looks: Sequence[int] = (),
    decided: Callable[[Interleaved], bool] | None = None,
) -> Interleaved:
    """Measure every variant of ``calls`` (name → one request) in alternating windows until settled or bounded.

    Warm up every shape first (:func:`~pytest_triton.bench.sampling.warm_up_shapes`): nothing here is warm-up;
    ``warmed`` (variant → its record) is kept in each variant's measurement for the report.
    ``on_boundary(name)`` is called before a variant's first window and after each of its windows, outside the
    timed windows (to snapshot server statistics; a variant's deltas then span the other variants' windows too,
    so variants measured together should not share a server's models).
    ``decided`` (with ``looks``, ascending round counts) says whether the answer is settled at a look; it replaces
    the settling rule and ``policy.max_windows`` (see the module's docstring).
    """
    if not calls:
        raise ConfigError("measure_interleaved() needs at least one variant in calls")
    policy = policy or WindowPolicy()
    if settle not in ("ratios", "all"):
        raise ConfigError(f"settle={settle!r}; expected 'ratios' or 'all'")
    names = list(calls)
    windows: dict[str, list[Window]] = {name: [] for name in names}
    k = policy.stable_windows
    max_ns = None if policy.max_seconds is None else int(policy.max_seconds * 1e9)
    begin = clock()
    if on_boundary is not None:
        for name in names:
            on_boundary(name)
    rounds = 0
    if decided is not None and not looks:
        raise ConfigError("measure_interleaved(decided=...) needs the rounds to look at: looks=(9, 18, ...)")
    while True:
        for name in names:
            windows[name].append(run_window(calls[name], policy, batch_size, clock))
            if on_boundary is not None:
                on_boundary(name)
        rounds += 1
        if decided is not None:
            if rounds not in looks:
                continue
            look = list(looks).index(rounds) + 1
            stable = decided(_gathered(windows, names, rounds, True, "", policy, batch_size, warmed, rounds))
            if stable:
                reason = f"decided at look {look} of {len(looks)} ({rounds} rounds)"
                break
            if look == len(looks):
                reason = f"still open at the last look ({rounds} rounds)"
                break
            spent = clock() - begin
            needed = spent / rounds * looks[look]
            if max_ns is not None and needed > max_ns:
                reason = (
                    f"still open after {rounds} rounds ({spent / 1e9:.1f} s); the next look at {looks[look]} rounds "
                    f"would take about {needed / 1e9:.1f} s, over max_seconds={policy.max_seconds:g}"
                )
                break
            continue
        stable, text = _settled(windows, names, k, policy.threshold, settle)
        if stable:
            reason = f"settled after {rounds} rounds; {text}"
            break
        if rounds >= policy.max_windows:
            reason = f"unsettled: max_windows={policy.max_windows} rounds reached; {text}"
            break
        if max_ns is not None and clock() - begin >= max_ns:
            reason = f"unsettled: max_seconds={policy.max_seconds:g} reached after {rounds} rounds; {text}"
            break
    paired_rounds = rounds if decided is not None else 0
    return _gathered(windows, names, rounds, stable, reason, policy, batch_size, warmed, paired_rounds)


def _gathered(
    windows: Mapping[str, list[Window]],
    names: Sequence[str],
    rounds: int,
    stable: bool,
    reason: str,
    policy: WindowPolicy,
    batch_size: int,
    warmed: Mapping[str, WarmupRecord] | None,
    paired_rounds: int,
) -> Interleaved:
    """Each variant's measurement of its last ``stable_windows`` windows, and how the run ended."""
    k = policy.stable_windows
    measurements = {}
    for name in names:
        own = windows[name]
        kept = own[-k:]
        own_stable, own_text = is_stable(kept, policy.threshold) if len(own) >= k else (False, "too few windows")
        verdict = "stable" if own_stable else "unstable"
        measurements[name] = Measurement(
            samples_ns=tuple(v for w in kept for v in w.latencies_ns),
            elapsed_ns=sum(w.elapsed_ns for w in kept),
            batch_size=batch_size,
            stable=own_stable,
            reason=f"{verdict} (interleaved with {len(names) - 1} other variant(s), {rounds} rounds); {own_text}",
            windows=tuple(own),
            warmup=(warmed or {}).get(name, WarmupRecord()),
        )
    return Interleaved(measurements, rounds, stable, reason, policy.threshold, k, paired_rounds)


def _settled(
    windows: Mapping[str, list[Window]], names: Sequence[str], k: int, threshold: float, settle: Settle
) -> tuple[bool, str]:
    rounds = len(windows[names[0]])
    if rounds < k:
        return False, f"{rounds} round(s) so far; need {k}"
    texts = []
    ok = True
    base = windows[names[0]][-k:]
    for name in names[1:]:
        p50, rate = ratio_spreads(windows[name][-k:], base)
        ok = ok and p50 <= threshold and rate <= threshold
        texts.append(f"{name}/{names[0]} ratio spread p50 {p50:.1%}, throughput {rate:.1%}")
    if settle == "all" or len(names) == 1:
        for name in names:
            own, text = is_stable(windows[name][-k:], threshold)
            ok = ok and own
            texts.append(f"{name}: {text}")
    return ok, f"{'; '.join(texts)} (limit {threshold:.0%})"
