"""The pytest side of serving: options in, a launcher from the registry, state for the reports out.

:class:`TritonServerFactory` turns pytest's options and ini values into a
:class:`~pytest_triton.servers.factory.ServerFactory`; session state (the servers, which fixture or test
started each, crashes already reported) lives in ``config.stash`` so the plugin's hooks can attach the right
server logs to a failing test and print the summary.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import final

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.errors import TritonInconclusiveWarning
from pytest_triton.errors import TritonUnstableWarning
from pytest_triton.plugin import options
from pytest_triton.plugin.state import STATE_KEY
from pytest_triton.plugin.state import SessionState
from pytest_triton.plugin.state import session_state
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.logs import without_gpu_noise
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.protocol import TritonServer

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench


def session_hardware(config: pytest.Config) -> tuple[str | None, str]:
    """The budget key of the session's bench and where it came from: ``--triton-hardware`` (None: this machine's
    :func:`~pytest_triton.hardware.hardware_key`), or under ``--triton-cloud`` the GPU of the endpoint's instance
    type."""
    named = options.text(config, "triton_hardware") or None
    if named or not options.flag(config, "triton_cloud"):
        return named, ""
    from pytest_triton.servers.sagemaker.endpoint import endpoint_hardware

    return endpoint_hardware(ServeOptions(settings=options.launcher_settings(config)))


def budgets_path(config: pytest.Config) -> tuple[Path | None, bool]:
    """The budget file and whether the user named it: ``--triton-budgets`` / ini ``triton_budgets``, else
    ``budgets.toml`` beside the first contracts file that has one; (None, False) where there is none."""
    named = options.text(config, "triton_budgets")
    if named:
        from_ini = config.getoption("triton_budgets") is None
        return _resolve(config, named, from_ini=from_ini), True
    for contracts in options.contract_paths(config):
        beside = contracts.parent / "budgets.toml"
        if beside.is_file():
            return beside, False
    return None, False


def session_bench(config: pytest.Config) -> TritonBench:
    """The session's latency bench from the options (ConfigError on a budget file that cannot be read)."""
    from pytest_triton.bench.sampling import WindowPolicy
    from pytest_triton.bench.session import TritonBench

    path, named = budgets_path(config)
    hardware, source = session_hardware(config)  # under --triton-cloud: the endpoint's GPU
    bench = TritonBench.from_options(
        path,
        hardware,
        required=named,
        unstable=unsure_choice(config, "triton_unstable"),
        inconclusive=unsure_choice(config, "triton_inconclusive"),
        verdict_seconds=options.number(config, "triton_verdict_seconds"),
    )
    bench.hardware_source = source
    bench.policy = WindowPolicy(mode="time", window_ms=options.number(config, "triton_window_ms"))
    return bench


UNSURE_WARNINGS: dict[str, type[Warning]] = {
    "triton_unstable": TritonUnstableWarning,
    "triton_inconclusive": TritonInconclusiveWarning,
}
"""Each choice for an unsure verdict, and the warning its ``warn`` gives."""


def unsure_choice(config: pytest.Config, name: str) -> str:
    """The session's choice ``name`` (warn or fail) as pytest will carry it out: ``warn`` counts as ``fail``
    where the warnings filters make its warning an error (:mod:`pytest_triton.plugin.warning_filters`)."""
    from pytest_triton.plugin.warning_filters import error_filter

    choice = options.text(config, name)
    if choice == "warn" and error_filter(config, UNSURE_WARNINGS[name]) is not None:
        return "fail"
    return choice


def unsure_choice_notes(config: pytest.Config) -> list[str]:
    """A line for each unsure choice of ``warn`` that the warnings filters turn into ``fail``."""
    from pytest_triton.plugin.warning_filters import error_filter

    notes = []
    for name, category in UNSURE_WARNINGS.items():
        found = error_filter(config, category) if options.text(config, name) == "warn" else None
        if found is not None:
            notes.append(
                f"{name}=warn acts as fail: {found} makes {category.__name__} an error, "
                "so such a verdict fails and every channel says failed"
            )
    return notes


def uncaptured_progress(config: pytest.Config) -> Callable[[str], None]:
    """A progress callback whose lines reach the terminal while pytest captures output: a SageMaker
    deployment waits for minutes during fixture setup, where stderr is captured."""
    capture = config.pluginmanager.getplugin("capturemanager")

    def progress(line: str) -> None:
        context = capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext()
        with context:
            sys.stderr.write(f"pytest-triton: {line}\n")
            sys.stderr.flush()

    return progress


def _resolve(config: pytest.Config, value: str, *, from_ini: bool) -> Path:
    """A path as pytest resolves its own: command-line paths against the invocation folder, ini paths
    against the ini file's folder."""
    path = Path(value).expanduser()
    if path.is_absolute():
        return path
    if from_ini and config.inipath is not None:
        return config.inipath.parent / path
    return config.invocation_params.dir / path


@final
class TritonServerFactory(ServerFactory):
    """The session's :class:`~pytest_triton.servers.factory.ServerFactory` (``triton_server_factory``): starts
    Triton servers on repositories with the session's launcher; every one is stopped at the end.

    ``start(repository)`` returns the server once it and its models are ready; the server says what it
    changed to serve the repository (``server.prepared``) and hands out what reaches it (``server.transport()``,
    ``server.clients()``). Each server is recorded for the reports: which fixture or test started it.
    """

    def __init__(self, launcher: str, options: ServeOptions, state: SessionState) -> None:
        super().__init__(launcher, options)
        self.state = state
        self._session: TritonServer | None = None

    @classmethod
    def from_config(cls, config: pytest.Config, staging: Path) -> TritonServerFactory:
        settings = options.launcher_settings(config)
        serve = ServeOptions(
            gpu=options.flag(config, "triton_gpu"),
            startup_timeout=options.number(config, "triton_startup_timeout"),
            staging=staging,
            settings=settings,
            progress=uncaptured_progress(config),
        )
        return cls(options.launcher_name(config), serve, session_state(config))

    def _starting(self, server: TritonServer) -> None:
        self.state.servers.append(server)  # listed first: a server that fails to start has a log to show
        if self.state.starting:
            self.state.owners[id(server)] = self.state.starting[-1]

    def _started(self, server: TritonServer) -> None:
        if server.prepared is not None:
            self.state.changes.extend(server.prepared.describe())

    def configured_repository(self, config: pytest.Config) -> Path | None:
        """``--triton-repository`` (against the invocation folder) or ini ``triton_repository``."""
        value = options.text(config, "triton_repository")
        if not value:
            return None
        return _resolve(config, value, from_ini=config.getoption("triton_repository") is None)

    def session_server(self, config: pytest.Config) -> TritonServer:
        """The one server of the session (``--triton-repository`` / ini ``triton_repository``, or the one
        ``--triton-url`` / ``--cloud --endpoint`` names), started on first use: ``triton_server``."""
        if self._session is None:
            repository = self.configured_repository(config)
            if repository is None and not self.serves_existing:
                raise ConfigError(
                    "triton_server needs a repository: pass --triton-repository PATH or set triton_repository "
                    "in the ini file (triton_client reaches that server; a server a test starts hands out its "
                    "own clients: triton_server_factory.start(PATH).clients())"
                )
            self._session = self.start(repository)
            self.state.owners[id(self._session)] = "triton_server"  # whichever fixture asked for it first
        return self._session

    def stop_all(self) -> None:
        try:
            super().stop_all()
        finally:
            self.state.servers.clear()


def _servers_of(item: pytest.Item, state: SessionState) -> list[tuple[int, TritonServer]]:
    """The session's servers that ``item`` used: started by it or by a fixture it requested."""
    used = {item.nodeid, *getattr(item, "fixturenames", ())}
    if "triton_client" in used:
        used.add("triton_server")
    return [(i, s) for i, s in enumerate(state.servers) if state.owners.get(id(s)) in used]


def _tail(server: TritonServer) -> str:
    try:
        tail = server.log_tail(50)
    except Exception:  # a dead server must not hide the test's own failure
        return ""
    return tail if server.has_gpu else without_gpu_noise(tail)


def attach_server_logs(item: pytest.Item, report: pytest.TestReport) -> None:
    """Add server log tails to a test report: on a failing test, the servers that test used; on the first
    report after any server ended on its own (a crash), that server's, with a line for the summary.
    The test's outcome is left as it is."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    for index, server in enumerate(state.servers):
        status = server.exit_status()
        if status is not None and id(server) not in state.dead:
            state.dead.add(id(server))
            state.notes.append(f"tritonserver {index} {status}; first seen at {item.nodeid} ({report.when})")
            if tail := _tail(server):
                report.sections.append((f"tritonserver {index} {status}: its log (last 50 lines)", tail))
    if not report.failed:
        return
    for index, server in _servers_of(item, state):
        if id(server) in state.dead and server.exit_status() is not None:
            continue  # its log is attached once, where the crash was first seen
        if tail := _tail(server):
            report.sections.append((f"tritonserver {index} log (last 50 lines)", tail))
