"""The rule that turns paired per-round ratios into PASS, FAIL or INCONCLUSIVE, with a known error rate.

Each round of an interleaved measurement gives one ratio (variant / baseline, both measured under the same load).
The verdict is about the *median* of the distribution those ratios come from, and rests on a distribution-free
confidence interval for it: sorted, the ``k``-th smallest and ``k``-th largest of ``n`` ratios bound the median
with probability at least ``1 - 2 * P(Binomial(n, 1/2) <= k - 1)`` whatever the distribution (each ratio falls
below the median with probability 1/2: the sign test's order-statistic interval). No normality is assumed, an
outlying round moves the interval by one rank at most, and the interval of the log-ratio is the log of this one
(order statistics commute with any increasing map), so ratios need no transform.

For a limit ``L`` on a ratio that should stay low (a percentile): PASS when the whole interval is at or below
``L``, FAIL when it lies wholly above ``L``, otherwise the answer is open. For a ratio that should stay high
(samples/s), the same mirrored. The rounds are looked at a few times only, at :data:`LOOKS` rounds, while the
answer is open; each look spends ``ALPHA / len(LOOKS)`` per direction (Bonferroni), so over every look

- a FAIL when the true median ratio is within the limit has probability at most :data:`ALPHA`, and
- a PASS when it is beyond the limit has probability at most :data:`ALPHA`,

and both fall quickly as the true ratio moves away from the limit. An answer still open at the last look (or
when the next look would not fit in the time budget) is INCONCLUSIVE, never a coin flip.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal
from typing import final

__all__ = ["ALPHA", "LOOKS", "VERDICT_SECONDS", "Decision", "Outcome", "decide", "median_interval", "rank_for"]

Outcome = Literal["pass", "fail", "inconclusive"]

ALPHA = 0.01
"""Per direction, over all looks: the chance of a false FAIL (or of a false PASS) at the limit itself."""

LOOKS: tuple[int, ...] = (9, 18, 36, 72)
"""The rounds at which the answer is looked at. 9 is the fewest whose interval exists at ALPHA / 4 one-sided
(the minimum and maximum of 9 rounds cover the median with probability 1 - 2 / 2**9)."""


VERDICT_SECONDS = 90.0
"""The default time budget of one verdict's measurement (``--triton-verdict-seconds``): no further look starts
that would not end within it."""


def rank_for(n: int, alpha: float) -> int:
    """The largest ``k`` with ``P(Binomial(n, 1/2) <= k - 1) <= alpha`` (0 when even ``k = 1`` fails): the
    ``k``-th smallest of ``n`` values then exceeds the median with probability at most ``alpha``."""
    if n < 1:
        return 0
    k, below = 0, 0.0
    for j in range(n):
        below += math.comb(n, j) / 2.0**n
        if below > alpha:
            break
        k = j + 1
    return k


def median_interval(values: Sequence[float], alpha: float) -> tuple[float, float] | None:
    """The order-statistic interval of the median, each side wrong with probability at most ``alpha``; None
    when ``values`` are too few for ``alpha``."""
    k = rank_for(len(values), alpha)
    if k == 0:
        return None
    ordered = sorted(values)
    return ordered[k - 1], ordered[len(ordered) - k]


@final
@dataclass(frozen=True)
class Decision:
    """The outcome, the interval it rests on (None: too few rounds for one) and how sure each side is."""

    outcome: Outcome
    interval: tuple[float, float] | None
    rounds: int
    confidence: float  # of the interval at this look: 1 - 2 * alpha per look

    def describe(self) -> str:
        """``[1.012, 1.071] (99.5%, 18 rounds)``."""
        if self.interval is None:
            return f"no interval from {self.rounds} round(s) (needs {LOOKS[0]})"
        low, high = self.interval
        return f"[{low:.3f}, {high:.3f}] ({self.confidence:.1%}, {self.rounds} rounds)"


def decide(
    ratios: Sequence[float],
    limit: float,
    *,
    higher_is_better: bool = False,
    looks: int = len(LOOKS),
    alpha: float = ALPHA,
) -> Decision:
    """Judge ``ratios`` (one per round) against ``limit``: at most ``limit`` (a percentile ratio) or, with
    ``higher_is_better``, at least it (a throughput ratio); ``looks`` is how many looks share ``alpha``."""
    per_look = alpha / looks
    interval = median_interval(ratios, per_look)
    confidence = 1 - 2 * per_look
    if interval is None:
        return Decision("inconclusive", None, len(ratios), confidence)
    low, high = interval
    if higher_is_better:
        outcome: Outcome = "pass" if low >= limit else "fail" if high < limit else "inconclusive"
    else:
        outcome = "pass" if high <= limit else "fail" if low > limit else "inconclusive"
    return Decision(outcome, interval, len(ratios), confidence)
