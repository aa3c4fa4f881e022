"""A machine on a fake clock, for latency tests: every request advances the clock by a scripted number of
milliseconds, so what the bench measures (and every verdict on it) is decided by the test, never by the speed or
the load of the machine the tests run on.

The bench reads the time through ``clock`` (``TritonBench(clock=machine.clock)``, ``triton_bench.clock = ...``,
``judge_pair(..., clock=...)``). A suite that pytester writes imports it as ``fake_clock`` after
``write_fake_clock(pytester.path)``, in-process or in a subprocess alike.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

MS = 1_000_000  # the clock counts nanoseconds, as time.perf_counter_ns does


class FakeMachine:
    """Requests that take scripted times on one fake clock.

    ``slow_pace``: the call made with ``sets_pace=True`` opens every round of an interleaved measurement; in its
    first window and every other one after it the whole machine runs ``slow_pace`` times slower (a load that
    comes and goes, which side-by-side rounds must cancel).
    """

    def __init__(self, *, slow_pace: float = 1.0) -> None:
        self.now = 0
        self.order: list[str] = []  # the name of every request, in the order they were sent
        self.sent: dict[str, int] = {}  # requests sent, by name
        self.slow_pace = slow_pace
        self.pace = 1.0

    def clock(self) -> int:
        return self.now

    def advance(self, name: str, ms: float) -> None:
        """Send one request named ``name`` that takes ``ms`` milliseconds."""
        self.order.append(name)
        self.sent[name] = self.sent.get(name, 0) + 1
        self.now += int(ms * MS)

    def call(
        self,
        name: str,
        ms: float,
        *,
        odd_window_extra_ms: float = 0.0,
        window_requests: int = 5,
        sets_pace: bool = False,
    ) -> Callable[[], None]:
        """A request named ``name`` taking ``ms`` (times the machine's pace), plus ``odd_window_extra_ms`` in
        every other window of ``window_requests`` of its own requests (its ratio to the others swings)."""

        def send() -> None:
            window = self.sent.get(name, 0) // window_requests
            if sets_pace:
                self.pace = self.slow_pace if window % 2 == 0 else 1.0
            self.advance(name, ms * self.pace + (odd_window_extra_ms if window % 2 else 0.0))

        return send


def write_fake_clock(folder: Path) -> Path:
    """Copy this module into ``folder`` (a pytester suite's root) as ``fake_clock.py``."""
    target = folder / "fake_clock.py"
    target.write_text(Path(__file__).read_text(encoding="utf-8"), encoding="utf-8")
    return target
