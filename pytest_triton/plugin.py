"""pytest hooks of pytest-triton: options, markers, lint items, fixtures and the summary.

Keep this module light: nothing heavy (tritonclient, onnxruntime, docker, boto3) is imported
here; fixtures import launchers and clients when a test asks for them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_triton.contract_items import collect_contract_items
from pytest_triton.contract_items import load_contracts
from pytest_triton.lint_items import pytest_make_collect_report  # noqa: F401  (a hook: lint collectors)

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench
    from pytest_triton.client.triton import TritonClients
    from pytest_triton.repository.builder import RepositoryBuilder
    from pytest_triton.servers.base import TritonLauncher
    from pytest_triton.serving import TritonServerFactory
    from pytest_triton.session_state import SessionState

MARKERS = {
    "gpu": "Test needs a GPU; runs only with --gpu",
    "docker": "Test needs a Docker engine and the docker launcher (--triton-launcher docker)",
    "cloud": "Test needs a SageMaker endpoint; runs only with --cloud (the sagemaker launcher)",
    "triton_lint": "Lint item of a model folder (select them with -m triton_lint)",
    "triton_contract": "Item of a contracts file (select them with -m triton_contract)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("triton", "Triton model repositories (pytest-triton)")
    group.addoption("--gpu", action="store_true", default=False, help="Require GPUs; run tests marked gpu")
    group.addoption(
        "--triton-launcher",
        metavar="NAME",
        default=None,
        help="How to get a Triton server: local (a tritonserver process, the default), url (a running one, "
        "--triton-url), docker (a Triton image, --triton-image), or a launcher another package registers",
    )
    group.addoption("--tritonserver", metavar="PATH", default=None, help="tritonserver binary for the local launcher")
    group.addoption("--triton-url", metavar="URL", default=None, help="HTTP URL of a running Triton (url launcher)")
    group.addoption(
        "--triton-image",
        metavar="IMAGE",
        default=None,
        help="Triton image for the docker launcher (default nvcr.io/nvidia/tritonserver:26.05-py3); with "
        "--triton-launcher sagemaker-local, the image it runs in (default: no container)",
    )
    group.addoption(
        "--triton-network",
        choices=("host", "bridge"),
        default=None,
        help="Docker launcher networking: host (default; ports chosen free, bound on 127.0.0.1) or bridge "
        "(ports published on 127.0.0.1)",
    )
    group.addoption(
        "--triton-shm-size", metavar="SIZE", default=None, help="Shared memory of the container (default 1g)"
    )
    group.addoption(
        "--triton-gpu-devices",
        metavar="IDS",
        default=None,
        help="GPUs given to the container with --gpu, e.g. 0,1 (default all)",
    )
    group.addoption(
        "--triton-pull",
        choices=("missing", "always", "never"),
        default=None,
        help="When the docker launcher pulls its image (default missing)",
    )
    group.addoption(
        "--triton-ryuk",
        action="store_true",
        default=None,
        help="Let testcontainers start its Ryuk reaper container (it must be pullable; off by default)",
    )
    group.addoption(
        "--triton-repository",
        metavar="PATH",
        default=None,
        help="Model repository served by the triton_server fixture",
    )
    group.addoption(
        "--triton-lint",
        metavar="PATH",
        action="append",
        default=[],
        help="Lint this repository, model folder or model.tar.gz as test items (repeatable)",
    )
    group.addoption(
        "--triton-lint-limit",
        metavar="NAME=N",
        action="append",
        default=[],
        help="Raise or lower a lint limit, e.g. max_config_bytes=32M (repeatable; see python -m pytest_triton lint -h)",
    )
    group.addoption(
        "--triton-budgets",
        metavar="FILE",
        default=None,
        help="Latency budget file (default: ini triton_budgets, model_repos/budgets.toml)",
    )
    group.addoption(
        "--triton-report", metavar="PATH", default=None, help="Write the latency report to PATH.json, PATH.md, PATH.svg"
    )
    group.addoption(
        "--triton-hardware",
        metavar="NAME",
        default=None,
        help="Budget hardware key to use instead of this machine's (e.g. nvidia-a10g)",
    )
    group.addoption(
        "--triton-contracts",
        metavar="FILE",
        action="append",
        default=[],
        help="Contracts file (TOML, or a pyproject.toml's [tool.pytest-triton.contracts]) run as items (repeatable)",
    )
    group.addoption(
        "--triton-unstable",
        choices=("warn", "fail"),
        default=None,
        help="What an unstable latency measurement within budget does: warn (default) or fail; over budget fails",
    )
    _add_cloud_options(parser)
    parser.addini("triton_budgets", "Latency budget file", default="model_repos/budgets.toml")
    parser.addini("triton_unstable", "Unstable latency measurement within budget: warn or fail", default="warn")
    parser.addini(
        "triton_contracts", "Contracts files run as items (like --triton-contracts)", type="paths", default=[]
    )
    parser.addini(
        "triton_window_ms",
        "Latency measurement window in ms; windows repeat until the last three agree within 10%",
        default="3000",
    )
    parser.addini("triton_lint_paths", "Paths linted as test items (like --triton-lint)", type="paths", default=[])
    parser.addini(
        "triton_lint_limits", "Lint limits as NAME=N lines (like --triton-lint-limit)", type="linelist", default=[]
    )
    parser.addini(
        "triton_cloud_metrics_wait",
        "Seconds to wait at the session's end for CloudWatch's split of the last SageMaker window (0: read once)",
        default="180",
    )
    parser.addini("triton_repository", "Model repository served by the triton_server fixture", default="")
    parser.addini("triton_launcher", "Default launcher (local, url or a registered one)", default="")
    parser.addini("triton_startup_timeout", "Seconds to wait for the server and its models", default="120")
    parser.addini(
        "triton_container_startup_timeout",
        "Seconds the docker launcher waits for its server and models (a first TensorRT start builds engines)",
        default="600",
    )


def _add_cloud_options(parser: pytest.Parser) -> None:
    cloud = parser.getgroup("triton-cloud", "SageMaker endpoints (pytest-triton --cloud)")
    cloud.addoption(
        "--cloud",
        action="store_true",
        default=False,
        help="Deploy the repository to a SageMaker endpoint for the run and remove it after "
        "(with --endpoint: test that endpoint, read-only)",
    )
    cloud.addoption("--endpoint", metavar="NAME", default=None, help="With --cloud: reuse this InService endpoint")
    cloud.addoption("--s3-uri", metavar="URI", default=None, help="Where model.tar.gz goes (s3://BUCKET[/PREFIX])")
    cloud.addoption("--instance-type", metavar="TYPE", default=None, help="Endpoint instance type (ml.g5.xlarge)")
    cloud.addoption("--triton-version", metavar="X.Y", default=None, help="sagemaker-tritonserver version (26.05)")
    cloud.addoption("--image", metavar="URI", default=None, help="Container image, instead of the region's table")
    cloud.addoption("--sagemaker-role", metavar="ARN", default=None, help="Execution role of the endpoint's model")
    cloud.addoption(
        "--cloud-metrics-wait",
        metavar="SECONDS",
        default=None,
        help="At the session's end, wait up to SECONDS after the last latency window for CloudWatch's "
        "ModelLatency/OverheadLatency (default: ini triton_cloud_metrics_wait, 180; 0: read once)",
    )


def _cloud_metrics_wait(config: pytest.Config) -> float:
    """``--cloud-metrics-wait`` (else ini ``triton_cloud_metrics_wait``) in seconds; a UsageError if not >= 0."""
    given = config.getoption("cloud_metrics_wait")
    text = str(given if given is not None else config.getini("triton_cloud_metrics_wait"))
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also NaN
        name = "--cloud-metrics-wait" if given is not None else "ini triton_cloud_metrics_wait"
        raise pytest.UsageError(f"{name}={text!r}: expected seconds >= 0 (0: read CloudWatch once, no wait)")
    return seconds


def _check_cloud_options(config: pytest.Config) -> None:
    _cloud_metrics_wait(config)
    cloud_only = [
        f"--{o.replace('_', '-')}" for o in ("endpoint", "s3_uri", "instance_type", "image") if config.getoption(o)
    ]
    if not config.getoption("cloud"):
        if cloud_only:
            raise pytest.UsageError(f"{', '.join(cloud_only)} only apply with --cloud; add --cloud")
        return
    chosen = config.getoption("triton_launcher")
    if chosen and chosen != "sagemaker":
        raise pytest.UsageError(f"--cloud uses the sagemaker launcher; drop --triton-launcher {chosen}")
    config.option.triton_launcher = "sagemaker"


_RUN_KEY = pytest.StashKey[tuple[str, "str | None"]]()  # (this session's run id, the one it replaced)


def pytest_configure(config: pytest.Config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    from pytest_triton.servers.docker.owners import begin_session_run
    from pytest_triton.servers.docker.owners import run_id

    if hasattr(config, "workerinput"):
        run_id()  # an xdist worker shares its controller's run (from the environment)
    else:  # a run of this session's own, set before xdist starts its workers (a nested session never adopts one)
        config.stash[_RUN_KEY] = begin_session_run()
    if config.getoption("gpu"):
        from pytest_triton.errors import PytestTritonError
        from pytest_triton.hardware import require_gpu

        try:
            require_gpu()
        except PytestTritonError as exc:
            raise pytest.UsageError(str(exc)) from exc
    _check_cloud_options(config)
    chosen = config.getoption("triton_launcher")
    if chosen:  # an unknown launcher fails before any test runs, listing the known ones
        from pytest_triton.errors import ConfigError
        from pytest_triton.servers.registry import launcher_class

        try:
            launcher_class(chosen)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
    if config.getoption("triton_budgets"):  # a named budget file is checked before any test runs
        from pytest_triton.errors import ConfigError

        try:
            _bench(config)
        except ConfigError as exc:
            raise pytest.UsageError(str(exc)) from exc
    load_contracts(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or _RUN_KEY not in config.stash:  # a worker: its controller cleans up
        return
    from pytest_triton.servers.docker.owners import end_session_run

    run, previous = config.stash[_RUN_KEY]
    launcher = config.getoption("triton_launcher") or config.getini("triton_launcher")
    if launcher == "docker":  # this session's containers: its own, and those of its dead workers
        from pytest_triton.servers.docker.owners import end_of_run

        end_of_run(run)
    end_session_run(previous)


def _bench(config: pytest.Config) -> TritonBench:
    from pytest_triton.bench.sampling import WindowPolicy
    from pytest_triton.bench.session import TritonBench
    from pytest_triton.errors import ConfigError
    from pytest_triton.serving import session_hardware
    from pytest_triton.session_state import BENCH_KEY

    if BENCH_KEY not in config.stash:
        named = config.getoption("triton_budgets")
        path = named or str(config.rootpath / str(config.getini("triton_budgets")))
        unstable = config.getoption("triton_unstable") or str(config.getini("triton_unstable"))
        hardware, source = session_hardware(config)  # under --cloud: the endpoint's GPU
        bench = TritonBench.from_options(path, hardware, required=named is not None, unstable=unstable)
        bench.hardware_source = source
        window = str(config.getini("triton_window_ms"))
        try:
            window_ms = float(window)
        except ValueError:
            raise ConfigError(f"ini triton_window_ms={window!r} is not a number of milliseconds") from None
        bench.policy = WindowPolicy(mode="time", window_ms=window_ms)
        config.stash[BENCH_KEY] = bench
    return config.stash[BENCH_KEY]


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    items.extend(collect_contract_items(session))
    launcher = config.getoption("triton_launcher") or config.getini("triton_launcher") or "local"
    for item in items:
        if item.get_closest_marker("gpu") and not config.getoption("gpu"):
            item.add_marker(pytest.mark.skip(reason="needs a GPU: run with --gpu on a GPU runner"))
        if item.get_closest_marker("docker") and launcher != "docker":
            item.add_marker(pytest.mark.skip(reason="needs the docker launcher: run with --triton-launcher docker"))
        if item.get_closest_marker("cloud") and launcher != "sagemaker":
            item.add_marker(pytest.mark.skip(reason="needs a SageMaker endpoint: run with --cloud (AWS credentials)"))


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
    (``--triton-launcher``) and returns it once ready; ``launcher.transport()`` reaches it.
    """
    from pytest_triton.errors import ConfigError
    from pytest_triton.serving import TritonServerFactory

    try:
        factory = TritonServerFactory.from_config(request.config, tmp_path_factory.mktemp("triton-staging"))
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from exc
    try:
        yield factory
    finally:
        factory.stop_all()


@pytest.fixture(scope="session")
def triton_server(request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory) -> TritonLauncher:
    """The session's Triton server, serving ``--triton-repository`` (or ini ``triton_repository``)."""
    return triton_server_factory.session_server(request.config)


@pytest.fixture
def triton_client(request: pytest.FixtureRequest, triton_server_factory: TritonServerFactory) -> TritonClients:
    """tritonclient HTTP and gRPC clients for the session's server, or else the newest one the test started.

    With ``--triton-repository`` they are bound to ``triton_server`` at setup: a server that has crashed fails
    the test there, saying how it ended, instead of "connection refused". Without it they bind, when first
    used, to the newest server ``triton_server_factory`` started.
    """
    from pytest_triton.client.triton import TritonClients

    config = request.config
    if triton_server_factory.configured_repository(config) or triton_server_factory.launcher == "url":
        server = triton_server_factory.session_server(config)
        server.check_alive()
        return TritonClients.connect(server)
    return TritonClients(lambda: triton_server_factory.default_server(config))


@pytest.fixture(scope="session")
def triton_bench(request: pytest.FixtureRequest) -> TritonBench:
    """The session's latency bench: measures variants against this machine's budgets and keeps the report."""
    return _bench(request.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    from pytest_triton.serving import attach_server_logs

    attach_server_logs(item, report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest) -> Generator[None]:
    # servers started while a fixture is set up belong to it: a failing test gets the logs of the servers
    # its fixtures started, not of every server in the session
    from pytest_triton.session_state import session_state

    with _owner(session_state(request.config), fixturedef.argname):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None]:
    from pytest_triton.session_state import session_state

    with _owner(session_state(item.config), item.nodeid):
        return (yield)


@contextlib.contextmanager
def _owner(state: SessionState, name: str) -> Iterator[None]:
    state.starting.append(name)
    try:
        yield
    finally:
        state.starting.pop()


def _read_late_notes(terminalreporter: pytest.TerminalReporter, config: pytest.Config, exitstatus: int) -> None:
    """Read what the latency results could only get after the tests (CloudWatch's split of each SageMaker
    window), waiting up to --cloud-metrics-wait; an interrupted session reads once and does not wait."""
    from pytest_triton.session_state import BENCH_KEY

    bench = config.stash.get(BENCH_KEY, None)
    if bench is None or not bench.late:
        return
    from pytest_triton.cloud.metrics import SplitWindow
    from pytest_triton.cloud.metrics_wait import read_splits
    from pytest_triton.contract_items import add_late_notes

    windows = [late for _, late in bench.late if isinstance(late, SplitWindow)]  # the only kind made today
    wait = 0.0 if exitstatus == pytest.ExitCode.INTERRUPTED else _cloud_metrics_wait(config)
    terminalreporter.section("triton cloud metrics")
    terminalreporter.write_line(
        f"reading CloudWatch's split of {len(windows)} latency window(s) at session end "
        f"(SageMaker publishes it per minute; waiting up to {wait:g} s after the last window)"
    )
    reads = read_splits(windows, wait_s=wait, progress=terminalreporter.write_line)
    described = iter(read.describe() for read in reads)
    notes = [next(described) if isinstance(late, SplitWindow) else late.placeholder for _, late in bench.late]
    by_variant: dict[str, list[str]] = {}
    for result, note in zip(bench.settle(notes), notes):
        by_variant.setdefault(result.variant, []).append(note)
    add_late_notes(config, by_variant)
    complete = sum(read.complete for read in reads)
    terminalreporter.write_line(f"complete for {complete} of {len(reads)} window(s); each variant's notes say more")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config) -> None:
    _read_late_notes(terminalreporter, config, exitstatus)
    from pytest_triton.contract_items import summary_lines as contract_lines
    from pytest_triton.contract_items import write_contracts_report
    from pytest_triton.serving import summary_lines
    from pytest_triton.session_state import BENCH_KEY

    lines = summary_lines(config)
    if lines:
        terminalreporter.section("triton")
        for line in lines:
            terminalreporter.write_line(line)
    report = config.getoption("triton_report")
    lines = contract_lines(config)
    if lines:
        terminalreporter.section("triton contracts")
        for line in lines:
            terminalreporter.write_line(line)
        if report:
            terminalreporter.write_line(f"report written: {write_contracts_report(config, report)}")
    bench = config.stash.get(BENCH_KEY, None)
    if bench is None or not (bench.results or bench.parity):
        return
    terminalreporter.section("triton latency")
    for line in bench.summary_lines():
        terminalreporter.write_line(line)
    if report:
        for path in bench.write_report(report, root=config.rootpath):
            terminalreporter.write_line(f"report written: {path}")
