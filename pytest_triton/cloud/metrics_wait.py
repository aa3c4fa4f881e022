"""Read the CloudWatch split of every measured SageMaker window at the session's end, waiting a bounded time.

SageMaker publishes ModelLatency and OverheadLatency per minute, a minute or more after the requests: read right
after a measurement, a real endpoint's split is nearly never there yet. So a run keeps each window
(:class:`~pytest_triton.cloud.metrics.SplitWindow`) and, once every test is done, polls CloudWatch until each
window has all its datapoints or ``wait_s`` seconds have passed since the last window ended (0: read once).
Ctrl-C stops the wait; what was read by then is reported. A window still incomplete is reported with why and
the aws CLI commands that read it later. The endpoints need not exist any more: CloudWatch keeps the metrics.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import final

from pytest_triton.cloud.metrics import METRICS
from pytest_triton.cloud.metrics import LatencySplit
from pytest_triton.cloud.metrics import SplitWindow

DEFAULT_WAIT_S = 180.0  # after the last window: SageMaker's 1-minute datapoints usually land within 1-2 minutes
DEFAULT_POLL_S = 15.0


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@final
@dataclass(frozen=True)
class SplitRead:
    """What CloudWatch had for one window when the wait ended (``split`` None: never read: Ctrl-C or ``error``)."""

    window: SplitWindow
    split: LatencySplit | None
    complete: bool
    after_s: float  # how long after the window's end the last read was
    wait_s: float
    interrupted: bool = False
    error: str = ""  # why CloudWatch could not be read (a refused call, no credentials)

    def describe(self) -> str:
        """The variant's note: the split, or why it is (partly) missing and how to read it later."""
        window, split = self.window, self.split
        if split is not None and self.complete:
            return f"{split.describe()} (read at session end, {self.after_s:.0f} s after the window)"
        start, end = window.query_window()
        span = f"the window {start:%Y-%m-%dT%H:%M:%SZ} to {end:%Y-%m-%dT%H:%M:%SZ}"
        if self.error:
            return (
                f"endpoint {window.endpoint}: no server-side split: CloudWatch could not be read: {self.error}; "
                f"read {span} later with: " + " ; ".join(window.commands())
            )
        if self.interrupted:
            why = f"when Ctrl-C stopped the wait, {self.after_s:.0f} s after the window"
        elif self.wait_s:
            why = f"by {self.after_s:.0f} s after the window (--triton-cloud-metrics-wait {self.wait_s:g})"
        else:
            why = f"when read once, {self.after_s:.0f} s after the window (--triton-cloud-metrics-wait 0)"
        if split is None or not split.value_ms:
            metrics = list(METRICS)
            known = f"endpoint {window.endpoint}: no server-side split: CloudWatch had no datapoint for"
            known += f" {', '.join(metrics)} of {span}"
        else:
            metrics = [m for m in METRICS if split.samples.get(m, 0) < max(window.requests, 1)]
            counted = ", ".join(f"{m} {split.samples.get(m, 0)}" for m in metrics)
            known = f"{split.describe()}; incomplete: CloudWatch had {counted} of {window.requests} requests of {span}"
        return f"{known} {why}; SageMaker publishes them per minute: read them later with: " + " ; ".join(
            window.commands(metrics)
        )


def read_splits(
    windows: Sequence[SplitWindow],
    *,
    wait_s: float = DEFAULT_WAIT_S,
    poll_s: float = DEFAULT_POLL_S,
    cloudwatch: Callable[[str], Any] | Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    now: Callable[[], dt.datetime] = _utc_now,
    sleep: Callable[[float], None] = time.sleep,
) -> list[SplitRead]:
    """Each window's split, polling every ``poll_s`` until all are complete or ``wait_s`` after the last window.

    ``cloudwatch`` gives the client of a region (a mapping, or a function; default: a new client per region).
    ``progress`` gets one line per poll that waits. Ctrl-C (KeyboardInterrupt) ends the wait, not the report.
    """
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError

    from pytest_triton.errors import PytestTritonError

    if not windows:
        return []
    client = _clients(cloudwatch)
    last_end = max(w.end for w in windows)
    deadline = last_end + dt.timedelta(seconds=max(0.0, wait_s))
    reads: dict[int, LatencySplit] = {}
    errors: dict[int, str] = {}
    pending = list(range(len(windows)))
    interrupted = False
    try:
        while True:
            for index in pending:
                try:
                    reads[index] = windows[index].read(client(windows[index].region))
                except (BotoCoreError, ClientError, PytestTritonError) as exc:  # reported; the report is still written
                    errors[index] = f"{type(exc).__name__}: {exc}"
            pending = [i for i in pending if i not in errors and not windows[i].complete(reads[i])]
            current = now()
            if not pending or current >= deadline:
                break
            if progress is not None:
                endpoints = len({windows[i].endpoint for i in pending})
                waited = (current - last_end).total_seconds()
                progress(
                    f"waiting for CloudWatch {' / '.join(METRICS)} of {endpoints} endpoint"
                    f"{'s' if endpoints != 1 else ''}: {waited:.0f} s of {wait_s:g} s"
                )
            sleep(min(poll_s, (deadline - current).total_seconds()))
    except KeyboardInterrupt:
        interrupted = True
    ended = now()
    return [
        SplitRead(
            window,
            reads.get(index),
            # a window whose last read failed is not complete, whatever an earlier read found
            index in reads and index not in errors and window.complete(reads[index]),
            (ended - window.end).total_seconds(),
            wait_s,
            interrupted=interrupted and index in pending,
            error=errors.get(index, ""),
        )
        for index, window in enumerate(windows)
    ]


def _clients(given: Callable[[str], Any] | Mapping[str, Any] | None) -> Callable[[str], Any]:
    if isinstance(given, Mapping):
        return given.__getitem__
    if given is not None:
        return given
    from pytest_triton.cloud.aws import AwsClients

    made: dict[str, Any] = {}

    def connect(region: str) -> Any:
        if region not in made:
            made[region] = AwsClients.connect(region).cloudwatch
        return made[region]

    return connect
