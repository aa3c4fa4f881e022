"""The sampler with a fake clock: warm-up excluded, convergence, bounds, window modes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from collections.abc import Iterator

import pytest

from pytest_triton.bench.sampling import Clients
from pytest_triton.bench.sampling import Window
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import is_stable
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.sampling import run_window
from pytest_triton.bench.sampling import warm_up_shapes
from pytest_triton.errors import ConfigError

MS = 1_000_000


class FakeClock:
    """A nanosecond clock that only moves when a fake request runs (plus ``tick`` per read)."""

    def __init__(self, tick: int = 0) -> None:
        self.now = 0
        self.tick = tick
        self.calls: list[str] = []

    def __call__(self) -> int:
        self.now += self.tick
        return self.now

    def request(self, latencies: Iterator[int], label: str = "") -> Callable[[], None]:
        def call() -> None:
            self.calls.append(label)
            self.now += next(latencies)

        return call


def constant(value: int) -> Iterator[int]:
    while True:
        yield value


def test_warmup_is_excluded_and_a_steady_server_converges_after_three_windows() -> None:
    clock = FakeClock()

    def latencies() -> Iterator[int]:
        yield 47_700 * MS  # the seed's first TensorRT call: engine build
        yield 200 * MS
        yield from constant(15 * MS)

    policy = WindowPolicy(window_requests=20)
    m = measure(clock.request(latencies()), warmup=2, policy=policy, clock=clock)
    assert m.stable
    assert m.reason.startswith("stable after 3 windows")
    assert len(m.windows) == 3
    assert len(m.samples_ns) == 60
    assert set(m.samples_ns) == {15 * MS}
    assert m.warmup.durations_ns == {1: (47_700 * MS, 200 * MS)}
    stats = m.stats()
    assert stats.max_ms == 15.0
    assert stats.samples_per_s == pytest.approx(1000 / 15)


def test_converges_once_the_last_three_windows_agree() -> None:
    clock = FakeClock()
    # windows of 10 requests: 30 ms, 20 ms, then steady 10 ms (the first windows are still settling)
    script = iter([30 * MS] * 10 + [20 * MS] * 10 + [10 * MS] * 1000)
    m = measure(clock.request(script), warmup=0, policy=WindowPolicy(window_requests=10), clock=clock)
    assert m.stable
    assert len(m.windows) == 5
    assert set(m.samples_ns) == {10 * MS}  # only the last three windows are kept


def test_unstable_run_stops_at_max_windows_and_says_so() -> None:
    clock = FakeClock()

    def alternating() -> Iterator[int]:
        while True:
            yield from [10 * MS] * 5
            yield from [20 * MS] * 5

    policy = WindowPolicy(window_requests=5, max_windows=7, max_seconds=None)
    m = measure(clock.request(alternating()), warmup=0, policy=policy, clock=clock)
    assert not m.stable
    assert len(m.windows) == 7
    assert m.reason.startswith("unstable: max_windows=7 reached; last 3 windows: p50 spread 100.0%")
    assert len(m.samples_ns) == 15  # the last three windows, even when unstable


def test_unstable_run_stops_at_max_seconds() -> None:
    clock = FakeClock()
    growing = iter(range(1 * MS, 10**12, MS // 10))  # slower and slower: never stable
    policy = WindowPolicy(window_requests=10, max_windows=1000, max_seconds=1.0)
    m = measure(clock.request(growing), warmup=0, policy=policy, clock=clock)
    assert not m.stable
    assert "max_seconds=1 reached" in m.reason
    assert clock.now >= 1_000_000_000
    assert len(m.windows) < 1000


def test_time_windows_hold_as_many_requests_as_fit() -> None:
    clock = FakeClock()
    policy = WindowPolicy(mode="time", window_ms=100)
    m = measure(clock.request(constant(10 * MS)), warmup=0, policy=policy, clock=clock)
    assert m.stable
    assert [len(w.latencies_ns) for w in m.windows] == [10, 10, 10]
    assert m.windows[0].elapsed_ns == 100 * MS


def test_time_window_runs_at_least_one_request() -> None:
    clock = FakeClock()
    m = measure(clock.request(constant(500 * MS)), warmup=0, policy=WindowPolicy(mode="time", window_ms=1), clock=clock)
    assert [len(w.latencies_ns) for w in m.windows] == [1, 1, 1]


def test_throughput_spread_alone_makes_windows_unstable() -> None:
    same_latency = (10 * MS,) * 10
    windows = [Window(same_latency, 100 * MS), Window(same_latency, 100 * MS), Window(same_latency, 150 * MS)]
    ok, text = is_stable(windows, 0.10)
    assert not ok
    assert "p50 spread 0.0%, throughput spread 50.0%" in text
    assert is_stable(windows[:2], 0.10)[0]
    assert not is_stable([Window(same_latency, 0), *windows[:2]], 0.10)[0]  # 0 samples/s is never stable


def test_clock_overhead_between_requests_counts_in_throughput_not_latency() -> None:
    clock = FakeClock(tick=1 * MS)  # every clock read costs 1 ms
    m = measure(clock.request(constant(8 * MS)), warmup=0, policy=WindowPolicy(window_requests=10), clock=clock)
    s = m.stats()
    assert s.p50_ms == 9.0  # 8 ms + the read that ends the request
    assert s.samples_per_s < 1000 / 9.0


def test_warm_up_shapes_warms_every_shape_before_measuring() -> None:
    clock = FakeClock()
    b1 = clock.request(constant(15 * MS), "b1")
    b8 = clock.request(iter([60_000 * MS, *[42 * MS] * 1000]), "b8")
    record = warm_up_shapes({1: b1, 8: b8}, count=2, clock=clock)
    assert clock.calls == ["b1", "b1", "b8", "b8"]
    assert record.durations_ns[8] == (60_000 * MS, 42 * MS)
    m = measure(b1, warmup=0, policy=WindowPolicy(window_requests=5), clock=clock, warmed=record)
    assert m.warmup.as_dict()["8"] == [60.0, 0.042]
    assert max(m.samples_ns) == 15 * MS


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"window_requests": 0}, "window_requests=0"),
        ({"threshold": -0.1}, "threshold=-0.1"),
        ({"max_windows": 2}, "max_windows=2 < stable_windows=3"),
        ({"max_seconds": 0}, "max_seconds=0"),
        ({"mode": "trials"}, "mode='trials'"),
    ],
)
def test_invalid_policy_is_a_config_error(kwargs: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match="invalid WindowPolicy") as info:
        WindowPolicy(**kwargs)  # type: ignore[arg-type]
    assert fragment in str(info.value)


def test_invalid_arguments() -> None:
    with pytest.raises(ConfigError, match="batch_size=0"):
        measure(lambda: None, batch_size=0)
    with pytest.raises(ConfigError, match="warm-up count=0"):
        warm_up_shapes({1: lambda: None}, count=0)


# --- concurrency: Clients send at once ---------------------------------------------------------------


def test_clients_really_send_at_once() -> None:
    # each request waits for the other two clients' requests: only three at once get through (a sequential
    # window would break the barrier after its timeout)
    together = threading.Barrier(3, timeout=10)
    sent: list[int] = []

    def client(index: int) -> Callable[[], object]:
        def call() -> None:
            together.wait()
            sent.append(index)

        return call

    window = run_window(
        Clients(tuple(client(i) for i in range(3))),
        WindowPolicy(mode="count", window_requests=6),
        1,
        FakeClock(tick=1000),
    )
    assert len(window.latencies_ns) == 6
    assert sorted(sent) == [0, 0, 1, 1, 2, 2]  # every client sent, each on its own call


def test_a_time_window_counts_every_clients_requests() -> None:
    clock = FakeClock(tick=1000)
    window = run_window(Clients((lambda: None, lambda: None)), WindowPolicy(mode="time", window_ms=0.05), 4, clock)
    assert window.batch_size == 4
    assert len(window.latencies_ns) >= 2  # each client at least once


def test_a_failing_client_fails_the_window() -> None:
    def broken() -> object:
        raise ConnectionResetError("server went away")

    with pytest.raises(ConnectionResetError, match="server went away"):
        # a time window: every client sends until the deadline, so the broken one surely sends
        run_window(Clients((lambda: None, broken)), WindowPolicy(mode="time", window_ms=1.0), 1, FakeClock(tick=1000))


def test_clients_called_plainly_send_from_the_first() -> None:
    calls: list[str] = []
    clients = Clients((lambda: calls.append("first"), lambda: calls.append("second")))
    measure(
        clients,
        warmup=2,
        policy=WindowPolicy(mode="count", window_requests=1, stable_windows=1),
        clock=FakeClock(tick=1000),
    )
    assert calls[:2] == ["first", "first"]  # warm-up is one client's calls


def test_clients_need_a_call() -> None:
    with pytest.raises(ConfigError, match="at least one call"):
        Clients(())
