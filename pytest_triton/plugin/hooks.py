"""pytest hooks of pytest-triton: options, markers, lint items, fixtures and the summary.

Keep this module light: it imports only the options, the session's state, the errors and the session's run id
at the top. Every other module, the plugin's own items included, is imported by the hook that needs it, and
only once the session's options or state say it is used: a session that uses none of the plugin's options pays
for loading the options and these hooks, nothing more (tests/unit/plugin/test_light_import.py holds the list).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Generator
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.errors import PytestTritonError
from pytest_triton.plugin import options
from pytest_triton.plugin.state import BASELINE_KEY
from pytest_triton.plugin.state import BENCH_KEY
from pytest_triton.plugin.state import CONTRACTS_KEY
from pytest_triton.plugin.state import STATE_KEY
from pytest_triton.plugin.state import SessionState
from pytest_triton.plugin.state import session_state
from pytest_triton.plugin.state import started_servers
from pytest_triton.servers.session_run import begin_session_run
from pytest_triton.servers.session_run import end_session_run
from pytest_triton.servers.session_run import run_id

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench
    from pytest_triton.client.triton import TritonClients
    from pytest_triton.plugin.server_factory import TritonServerFactory
    from pytest_triton.repository.builder import RepositoryBuilder
    from pytest_triton.servers.protocol import TritonServer

MARKERS = {
    "triton_gpu": "Test needs a GPU; runs only with --triton-gpu (short form --gpu)",
    "triton_docker": "Test needs a Docker engine and the docker launcher (--triton-launcher docker)",
    "triton_cloud": "Test needs a SageMaker endpoint; runs only with --triton-cloud (short form --cloud)",
    "triton_lint": "Lint item of a model folder (select them with -m triton_lint)",
    "triton_contract": "Item of a contracts file (select them with -m triton_contract)",
    "triton_baseline": "Item of a --triton-baseline pair (select them with -m triton_baseline)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None]:
    # after every plugin and the initial conftests added their options, before pytest parses the command line:
    # the short forms (--gpu, --cloud, --endpoint) that nothing else defines become the plugin's options
    result = yield
    options.translate_short_forms(early_config, parser, args)
    return result


def pytest_report_header(config: pytest.Config) -> list[str]:
    forms = config.stash.get(options.SHORT_KEY, None)
    return forms.header() if forms is not None else []


_RUN_KEY = pytest.StashKey[tuple[str, "str | None"]]()  # (this session's run id, the one it replaced)


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")

    if hasattr(config, "workerinput"):
        run_id()  # an xdist worker shares its controller's run (from the environment)
    else:  # a run of this session's own, set before xdist starts its workers (a nested session never adopts one)
        config.stash[_RUN_KEY] = begin_session_run()
    options.check(config)
    if options.flag(config, "triton_gpu"):
        from pytest_triton.hardware import require_gpu
        from pytest_triton.plugin.workers import check_workers
        from pytest_triton.plugin.workers import configure_worker

        try:
            require_gpu()
        except PytestTritonError as exc:
            raise pytest.UsageError(str(exc)) from exc
        check_workers(config)
        configure_worker(config)
    if options.text(config, "triton_shard"):
        from pytest_triton.plugin.shards import configure_shard

        configure_shard(config)

    try:  # an unknown launcher or setting fails before any test runs, listing the known ones
        options.check_launcher(config)
        options.budgets_margin(config)
        if options.text(config, "triton_budgets"):  # a named budget file is checked before any test runs
            _bench(config)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    contracts = options.contract_paths(config)
    if contracts:
        from pytest_triton.plugin.contract_items import load_contracts

        load_contracts(config, contracts)
    if options.text(config, "triton_baseline"):
        from pytest_triton.plugin.baseline_items import configure_baseline

        configure_baseline(config)  # after the contracts: it pairs their variants


def pytest_sessionfinish(session: pytest.Session) -> None:
    # an xdist worker's rows: xdist's sessionfinish wrapper sends its workeroutput after every implementation
    if hasattr(session.config, "workeroutput"):
        from pytest_triton.plugin.workers import send_report

        send_report(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    config = getattr(node, "config", None)
    if isinstance(config, pytest.Config):
        from pytest_triton.plugin.workers import receive_report

        receive_report(node, config, lambda: _bench(config))


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or _RUN_KEY not in config.stash:  # a worker: its controller cleans up
        return

    run, previous = config.stash[_RUN_KEY]
    try:
        # what the session's run left (its workers' servers too): the launcher cleans up its own; a session that
        # neither named a launcher nor started a server loads none
        if options.launcher_chosen(config) or started_servers(config):
            from pytest_triton.servers.registry import end_session

            with contextlib.suppress(ConfigError):  # a launcher that cannot be loaded (the run stopped) started none
                end_session(options.launcher_name(config), run)
    finally:
        end_session_run(previous)


def _bench(config: pytest.Config) -> TritonBench:
    from pytest_triton.plugin.server_factory import session_bench
    from pytest_triton.plugin.workers import device_label

    if BENCH_KEY not in config.stash:
        config.stash[BENCH_KEY] = session_bench(config)
        config.stash[BENCH_KEY].device = device_label(config)
    return config.stash[BENCH_KEY]


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    # lint targets and contracts files join the session's own collect report before pytest walks it, as file
    # collectors do: node ids, --co, -k, -m and --deselect treat their items as any test
    report = yield
    if not isinstance(collector, pytest.Session) or not report.passed:
        return report
    config = collector.config
    if options.many(config, "triton_lint"):
        from pytest_triton.plugin.lint_items import lint_collectors

        report.result.extend(lint_collectors(collector))
    if CONTRACTS_KEY in config.stash:
        from pytest_triton.plugin.contract_items import contract_collectors

        report.result.extend(contract_collectors(collector))
    if BASELINE_KEY in config.stash:
        from pytest_triton.plugin.baseline_items import baseline_collectors

        report.result.extend(baseline_collectors(collector))
    return report


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if options.text(config, "triton_shard"):
        from pytest_triton.plugin.shards import select_shard

        select_shard(config, items)
    gpu, cloud = options.spelled(config, "triton_gpu"), options.spelled(config, "triton_cloud")
    for item in items:
        if item.get_closest_marker("triton_gpu") and not options.flag(config, "triton_gpu"):
            item.add_marker(pytest.mark.skip(reason=f"needs a GPU: run with {gpu} on a GPU runner"))
        # the launcher's name is asked only of a marked item: the default's name lives in the launcher registry
        if item.get_closest_marker("triton_docker") and options.launcher_name(config) != "docker":
            item.add_marker(pytest.mark.skip(reason="needs the docker launcher: run with --triton-launcher docker"))
        if item.get_closest_marker("triton_cloud") and options.launcher_name(config) != "sagemaker":
            item.add_marker(pytest.mark.skip(reason=f"needs a SageMaker endpoint: run with {cloud} (AWS credentials)"))


@pytest.fixture
def triton_repository(tmp_path: Path) -> RepositoryBuilder:
    """A model repository builder in a fresh folder; ``build()`` writes and lints it.

    Add ONNX models, python models, ensembles and TensorRT plans; configs are written through
    Triton's own schema and the result is linted before any server can start on it.
    """
    from pytest_triton.repository.builder import RepositoryBuilder

    return RepositoryBuilder(tmp_path / "model_repository")


@pytest.fixture(scope="session")
def triton_server_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TritonServerFactory]:
    """Start Triton servers for repositories built in tests; every server is stopped at the end.

    ``triton_server_factory.start(repository)`` serves a repository with the session's launcher
    (``--triton-launcher``) and returns it once ready; ``server.transport()`` and ``server.clients()`` reach it.
    """
    from pytest_triton.plugin.server_factory import TritonServerFactory

    try:
        factory = TritonServerFactory.from_config(request.config, tmp_path_factory.mktemp("triton-staging"))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture(scope="session")
def triton_server(request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory) -> TritonServer:
    """The session's Triton server, serving ``--triton-repository`` (or ini ``triton_repository``)."""
    return triton_server_factory.session_server(request.config)


@pytest.fixture
def triton_client(triton_server: TritonServer) -> TritonClients:
    """tritonclient HTTP and gRPC clients for the session's server, ``triton_server``.

    A server that has crashed fails the test here, at setup, saying how it ended, instead of "connection
    refused". A server a test starts itself hands out its own: ``triton_server_factory.start(PATH).clients()``.
    """
    from pytest_triton.client.triton import TritonClients

    triton_server.check_alive()
    return TritonClients.connect(triton_server)


@pytest.fixture(scope="session")
def triton_bench(request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory) -> TritonBench:
    """The session's latency bench: measures variants against this machine's budgets and keeps the report."""
    bench = _bench(request.config)
    bench.servers = triton_server_factory.servers  # a row at one of their URLs says its engine path
    return bench


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if started_servers(item.config):  # a failing test gets the logs of the servers it used
        from pytest_triton.plugin.server_factory import attach_server_logs

        attach_server_logs(item, report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest) -> Generator[None]:
    # servers started while a fixture is set up belong to it: a failing test gets the logs of the servers
    # its fixtures started, not of every server in the session

    with _owner(session_state(request.config), fixturedef.argname):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None]:
    try:
        with _owner(session_state(item.config), item.nodeid):
            return (yield)
    finally:  # before pytest builds the report from item.user_properties (JUnit XML's properties)
        if BENCH_KEY in item.config.stash:
            from pytest_triton.plugin.properties import record_bench_properties

            record_bench_properties(item)


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, object]) -> None:
    try:  # the session's bench, made now if no test made it yet: the compare and the save see the same one
        bench = _bench(config)
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    from pytest_triton.plugin.properties import machine_info as triton_machine_info

    triton_machine_info(bench, machine_info)


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: object, output_json: dict[str, object]) -> None:
    bench = config.stash.get(BENCH_KEY, None)
    if bench is not None:
        from pytest_triton.plugin.properties import run_info

        output_json["triton"] = run_info(bench)


@contextlib.contextmanager
def _owner(state: SessionState, name: str) -> Iterator[None]:
    state.starting.append(name)
    try:
        yield
    finally:
        state.starting.pop()


def _read_late_notes(terminalreporter: pytest.TerminalReporter, config: pytest.Config, exitstatus: int) -> None:
    """Read what the latency results could only get after the tests (each kind of late note reads its own),
    waiting up to --triton-cloud-metrics-wait; an interrupted session reads once and does not wait."""
    bench = config.stash.get(BENCH_KEY, None)
    if bench is None or not bench.late:
        return

    from pytest_triton.plugin.contract_items import add_late_notes

    wait = 0.0 if exitstatus == pytest.ExitCode.INTERRUPTED else options.number(config, "triton_cloud_metrics_wait")
    terminalreporter.section("triton late notes")
    add_late_notes(config, bench.read_late(wait_s=wait, progress=terminalreporter.write_line))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # an xdist worker's output is not shown: its rows went to the controller
        return
    if BASELINE_KEY in config.stash:
        from pytest_triton.plugin.baseline_items import write_verdict_section

        write_verdict_section(terminalreporter, config)
    _read_late_notes(terminalreporter, config, exitstatus)
    if STATE_KEY in config.stash:
        lines = config.stash[STATE_KEY].summary_lines()
        if lines:
            terminalreporter.section("triton")
            for line in lines:
                terminalreporter.write_line(line)
    report = options.text(config, "triton_report")
    if CONTRACTS_KEY in config.stash:
        _write_contracts_section(terminalreporter, config, report)
    bench = config.stash.get(BENCH_KEY, None)
    measured = bench is not None and bool(bench.results or bench.parity)
    if bench is not None and measured:
        from pytest_triton.plugin.server_factory import unsure_choice_notes

        terminalreporter.section("triton latency")
        if bench.budgets is None and not bench.declared_budgets:  # said once here, not on every row
            terminalreporter.write_line(
                "no budget file (--triton-budgets, ini triton_budgets, or budgets.toml beside the contracts file): "
                "latency is measured and reported, not asserted"
            )
        for line in bench.summary_lines() + unsure_choice_notes(config):
            terminalreporter.write_line(line)
    shard = _shard_entry(config)
    if report and (measured or shard is not None):  # a shard writes its report even when it measured nothing
        for path in _write_report(config, bench, report, shard):
            terminalreporter.write_line(f"report written: {path}")
    record = options.text(config, "triton_budgets_record")
    if record:
        _record_budgets(terminalreporter, config, bench, Path(record))


def _write_contracts_section(terminalreporter: pytest.TerminalReporter, config: pytest.Config, report: str) -> None:
    from pytest_triton.plugin.contract_items import summary_lines
    from pytest_triton.plugin.contract_items import write_contracts_report

    lines = summary_lines(config)
    if lines:
        terminalreporter.section("triton contracts")
        for line in lines:
            terminalreporter.write_line(line)
        if report:
            terminalreporter.write_line(f"report written: {write_contracts_report(config, report)}")


def _shard_entry(config: pytest.Config) -> dict[str, Any] | None:
    """The report's ``shard`` entry of a --triton-shard run (None otherwise)."""
    if not options.text(config, "triton_shard"):
        return None
    from pytest_triton.plugin.shards import shard_entry

    return shard_entry(config)


def _write_report(
    config: pytest.Config, bench: TritonBench | None, prefix: str, shard: dict[str, Any] | None
) -> list[Path]:
    """The session's report with its contract outcomes and (a shard's) ``shard`` entry, for a later merge."""
    from pytest_triton.bench.report import ReportData
    from pytest_triton.bench.report import write_report

    data = bench.report(config.rootpath) if bench is not None else ReportData()
    contracts = config.stash.get(CONTRACTS_KEY, None)
    outcomes = tuple(contracts.outcomes) if contracts is not None else ()
    return write_report(dataclasses.replace(data, contracts=outcomes, shard=shard), prefix)


def _record_budgets(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config, bench: TritonBench | None, path: Path
) -> None:
    """Write the run's latency rows to ``path`` as this hardware's budgets, and say so in the summary."""
    from pytest_triton import __version__
    from pytest_triton.bench.budgets_record import write_budgets

    margin = options.budgets_margin(config)
    rows = write_budgets(path, bench.results, bench.hardware, margin, version=__version__) if bench else []
    terminalreporter.section("triton budgets")
    if rows and bench is not None:
        terminalreporter.write_line(
            f"budgets recorded: {path} [{bench.hardware}] {', '.join(r.variant for r in rows)} "
            f"(measured x {margin:g}); later runs assert them (--triton-budgets {path})"
        )
    else:
        terminalreporter.write_line(
            f"budgets not recorded: no latency row was measured (latency items skip under xdist: -p no:xdist); "
            f"{path} left as it was"
        )
