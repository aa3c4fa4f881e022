"""The one vocabulary of a latency verdict, as every channel says it (the terminal section, the JSON record,
JUnit XML properties, the markdown and SVG reports) and as pytest's own outcome agrees with it.

A verdict's status is what the measurement found; its word is what that means for the test under the
session's ``triton_unstable`` choice (absolute budgets) and ``triton_inconclusive`` choice (relative budgets and
PR verdicts, whose interval may still straddle the limit):

========================  ===================  ==============
status                    word                 pytest outcome
========================  ===================  ==============
``pass``                  ``passed``           passed
``fail``                  ``failed``           failed
``unstable`` (warn)       ``passed, unstable`` passed, with a :class:`~pytest_triton.errors.TritonUnstableWarning`
``unstable`` (fail)       ``failed``           failed
``inconclusive`` (warn)   ``inconclusive``     passed, with a :class:`~pytest_triton.errors.TritonInconclusiveWarning`
``inconclusive`` (fail)   ``failed``           failed
``report-only``           ``report-only``      passed (over or within budget: not asserted here)
``not-comparable``        ``not-comparable``   passed (a budget of another engine path: not judged)
``not-measured``          ``not-measured``     passed (a relative budget without the run it needs)
``skipped``               ``skipped``          skipped
========================  ===================  ==============

A choice of ``warn`` that the session's warnings filters make an error reaches this module as ``fail``
(:mod:`pytest_triton.plugin.warning_filters`): pytest fails such a test, and the word agrees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Literal

if TYPE_CHECKING:
    from pytest_triton.bench.results import UnstablePolicy

__all__ = ["OUTCOME_OF", "OutcomeWord", "outcome_word"]

OutcomeWord = Literal[
    "passed",
    "failed",
    "passed, unstable",
    "inconclusive",
    "report-only",
    "not-comparable",
    "not-measured",
    "skipped",
]

OUTCOME_OF: dict[OutcomeWord, Literal["passed", "failed", "skipped"]] = {
    "passed": "passed",
    "failed": "failed",
    "passed, unstable": "passed",
    "inconclusive": "passed",
    "report-only": "passed",
    "not-comparable": "passed",
    "not-measured": "passed",
    "skipped": "skipped",
}
"""pytest's outcome of a test whose verdict says the word."""

_WORDS: dict[str, OutcomeWord] = {
    "pass": "passed",
    "fail": "failed",
    "report-only": "report-only",
    "not-comparable": "not-comparable",
    "not-measured": "not-measured",
    "skipped": "skipped",
}


def outcome_word(status: str, unstable: UnstablePolicy, inconclusive: UnstablePolicy) -> OutcomeWord:
    """The word every channel uses for a verdict ``status`` under the session's ``unstable`` and
    ``inconclusive`` choices."""
    if status == "unstable":
        return "passed, unstable" if unstable == "warn" else "failed"
    if status == "inconclusive":
        return "inconclusive" if inconclusive == "warn" else "failed"
    try:
        return _WORDS[status]
    except KeyError:
        expected = sorted({*_WORDS, "unstable", "inconclusive"})
        raise ValueError(f"status={status!r}; expected one of {expected}") from None
