"""Baseline runs: every declared variant of the working tree against the same variant at a base ref, served side
by side in one run, and the verdict table a reviewer reads (``pytest --triton-baseline REF``).

Nothing in this package imports pytest; :mod:`pytest_triton.plugin.baseline_items` is the pytest side.
"""

from __future__ import annotations

from pytest_triton.baseline.pairs import Pair
from pytest_triton.baseline.pairs import find_pairs
from pytest_triton.baseline.source import BaseTree
from pytest_triton.baseline.source import open_base
from pytest_triton.baseline.verdict import MARKER
from pytest_triton.baseline.verdict import VerdictRow
from pytest_triton.baseline.verdict import render_verdict

__all__ = ["MARKER", "BaseTree", "Pair", "VerdictRow", "find_pairs", "open_base", "render_verdict"]
