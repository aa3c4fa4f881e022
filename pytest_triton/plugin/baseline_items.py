"""The pytest side of baseline runs: ``--triton-baseline REF`` gives every declared variant a pair of items,
``FILE::parity[VARIANT@REF]`` and ``FILE::latency[VARIANT/VARIANT@REF]``, and the run a verdict table.

The plugin's hooks call :func:`configure_baseline`, :func:`baseline_collectors` and :func:`write_verdict_section`; the
options are in the one table (:mod:`pytest_triton.plugin.options`). The base is read once, when pytest starts:
an unknown ref stops the run there.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import NoReturn

import pytest

from pytest_triton.errors import ContractFailure
from pytest_triton.errors import PytestTritonError
from pytest_triton.errors import TritonInconclusiveWarning
from pytest_triton.errors import VariantUnavailable
from pytest_triton.plugin import options
from pytest_triton.plugin.contract_items import ContractItem
from pytest_triton.plugin.shards import contracts_name
from pytest_triton.plugin.shards import in_shard
from pytest_triton.plugin.state import BASELINE_KEY
from pytest_triton.plugin.state import CONTRACTS_KEY
from pytest_triton.plugin.workers import latency_skip_reason

if TYPE_CHECKING:
    from pytest_triton.baseline.measure import PairRun
    from pytest_triton.baseline.pairs import Pair
    from pytest_triton.baseline.source import BaseTree
    from pytest_triton.baseline.verdict import VerdictRow
    from pytest_triton.bench.session import TritonBench
    from pytest_triton.contracts.serving import ContractServers
    from pytest_triton.plugin.server_factory import TritonServerFactory


@dataclass
class BaselineState:
    base: BaseTree
    pairs: list[Pair] = field(default_factory=list)
    rows: dict[tuple[Path, str], VerdictRow] = field(default_factory=dict)
    runs: dict[tuple[Path, str], PairRun] = field(default_factory=dict)
    servers: dict[Path, ContractServers] = field(default_factory=dict)
    ran: int = 0  # baseline items that ran (none, e.g. --collect-only or deselected: no table)


def configure_baseline(config: pytest.Config) -> None:
    """Open the base of ``--triton-baseline`` and pair the contracts' variants (after the contracts are read)."""
    ref = options.text(config, "triton_baseline")
    if not ref:
        return
    from pytest_triton.baseline import VerdictRow
    from pytest_triton.baseline import find_pairs
    from pytest_triton.baseline import open_base
    from pytest_triton.errors import ConfigError
    from pytest_triton.servers.registry import launcher_class

    contracts = config.stash.get(CONTRACTS_KEY, None)
    declarations = contracts.declarations if contracts is not None else []
    if not declarations:
        raise pytest.UsageError(
            f"--triton-baseline={ref!r} compares declared variants, and this run has no contracts file: "
            "add --triton-contracts FILE (or ini triton_contracts)"
        )
    work = Path(tempfile.mkdtemp(prefix="pytest-triton-baseline-"))  # ours; removed when pytest ends
    config.add_cleanup(lambda: shutil.rmtree(work, ignore_errors=True))
    try:
        state = BaselineState(open_base(str(ref), config.rootpath, work))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    for declaration in declarations:
        for pair in find_pairs(declaration, state.base, check_launcher=launcher_class):
            state.pairs.append(pair)
            row = VerdictRow(
                contracts_name(config, declaration.path), pair.name, pair.base_name, pair.status, pair.reason
            )
            state.rows[(declaration.path, pair.name)] = row
    config.stash[BASELINE_KEY] = state


def _skip(reason: str) -> NoReturn:
    raise pytest.skip.Exception(reason, _use_item_location=True)


def _pair_run(request: pytest.FixtureRequest, pair: Pair, factory: TritonServerFactory) -> PairRun:
    from pytest_triton.baseline.measure import PairRun
    from pytest_triton.contracts.serving import ContractServers
    from pytest_triton.plugin.server_factory import TritonServerFactory

    state = request.config.stash[BASELINE_KEY]
    path = pair.declaration.path
    if path not in state.servers:

        def factory_for(launcher: str) -> TritonServerFactory:
            return TritonServerFactory(launcher, factory.options, factory.state)

        staging = request.getfixturevalue("tmp_path_factory").mktemp("baseline")
        servers = ContractServers(factory, staging, gpu=factory.options.gpu, factory_for=factory_for)
        request.config.add_cleanup(servers.stop_all)
        state.servers[path] = servers
    if (path, pair.name) not in state.runs:
        state.runs[(path, pair.name)] = PairRun(pair, state.servers[path])
    return state.runs[(path, pair.name)]


def _row(request: pytest.FixtureRequest, pair: Pair) -> VerdictRow:
    """The verdict row of ``pair``, counting the item as run."""
    state = request.config.stash[BASELINE_KEY]
    state.ran += 1
    return state.rows[(pair.declaration.path, pair.name)]


def _not_compared(config: pytest.Config, pair: Pair) -> str | None:
    if pair.compared(unchanged=options.flag(config, "triton_baseline_unchanged")):
        return None
    return f"variant {pair.name!r}: {pair.reason}"


def _unavailable(row: VerdictRow, pair: Pair, exc: VariantUnavailable) -> NoReturn:
    """Skip the item, the row saying why; a base that cannot be served is marked as the base's."""
    row.reason = exc.reason
    if exc.variant == pair.base_name:
        row.status = "the base cannot be served"
    _skip(f"variant {exc.variant!r}: {exc.reason}")


def _parity(pair: Pair) -> Callable[..., None]:
    def baseline_parity(
        request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory, triton_bench: TritonBench
    ) -> None:
        from pytest_triton.baseline.measure import worst_element

        __tracebackhide__ = True
        row = _row(request, pair)
        reason = _not_compared(request.config, pair)
        if reason is not None:
            _skip(reason)
        try:
            outcome = _pair_run(request, pair, triton_server_factory).parity()
        except VariantUnavailable as exc:
            _unavailable(row, pair, exc)
        except PytestTritonError as exc:
            row.parity_ok, row.parity_text = False, str(exc).splitlines()[0]
            raise ContractFailure(f"parity of {pair.name!r} against {pair.base_name!r}: {exc}") from exc
        row.parity_ok, row.parity_text = outcome.ok, worst_element(outcome)
        request.node.add_report_section("call", "triton-baseline", outcome.message())
        if not outcome.ok:
            raise ContractFailure(outcome.message())

    return baseline_parity


def _latency(pair: Pair) -> Callable[..., None]:
    def baseline_latency(
        request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory, triton_bench: TritonBench
    ) -> None:
        __tracebackhide__ = True
        row = _row(request, pair)
        reason = _not_compared(request.config, pair)
        if reason is None and (reason := latency_skip_reason(request.config)) is not None:
            row.notes.append(f"latency skipped: {reason}")
        if reason is not None:
            _skip(reason)
        try:
            outcome = _pair_run(request, pair, triton_server_factory).latency(triton_bench)
        except VariantUnavailable as exc:
            _unavailable(row, pair, exc)
        except PytestTritonError as exc:
            row.latency_error = str(exc)
            raise ContractFailure(f"latency of {pair.name!r} against {pair.base_name!r}: {exc}") from exc
        row.latency = outcome
        request.node.add_report_section("call", "triton-baseline", outcome.message())
        if not outcome.ok:
            raise ContractFailure(outcome.message())
        if outcome.word == "inconclusive":
            warnings.warn(TritonInconclusiveWarning(outcome.message()), stacklevel=1)

    return baseline_latency


class BaselineFile(pytest.File):
    """A contracts file's baseline pairs: two items per declared variant (read when pytest started)."""

    def __init__(self, *, pairs: list[Pair], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pairs = pairs

    def collect(self) -> list[pytest.Item]:
        items: list[pytest.Item] = []
        for pair in self.pairs:
            for name, function in ((pair.parity_item, _parity(pair)), (pair.latency_item, _latency(pair))):
                item = ContractItem.from_parent(self, name=name, callobj=function)
                item.variant = pair.name  # a shard keeps a pair's items together
                item.add_marker("triton_baseline")
                items.append(item)
        return items


def baseline_collectors(session: pytest.Session) -> list[BaselineFile]:
    """The pairs, one collector per contracts file: they join the session's collect report as the contracts
    files' own items do (node ids, -k, -m)."""
    state = session.config.stash.get(BASELINE_KEY, None)
    if state is None:
        return []
    by_file: dict[Path, list[Pair]] = {}
    for pair in state.pairs:
        by_file.setdefault(pair.declaration.path, []).append(pair)
    return [BaselineFile.from_parent(session, path=path, pairs=own) for path, own in by_file.items()]


def write_verdict_section(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """The ``triton verdict`` section, and the table written to --triton-verdict FILE and the step summary."""
    state = config.stash.get(BASELINE_KEY, None)
    if state is None or not state.ran or hasattr(config, "workerinput"):
        return
    from pytest_triton.baseline.verdict import render_verdict
    from pytest_triton.baseline.verdict import write_verdict

    rows = [row for row in state.rows.values() if in_shard(config, row.contracts, row.variant)]  # --triton-shard
    text = render_verdict(rows, base=state.base.describe())
    terminalreporter.section("triton verdict")
    for line in text.splitlines()[1:]:  # the marker is for the comment, not the terminal
        terminalreporter.write_line(line)
    named = options.text(config, "triton_verdict")
    path = Path(named) if named else None
    for written in write_verdict(text, path, step_summary=os.environ.get("GITHUB_STEP_SUMMARY")):
        terminalreporter.write_line(f"verdict written: {written}")
