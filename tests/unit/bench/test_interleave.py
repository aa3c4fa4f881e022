"""Side-by-side measurement on a fake clock: alternating windows, ratio settling, drift that cancels."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_triton.bench.interleave import measure_interleaved
from pytest_triton.bench.interleave import ratio_spreads
from pytest_triton.bench.sampling import Window
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.errors import ConfigError

MS = 1_000_000


class Machine:
    """A fake clock and variants whose latency is ``base_ms * load``; ``load`` follows a script per window."""

    def __init__(self, loads: list[float]) -> None:
        self.now = 0
        self.loads = loads
        self.windows = 0
        self.order: list[str] = []

    def clock(self) -> int:
        return self.now

    def variant(self, name: str, base_ms: float) -> Callable[[], None]:
        def call() -> None:
            self.order.append(name)
            self.now += int(base_ms * self.load() * MS)

        return call

    def load(self) -> float:
        return self.loads[min(self.windows, len(self.loads) - 1)]


def _policy(**kw: object) -> WindowPolicy:
    return WindowPolicy(window_requests=4, **kw)  # type: ignore[arg-type]


def test_windows_alternate_a_b_a_b() -> None:
    m = Machine([1.0])
    calls = {"a": m.variant("a", 10), "b": m.variant("b", 12)}
    run = measure_interleaved(calls, policy=_policy(stable_windows=2), clock=m.clock)
    assert m.order[:16] == ["a"] * 4 + ["b"] * 4 + ["a"] * 4 + ["b"] * 4
    assert run.rounds == 2
    assert run.stable
    assert [len(run.measurements[n].windows) for n in calls] == [2, 2]


def test_drift_that_moves_both_variants_cancels_in_the_ratio() -> None:
    # the machine gets twice as slow every round: each variant's own p50 never settles, the ratio does
    m = Machine([1.0])
    a, b = m.variant("a", 10), m.variant("b", 15)
    rounds = {"n": 0}

    def a_then_count() -> None:
        a()

    def b_and_slow_down() -> None:
        b()
        if m.order.count("b") % 4 == 0:
            rounds["n"] += 1
            m.loads = [2.0 ** rounds["n"]]

    run = measure_interleaved({"a": a_then_count, "b": b_and_slow_down}, policy=_policy(), clock=m.clock)
    assert run.stable, run.reason
    assert run.rounds == 3
    assert "settled after 3 rounds" in run.reason
    assert not run.measurements["a"].stable  # its p50 doubled every window
    assert "unstable (interleaved with 1 other variant(s), 3 rounds)" in run.measurements["a"].reason
    p50_ok, rate_ok, text = run.pair_stability("b", "a")
    assert p50_ok
    assert rate_ok
    assert "b/a over the last 3 rounds: p50 ratio spread 0.0%" in text


def test_settle_all_also_waits_for_each_variants_own_windows() -> None:
    m = Machine([1.0])
    a, b = m.variant("a", 10), m.variant("b", 15)

    def b_and_slow_down() -> None:
        b()
        if m.order.count("b") % 4 == 0:
            m.loads = [m.loads[0] * 2]

    policy = _policy(max_windows=5)
    run = measure_interleaved({"a": a, "b": b_and_slow_down}, policy=policy, settle="all", clock=m.clock)
    assert not run.stable
    assert run.rounds == 5
    assert run.reason.startswith("unsettled: max_windows=5 rounds reached")


def test_a_ratio_that_keeps_moving_is_unsettled_with_its_spread() -> None:
    m = Machine([1.0])
    a, b = m.variant("a", 10), m.variant("b", 10)
    flip = {"slow": False}

    def b_alternating() -> None:
        m.now += int((5 if flip["slow"] else 0) * MS)
        b()
        if m.order.count("b") % 4 == 0:
            flip["slow"] = not flip["slow"]

    run = measure_interleaved({"a": a, "b": b_alternating}, policy=_policy(max_windows=4), clock=m.clock)
    assert not run.stable
    assert "b/a ratio spread p50 50.0%" in run.reason


def test_each_variant_gets_only_its_own_windows_time() -> None:
    m = Machine([1.0])
    run = measure_interleaved(
        {"a": m.variant("a", 10), "b": m.variant("b", 30)}, batch_size=8, policy=_policy(), clock=m.clock
    )
    a, b = (run.measurements[n].stats() for n in ("a", "b"))
    assert a.samples_per_s == pytest.approx(8 / 0.010)
    assert b.samples_per_s == pytest.approx(8 / 0.030)
    assert (a.count, b.count) == (12, 12)


def test_boundaries_bracket_every_window_of_a_variant() -> None:
    m = Machine([1.0])
    seen: list[str] = []
    measure_interleaved(
        {"a": m.variant("a", 10), "b": m.variant("b", 10)},
        policy=_policy(stable_windows=1),
        clock=m.clock,
        on_boundary=seen.append,
    )
    assert seen == ["a", "b", "a", "b"]


def test_ratio_spreads_needs_aligned_rounds() -> None:
    w = Window((10 * MS,), 10 * MS)
    assert ratio_spreads([w, w], [w, w]) == (0.0, 0.0)
    with pytest.raises(ValueError, match="aligned"):
        ratio_spreads([w], [w, w])


def test_bad_arguments_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="at least one variant"):
        measure_interleaved({})
    with pytest.raises(ConfigError, match="settle='some'"):
        measure_interleaved({"a": lambda: None}, settle="some")  # type: ignore[arg-type]
