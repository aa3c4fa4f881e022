"""The one wait loop every launcher uses: poll a check until it is done or a deadline passes.

A check returns a :class:`Poll` (done or not, and a short status such as ``"2/3 models ready"``) or raises
to stop waiting at once (the process exited, a model failed to load). While waiting, a progress line goes
to the progress callback every few seconds: ``waiting for tritonserver: 2/3 models ready (7.0 s)``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_triton.client.rest import TritonRest
from pytest_triton.client.rest import fetch_text
from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerTimeout

ProgressCallback = Callable[[str], None]


@dataclass(frozen=True)
class Poll:
    """The result of one check: ``done``, and a status for progress lines and timeout messages."""

    done: bool
    status: str = ""


def stderr_progress(line: str) -> None:
    """Write a progress line to stderr (the default progress callback)."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


class Deadline:
    """A deadline shared by several waits (and by every attempt of a start): :meth:`left` is the time remaining,
    ``seconds`` the whole budget, which a timeout names (the waits after a slow spawn have less than it left)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self._deadline - time.monotonic())


def wait_until(
    check: Callable[[], Poll],
    *,
    timeout: float | Deadline,
    what: str = "tritonserver",
    goal: str = "ready",
    progress: ProgressCallback | None = stderr_progress,
    progress_every: float = 5.0,
    interval: float = 0.25,
    log_tail: Callable[[], str] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Call ``check`` until it reports done; return the seconds waited.

    Polls quickly at first (20 ms, growing to ``interval``) so a fast server is seen at once. Raises
    :class:`ServerTimeout` naming ``what``, the last status and the log tail when ``timeout`` seconds
    pass, or what a :class:`Deadline` has left (the message then names its whole budget); exceptions from
    ``check`` propagate unchanged. The check runs at least once, even with no time left.
    """
    budget, left = (timeout.seconds, timeout.left()) if isinstance(timeout, Deadline) else (timeout, timeout)
    if left < 0:
        raise ValueError(f"timeout={timeout!r} must be >= 0")
    start = clock()
    deadline = start + left
    next_progress = start + progress_every
    delay = min(0.02, interval)
    while True:
        poll = check()
        now = clock()
        elapsed = now - start
        if poll.done:
            return elapsed
        if now >= deadline:
            status = f" ({poll.status})" if poll.status else ""
            raise ServerTimeout(
                f"{what} not {goal} after {budget:.1f} s{status}; raise the timeout or look at the log below",
                log_tail=log_tail() if log_tail is not None else "",
            )
        if progress is not None and now >= next_progress:
            status = f"{poll.status} " if poll.status else ""
            progress(f"waiting for {what}: {status}({elapsed:.1f} s)")
            next_progress = now + progress_every
        sleep(max(0.0, min(delay, deadline - now)))
        delay = min(delay * 1.5, interval)


def ping_poll(sagemaker_url: str) -> Poll:
    """The SageMaker frontend's health check, as SageMaker runs it: ``GET /ping`` answers 200."""
    try:
        fetch_text(f"{sagemaker_url}/ping", timeout=2.0)
    except ServerError as err:
        return Poll(False, f"SageMaker frontend not answering yet: {err}")
    return Poll(True, "/ping answered 200")


def models_poll(rest: TritonRest, models: Sequence[str]) -> Poll:
    """One check of server + model readiness through the REST API.

    Done when ``/v2/health/live`` answers and every model in ``models`` is ready (with no models: when
    ``/v2/health/ready`` answers 200; not used otherwise because with strict readiness one failed model
    elsewhere in the repository keeps it at 400 forever). A model the repository index shows as
    UNAVAILABLE with a reason other than "unloaded" raises :class:`ModelLoadError` with Triton's reason.
    """
    if not rest.live():
        return Poll(False, "server not answering yet")
    pending = [name for name in models if not rest.model_ready(name)]
    if pending:
        entries = {e.name: e for e in rest.index() if e.state == "UNAVAILABLE" and e.reason != "unloaded"}
        for name in pending:
            entry = entries.get(name)
            if entry is not None and entry.reason:
                raise ModelLoadError(name, entry.reason)
    ready = len(models) - len(pending)
    if models:
        status = f"{ready}/{len(models)} models ready"
        if pending:
            status += f", waiting for {', '.join(map(repr, pending[:5]))}"
    else:
        status = "server live"
    return Poll(not pending and (bool(models) or rest.ready()), status)


def wait_models_ready(
    rest: TritonRest,
    models: Sequence[str],
    *,
    timeout: float | Deadline,
    what: str = "tritonserver",
    progress: ProgressCallback | None = stderr_progress,
    log_tail: Callable[[], str] | None = None,
) -> float:
    """Wait until the server at ``rest`` and each model in ``models`` are ready; see :func:`models_poll`."""
    names = list(models)
    return wait_until(
        lambda: models_poll(rest, names),
        timeout=timeout,
        what=what,
        progress=progress,
        log_tail=log_tail,
    )


# states a model passes through while Triton still holds it (the index shows UNAVAILABLE once it is gone)
_HELD_STATES = frozenset({"READY", "LOADING", "UNLOADING"})


def unloaded_poll(rest: TritonRest, models: Sequence[str]) -> Poll:
    """One check that Triton has finished unloading each of ``models`` (none READY, LOADING or UNLOADING)."""
    held = sorted({e.name for e in rest.index() if e.name in models and e.state in _HELD_STATES})
    if held:
        return Poll(False, f"still held: {', '.join(map(repr, held[:5]))}")
    return Poll(True)


def wait_models_unloaded(
    rest: TritonRest,
    models: Sequence[str],
    *,
    timeout: float,
    progress: ProgressCallback | None = stderr_progress,
    log_tail: Callable[[], str] | None = None,
) -> float:
    """Wait until Triton has finished unloading each of ``models``.

    Triton answers an unload request at once and unloads in the background. tritonserver 2.51 died with
    SIGSEGV in libtritonserver while our differential test loaded new models (valid and broken ones, ensembles
    among them) with unloads still running; with this wait between rounds it has not crashed since. A plain
    churn of 150 ensemble load/unload cycles without waiting did not crash it, so the exact trigger is not
    known: callers that churn many models wait here between rounds.
    """
    names = list(models)
    return wait_until(
        lambda: unloaded_poll(rest, names),
        timeout=timeout,
        what="model unload",
        goal="finished",
        progress=progress,
        log_tail=log_tail,
    )
