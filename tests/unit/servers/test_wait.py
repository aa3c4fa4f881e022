"""The one wait loop: done, timeout with status and log tail, progress lines, exceptions pass through."""

from __future__ import annotations

import time

import pytest

from pytest_triton.client.rest import IndexEntry
from pytest_triton.errors import ServerTimeout
from pytest_triton.servers.wait import Deadline
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import unloaded_poll
from pytest_triton.servers.wait import wait_models_unloaded
from pytest_triton.servers.wait import wait_until


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_returns_when_done_and_reports_elapsed() -> None:
    clock = FakeClock()
    answers = iter([Poll(False, "0/2"), Poll(False, "1/2"), Poll(True, "2/2")])
    elapsed = wait_until(lambda: next(answers), timeout=10, clock=clock, sleep=clock.sleep, progress=None)
    assert len(clock.sleeps) == 2
    assert elapsed == pytest.approx(sum(clock.sleeps))


def test_polls_fast_first_then_backs_off_to_interval() -> None:
    clock = FakeClock()
    with pytest.raises(ServerTimeout):
        wait_until(lambda: Poll(False), timeout=5, interval=0.25, clock=clock, sleep=clock.sleep, progress=None)
    assert clock.sleeps[0] == pytest.approx(0.02)
    assert max(clock.sleeps) == pytest.approx(0.25)
    assert clock.sleeps == sorted(clock.sleeps[:-1]) + clock.sleeps[-1:]


def test_timeout_names_what_status_and_log_tail() -> None:
    clock = FakeClock()
    with pytest.raises(ServerTimeout) as info:
        wait_until(
            lambda: Poll(False, "1/3 models ready"),
            timeout=2.5,
            what="tritonserver",
            clock=clock,
            sleep=clock.sleep,
            progress=None,
            log_tail=lambda: "E1129 last words",
        )
    text = str(info.value)
    assert "tritonserver not ready after 2.5 s (1/3 models ready)" in text
    assert "E1129 last words" in text
    assert isinstance(info.value, TimeoutError)
    assert clock.now - 100.0 == pytest.approx(2.5)  # never sleeps past the deadline


def test_progress_line_every_few_seconds() -> None:
    clock = FakeClock()
    lines: list[str] = []
    with pytest.raises(ServerTimeout):
        wait_until(
            lambda: Poll(False, "2/3 models ready"),
            timeout=12,
            clock=clock,
            sleep=clock.sleep,
            progress=lines.append,
            progress_every=5.0,
        )
    assert len(lines) == 2
    assert lines[0].startswith("waiting for tritonserver: 2/3 models ready (5.")
    assert lines[0].endswith(" s)")
    assert "(10." in lines[1]


def test_exception_from_check_propagates() -> None:
    def check() -> Poll:
        raise RuntimeError("process exited")

    with pytest.raises(RuntimeError, match="process exited"):
        wait_until(check, timeout=10, progress=None)


def test_zero_timeout_checks_once() -> None:
    calls: list[int] = []

    def check() -> Poll:
        calls.append(1)
        return Poll(False)

    with pytest.raises(ServerTimeout):
        wait_until(check, timeout=0, progress=None)
    assert calls == [1]


def test_a_spent_deadline_checks_once_and_names_its_whole_budget() -> None:
    # the waits of a start share its deadline: a spawn that took all of it leaves the wait nothing, and the
    # message still says how long the start had (not the 0.0 s that was left)
    calls: list[int] = []

    def check() -> Poll:
        calls.append(1)
        return Poll(False, "0/2 models loaded")

    deadline = Deadline(0.2)
    time.sleep(0.25)  # the spawn
    with pytest.raises(ServerTimeout, match=r"^tritonserver not ready after 0\.2 s \(0/2 models loaded\)"):
        wait_until(check, timeout=deadline, progress=None)
    assert calls == [1]


def test_negative_timeout_rejected() -> None:
    with pytest.raises(ValueError, match="timeout=-1"):
        wait_until(lambda: Poll(True), timeout=-1)


class FakeIndex:
    """A TritonRest stand-in whose repository index moves one step per call."""

    def __init__(self, *states: list[tuple[str, str]]) -> None:
        self.states = list(states)

    def index(self) -> list[IndexEntry]:
        rows = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return [IndexEntry(name=name, version="1", state=state, reason="") for name, state in rows]


def test_unloaded_poll_waits_for_held_models_only() -> None:
    rest = FakeIndex([("a", "UNLOADING"), ("b", "READY"), ("other", "READY")])
    poll = unloaded_poll(rest, ["a", "b"])  # type: ignore[arg-type]
    assert poll == Poll(False, "still held: 'a', 'b'")
    gone = FakeIndex([("a", "UNAVAILABLE"), ("other", "LOADING")])
    assert unloaded_poll(gone, ["a", "b"]).done  # type: ignore[arg-type]


def test_wait_models_unloaded_times_out_naming_the_held_model() -> None:
    rest = FakeIndex([("stuck", "UNLOADING")])
    with pytest.raises(ServerTimeout, match=r"model unload not finished after 0\.1 s \(still held: 'stuck'\)"):
        wait_models_unloaded(rest, ["stuck"], timeout=0.1, progress=None)  # type: ignore[arg-type]
