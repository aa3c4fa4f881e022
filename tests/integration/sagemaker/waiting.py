"""Waiting on a pytest subprocess of a SageMaker test: a condition met in time, or the subprocess's output."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable


def wait_for(condition: Callable[[], bool], timeout: float, proc: subprocess.Popen[str]) -> None:
    """Return once ``condition()`` holds; fail with ``proc``'s output if it ends first or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"pytest ended early:\n{proc.communicate()[0]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out:\n{proc.communicate()[0]}")
        time.sleep(0.1)
