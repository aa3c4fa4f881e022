"""The bounds of every number a contracts or budgets file sets, checked when the file is read.

TOML integers reach 2**63 and floats include ``inf`` and ``nan``: ``window_ms = 1e15`` would measure for 30,000
years, ``throughput_batch_size = 10**12`` would build a 2 GB request before the first send. Each bound is far
beyond any real setting and far below what would hurt the machine; docs/contracts.md lists them.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "MAX_BATCH_SIZE",
    "MAX_COUNT",
    "MAX_DIM",
    "MAX_MS",
    "MAX_RATE",
    "MAX_RATIO",
    "MAX_SECONDS",
    "MAX_TENSOR_ELEMENTS",
    "integer_problem",
    "number_problem",
]

MAX_BATCH_SIZE = 4096  # rows of one request
MAX_COUNT = 100_000  # examples, warm-up requests, label index (top_k)
MAX_DIM = 1 << 20  # one dimension of a declared shape
MAX_TENSOR_ELEMENTS = 1 << 24  # elements of one tensor (16M: 64 MB at FP32)
MAX_MS = 3_600_000.0  # a window or a latency limit: one hour
MAX_SECONDS = 3_600.0  # a search's time: one hour
MAX_RATIO = 1_000.0  # a relative limit
MAX_RATE = 1e9  # samples or responses per second


def integer_problem(value: Any, minimum: int, maximum: int) -> str | None:
    """What is wrong with ``value`` as an integer in [minimum, maximum], or None."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        return f"an integer from {minimum} to {maximum:,}"
    return None


def number_problem(value: Any, minimum: float, maximum: float, *, above: bool = False) -> str | None:
    """What is wrong with ``value`` as a finite number in [minimum, maximum] (``above``: minimum excluded)."""
    low = "(" if above else "["
    wanted = f"a finite number in {low}{_show(minimum)}, {_show(maximum)}]"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return wanted
    if not math.isfinite(value) or not (minimum < value if above else minimum <= value) or value > maximum:
        return wanted
    return None


def _show(bound: float) -> str:
    return f"{int(bound):,}" if float(bound).is_integer() and abs(bound) < 1e15 else f"{bound:g}"
