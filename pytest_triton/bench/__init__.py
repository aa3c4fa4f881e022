"""Latency benchmarking of Triton models: sampling, statistics, server split, budgets and reports.

Import the pieces from here; :mod:`pytest_triton.bench.session` (the pytest-facing :class:`TritonBench`) and
:mod:`pytest_triton.bench.benchmark` (pytest-benchmark integration) are imported on their own.
"""

from __future__ import annotations

from pytest_triton.bench.absolute import Check
from pytest_triton.bench.absolute import Verdict
from pytest_triton.bench.absolute import evaluate
from pytest_triton.bench.budgets import Budget
from pytest_triton.bench.budgets import BudgetFile
from pytest_triton.bench.budgets import HardwarePolicy
from pytest_triton.bench.budgets import load_budgets
from pytest_triton.bench.budgets import parse_budgets
from pytest_triton.bench.interleave import Interleaved
from pytest_triton.bench.interleave import measure_interleaved
from pytest_triton.bench.parity_record import ParityRecord
from pytest_triton.bench.provenance import Provenance
from pytest_triton.bench.provenance import collect_provenance
from pytest_triton.bench.relative import RelativeBudget
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.bench.relative import evaluate_relative
from pytest_triton.bench.report import ReportData
from pytest_triton.bench.report import table_lines
from pytest_triton.bench.report import to_json
from pytest_triton.bench.report import to_markdown
from pytest_triton.bench.report import to_svg
from pytest_triton.bench.report import write_report
from pytest_triton.bench.results import SideBySide
from pytest_triton.bench.results import UnstablePolicy
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.results import assert_contracts
from pytest_triton.bench.results import assert_within_budget
from pytest_triton.bench.results import build_result
from pytest_triton.bench.sampling import Measurement
from pytest_triton.bench.sampling import WarmupRecord
from pytest_triton.bench.sampling import Window
from pytest_triton.bench.sampling import WindowPolicy
from pytest_triton.bench.sampling import measure
from pytest_triton.bench.sampling import warm_up
from pytest_triton.bench.sampling import warm_up_shapes
from pytest_triton.bench.server_stats import PhaseSplit
from pytest_triton.bench.server_stats import ServerSplit
from pytest_triton.bench.server_stats import StatsWindow
from pytest_triton.bench.server_stats import composing_models
from pytest_triton.bench.server_stats import fetch_metrics
from pytest_triton.bench.server_stats import fetch_statistics
from pytest_triton.bench.server_stats import metrics_delta
from pytest_triton.bench.server_stats import parse_metrics
from pytest_triton.bench.server_stats import parse_statistics
from pytest_triton.bench.server_stats import stats_delta
from pytest_triton.bench.stats import PERCENTILES
from pytest_triton.bench.stats import LatencyStats
from pytest_triton.bench.stats import nearest_rank
from pytest_triton.bench.stats import summarize
from pytest_triton.bench.stats import throughput

__all__ = [
    "PERCENTILES",
    "Budget",
    "BudgetFile",
    "Check",
    "HardwarePolicy",
    "Interleaved",
    "LatencyStats",
    "Measurement",
    "ParityRecord",
    "PhaseSplit",
    "Provenance",
    "RelativeBudget",
    "RelativeResult",
    "ReportData",
    "ServerSplit",
    "SideBySide",
    "StatsWindow",
    "UnstablePolicy",
    "VariantResult",
    "Verdict",
    "WarmupRecord",
    "Window",
    "WindowPolicy",
    "assert_contracts",
    "assert_within_budget",
    "build_result",
    "collect_provenance",
    "composing_models",
    "evaluate",
    "evaluate_relative",
    "fetch_metrics",
    "fetch_statistics",
    "load_budgets",
    "measure",
    "measure_interleaved",
    "metrics_delta",
    "nearest_rank",
    "parse_budgets",
    "parse_metrics",
    "parse_statistics",
    "stats_delta",
    "summarize",
    "table_lines",
    "throughput",
    "to_json",
    "to_markdown",
    "to_svg",
    "warm_up",
    "warm_up_shapes",
    "write_report",
]
