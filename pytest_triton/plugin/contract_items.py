"""Contracts files as pytest items: ``FILE::parity[VARIANT]``, ``FILE::latency[VARIANT]`` and
``FILE::latency[VARIANT/BASELINE]`` (a relative budget), served through the session's fixtures.

Files come from ``--triton-contracts FILE``, ini ``triton_contracts`` and a ``[tool.pytest-triton.contracts]``
table in the root's pyproject.toml. They are read when pytest starts: an invalid one stops the run with one
error naming the file, the key and the value.
"""

from __future__ import annotations

import json
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
from pytest_triton.plugin.items import TritonItem
from pytest_triton.plugin.state import CONTRACTS_KEY
from pytest_triton.plugin.workers import device_label
from pytest_triton.plugin.workers import latency_skip_reason

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench
    from pytest_triton.contracts import ContractRun
    from pytest_triton.contracts import Declaration
    from pytest_triton.plugin.server_factory import TritonServerFactory


@dataclass
class ContractsState:
    declarations: list[Declaration] = field(default_factory=list)
    runs: dict[Path, ContractRun] = field(default_factory=dict)
    outcomes: list[dict[str, str]] = field(default_factory=list)  # one per item that ran, for the report
    streams: dict[Path, Any] = field(default_factory=dict)  # a declaration's StreamRun (its gRPC streams)
    device: str = ""  # the GPU(s) the session's servers see ("GPU 1"), on every outcome under --triton-gpu


def load_contracts(config: pytest.Config, paths: list[Path]) -> None:
    """Read and validate every contracts file (an invalid one is a usage error: the run stops before tests)."""
    from pytest_triton.contracts.declaration import check_declared_files
    from pytest_triton.contracts.declaration import load_declaration
    from pytest_triton.errors import ConfigError
    from pytest_triton.servers.registry import launcher_class

    state = config.stash[CONTRACTS_KEY] = ContractsState(device=device_label(config))
    # each problem is one line that names the file, line:col and key: no traceback, no error per item
    for path in paths:
        try:
            declaration = load_declaration(path, check_launcher=launcher_class)
        except ConfigError as exc:
            raise pytest.UsageError(f"invalid contracts file: {exc}") from None
        try:
            check_declared_files(declaration)
        except ConfigError as exc:
            raise pytest.UsageError(f"invalid file named by the contracts file {path}: {exc}") from None
        state.declarations.append(declaration)


class ContractFile(pytest.File):
    """A contracts file (read and checked when pytest started): one item per parity and latency check."""

    def __init__(self, *, declaration: Declaration, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.declaration = declaration

    def collect(self) -> list[pytest.Item]:
        declaration = self.declaration
        # (item name, its test, the variant it belongs to: a shard keeps a variant's items together)
        made: list[tuple[str, Callable[..., None], str]] = [
            (f"parity[{v.name}]", _parity(declaration, v.name), v.name) for v in declaration.candidates
        ]
        if declaration.latency is not None:
            made += [(f"latency[{name}]", _latency(declaration, name), name) for name in declaration.latency.variants]
            made += [
                (f"latency[{r.name}]", _relative(declaration, i), r.variant)
                for i, r in enumerate(declaration.latency.relative)
            ]
        items: list[pytest.Item] = []
        for name, function, variant in made:
            item = ContractItem.from_parent(self, name=name, callobj=function)
            item.variant = variant
            item.add_marker("triton_contract")
            items.append(item)
        return items


class ContractItem(TritonItem, pytest.Function):
    """One contract check; fixtures come from the test function made for it."""

    kind = "triton-contract"
    line = 0
    plain_failures = (ContractFailure, AssertionError)
    variant = ""  # the variant of the contracts file it checks (set by ContractFile.collect)


def _run(request: pytest.FixtureRequest, declaration: Declaration, factory: TritonServerFactory) -> ContractRun:
    from pytest_triton.contracts import ContractRun
    from pytest_triton.contracts import ContractServers

    state = request.config.stash[CONTRACTS_KEY]
    if declaration.path not in state.runs:
        from pytest_triton.plugin.server_factory import TritonServerFactory

        def factory_for(launcher: str) -> TritonServerFactory:
            # the session's options and state: its servers get their logs attached like the session's own
            return TritonServerFactory(launcher, factory.options, factory.state)

        staging = request.getfixturevalue("tmp_path_factory").mktemp("contracts")
        servers = ContractServers(factory, staging, gpu=factory.options.gpu, factory_for=factory_for)
        request.config.add_cleanup(servers.stop_all)
        state.runs[declaration.path] = ContractRun(declaration, servers)
    return state.runs[declaration.path]


def _streams(request: pytest.FixtureRequest, declaration: Declaration, factory: TritonServerFactory) -> Any:
    """The declaration's streamed variants (a StreamRun), its streams closed before its servers stop."""
    from pytest_triton.contracts.stream_run import StreamRun

    state = request.config.stash[CONTRACTS_KEY]
    if declaration.path not in state.streams:
        run = _run(request, declaration, factory)
        state.streams[declaration.path] = StreamRun(run)
        request.config.add_cleanup(state.streams[declaration.path].close)
    return state.streams[declaration.path]


def _streamed(declaration: Declaration, name: str) -> bool:
    variant = declaration.variants.get(name)
    return variant is not None and variant.protocol == "stream"


def _record(request: pytest.FixtureRequest, check: str, status: str, text: str, *, variant: str = "") -> None:
    state = request.config.stash[CONTRACTS_KEY]
    request.node.user_properties.append(("triton_verdict", status))  # JUnit XML shows it on any CI
    outcome = {"item": request.node.nodeid, "check": check, "status": status, "text": text}
    if state.device:
        outcome["device"] = state.device
    if variant:  # the latency report's name of what was measured: its session-end notes join this text
        outcome["variant"] = variant
    state.outcomes.append(outcome)


def add_late_notes(config: pytest.Config, notes: dict[str, list[str]]) -> None:
    """Append the notes read at the session's end (CloudWatch's split) to the latency outcomes they belong to,
    by the latency report's variant name."""
    state = config.stash.get(CONTRACTS_KEY, None)
    for outcome in state.outcomes if state is not None else []:
        for note in notes.get(outcome.get("variant", ""), []):
            outcome["text"] += f"\n{note}"


def _skip(reason: str) -> NoReturn:
    """Skip, reported at the contracts file (as a skip mark would be), not at this module's line."""
    raise pytest.skip.Exception(reason, _use_item_location=True)


def _parity(declaration: Declaration, name: str) -> Callable[..., None]:
    def contract_parity(
        request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory, triton_bench: TritonBench
    ) -> None:
        from pytest_triton.contracts import VariantUnavailable
        from pytest_triton.errors import PytestTritonError

        __tracebackhide__ = True
        try:
            if _streamed(declaration, name):
                outcome = _streams(request, declaration, triton_server_factory).parity(name)
            else:
                outcome = _run(request, declaration, triton_server_factory).parity(name)
        except VariantUnavailable as exc:
            _record(request, f"parity[{name}]", "skipped", exc.reason)
            _skip(f"variant {name!r}: {exc.reason}")
        except PytestTritonError as exc:  # a request refused, a server that did not start, a bad input rule
            _record(request, f"parity[{name}]", "failed", str(exc))
            raise ContractFailure(f"parity of variant {name!r}: {exc}") from exc
        _record(request, f"parity[{name}]", "passed" if outcome.ok else "failed", outcome.message())
        # the latency report's parity table, under the variant's name in the latency table
        variant = declaration.variants[name]
        numbers, labels = outcome.reports()
        how = f"{variant.protocol}, {declaration.path.name}"  # two files may both have a variant of this name
        triton_bench.record_parity(variant.budget_name(triton_bench.hardware), numbers, labels, transport=how)
        request.node.add_report_section("call", "triton-contract", outcome.message())
        if not outcome.ok:
            raise ContractFailure(outcome.message())

    return contract_parity


def _benchmark(request: pytest.FixtureRequest, declaration: Declaration) -> Any:
    """pytest-benchmark's fixture where the declaration asks for it (``[latency] benchmark = true``), else None."""
    if declaration.latency is None or not declaration.latency.benchmark:
        return None
    if not request.config.pluginmanager.hasplugin("benchmark"):
        raise ContractFailure(
            f"{declaration.path.name}: latency.benchmark=true needs pytest-benchmark "
            "(pip install pytest-benchmark, or remove the key)"
        )
    return request.getfixturevalue("benchmark")


def _latency(declaration: Declaration, name: str) -> Callable[..., None]:
    def contract_latency(
        request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory, triton_bench: TritonBench
    ) -> None:
        from pytest_triton.bench.outcome import outcome_word
        from pytest_triton.contracts import VariantUnavailable
        from pytest_triton.contracts.latency_run import measure_variant
        from pytest_triton.errors import PytestTritonError

        __tracebackhide__ = True
        variant = declaration.variants.get(name)  # None: the ONNX reference
        budget_name = variant.budget_name(triton_bench.hardware) if variant else name
        reason = latency_skip_reason(request.config)
        try:
            if reason is None and _streamed(declaration, name):
                streamed = _streams(request, declaration, triton_server_factory).latency(name, triton_bench)
                _stream_verdict(request, name, streamed)
                return
            if reason is None:
                run = _run(request, declaration, triton_server_factory)
                result = measure_variant(run, name, triton_bench, benchmark=lambda: _benchmark(request, declaration))
        except VariantUnavailable as exc:
            reason = f"variant {name!r}: {exc.reason}"
        except PytestTritonError as exc:
            _record(request, f"latency[{name}]", "failed", str(exc))
            raise ContractFailure(f"latency of variant {name!r}: {exc}") from exc
        if reason is not None:
            _record(request, f"latency[{name}]", "skipped", reason)
            triton_bench.record_skipped(budget_name, reason)  # a SKIPPED row in the latency report
            _skip(reason)
        word = outcome_word(result.verdict.status, triton_bench.unstable, triton_bench.inconclusive)
        text = f"{result.variant}: {word}: {result.verdict.reason}"
        _record(request, f"latency[{name}]", word, text, variant=result.variant)
        triton_bench.check(result)  # passed, unstable: warns with the plugin's own class

    return contract_latency


def _stream_verdict(request: pytest.FixtureRequest, name: str, outcome: Any) -> None:
    """Record a streamed variant's latency (JUnit XML properties too) and fail on a broken stream limit."""
    __tracebackhide__ = True
    measured = outcome.measured
    for key in ("ttft_p50_ms", "gap_p99_ms", "total_p50_ms", "responses_per_s"):
        request.node.user_properties.append((f"triton_{key}[{outcome.budget_name}]", round(measured.value(key), 4)))
    _record(request, f"latency[{name}]", outcome.word, outcome.message(), variant=outcome.budget_name)
    request.node.add_report_section("call", "triton-contract", outcome.message())
    if outcome.verdict.failed:
        raise ContractFailure(f"latency of streamed variant {name!r}: {outcome.message()}")


def _relative(declaration: Declaration, index: int) -> Callable[..., None]:
    def contract_relative_latency(
        request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory, triton_bench: TritonBench
    ) -> None:
        from pytest_triton.contracts import VariantUnavailable
        from pytest_triton.contracts.latency_run import measure_relative
        from pytest_triton.errors import PytestTritonError
        from pytest_triton.errors import TritonInconclusiveWarning

        __tracebackhide__ = True
        assert declaration.latency is not None
        rule = declaration.latency.relative[index]
        reason = latency_skip_reason(request.config)
        try:
            if reason is None:
                outcome = measure_relative(_run(request, declaration, triton_server_factory), rule, triton_bench)
        except VariantUnavailable as exc:
            reason = f"variant {exc.variant!r}: {exc.reason}"
        except PytestTritonError as exc:
            _record(request, f"latency[{rule.name}]", "failed", str(exc))
            raise ContractFailure(f"relative latency {rule.name!r}: {exc}") from exc
        if reason is not None:
            _record(request, f"latency[{rule.name}]", "skipped", reason)
            _skip(reason)
        _record(request, f"latency[{rule.name}]", outcome.word, outcome.message())
        request.node.add_report_section("call", "triton-contract", outcome.message())
        if not outcome.ok:
            raise ContractFailure(outcome.message())
        if outcome.open:
            warnings.warn(TritonInconclusiveWarning(outcome.message()), stacklevel=1)

    return contract_relative_latency


def contract_collectors(session: pytest.Session) -> list[pytest.Collector]:
    """One collector per contracts file of the run, for the session's own collect report."""
    state = session.config.stash.get(CONTRACTS_KEY, None)
    if state is None:
        return []
    return [ContractFile.from_parent(session, path=d.path, declaration=d) for d in state.declarations]


def summary_lines(config: pytest.Config) -> list[str]:
    """One line per contract item that ran: its check, status and the first line of its report."""
    state = config.stash.get(CONTRACTS_KEY, None)
    if state is None:
        return []
    return [f"{o['status'].upper():8} {o['item']}: {o['text'].splitlines()[0]}" for o in state.outcomes]


def write_contracts_report(config: pytest.Config, prefix: str) -> Path | None:
    """``PREFIX.contracts.json``: every contract item's outcome and full report text."""
    state = config.stash.get(CONTRACTS_KEY, None)
    if state is None or not state.outcomes:
        return None
    path = Path(f"{prefix}.contracts.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    from pytest_triton.archive.files import write_private

    write_private(path, json.dumps(state.outcomes, indent=2) + "\n")
    return path
