"""The pytest layer of pytest-triton, registered as the ``triton`` plugin (``pytest11`` entry point).

This is the only package that imports pytest. pytest reads the hooks and fixtures below from this module;
they live in :mod:`pytest_triton.plugin.hooks`.
"""

from __future__ import annotations

from pytest_triton.plugin.hooks import pytest_addoption
from pytest_triton.plugin.hooks import pytest_benchmark_update_json
from pytest_triton.plugin.hooks import pytest_benchmark_update_machine_info
from pytest_triton.plugin.hooks import pytest_collection_modifyitems
from pytest_triton.plugin.hooks import pytest_configure
from pytest_triton.plugin.hooks import pytest_fixture_setup
from pytest_triton.plugin.hooks import pytest_load_initial_conftests
from pytest_triton.plugin.hooks import pytest_make_collect_report
from pytest_triton.plugin.hooks import pytest_report_header
from pytest_triton.plugin.hooks import pytest_runtest_call
from pytest_triton.plugin.hooks import pytest_runtest_makereport
from pytest_triton.plugin.hooks import pytest_sessionfinish
from pytest_triton.plugin.hooks import pytest_terminal_summary
from pytest_triton.plugin.hooks import pytest_testnodedown
from pytest_triton.plugin.hooks import pytest_unconfigure
from pytest_triton.plugin.hooks import triton_bench
from pytest_triton.plugin.hooks import triton_client
from pytest_triton.plugin.hooks import triton_repository
from pytest_triton.plugin.hooks import triton_server
from pytest_triton.plugin.hooks import triton_server_factory

__all__ = [
    "pytest_addoption",
    "pytest_benchmark_update_json",
    "pytest_benchmark_update_machine_info",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_fixture_setup",
    "pytest_load_initial_conftests",
    "pytest_make_collect_report",
    "pytest_report_header",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
    "pytest_unconfigure",
    "triton_bench",
    "triton_client",
    "triton_repository",
    "triton_server",
    "triton_server_factory",
]
