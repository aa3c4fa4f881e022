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
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import final

import pytest

from pytest_triton import options
from pytest_triton.errors import ConfigError
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.base import TritonLauncher
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.logs import without_gpu_noise
from pytest_triton.session_state import STATE_KEY
from pytest_triton.session_state import SessionState
from pytest_triton.session_state import session_state

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench


def launcher_settings(config: pytest.Config) -> dict[str, Any]:
    """The launcher settings of the session: ``--triton-setting KEY=VALUE`` (over ini ``triton_settings``) and
    the options that are settings of one launcher (``--triton-url``, ``--triton-image``, ``--triton-endpoint``)."""
    found: dict[str, Any] = dict(options.settings(config))
    named = (
        ("triton_url", "url"),
        ("triton_image", "image"),
        ("triton_endpoint", "endpoint"),
        ("triton_report", "report"),
    )
    for option, key in named:
        if options.text(config, option):
            found[key] = options.text(config, option)
    return found


def check_launcher(config: pytest.Config) -> None:
    """ConfigError for an unknown launcher (listing the known ones) or a setting it does not read (listing its)."""
    from pytest_triton.servers.registry import check_settings

    check_settings(options.launcher_name(config), launcher_settings(config))


def session_hardware(config: pytest.Config) -> tuple[str | None, str]:
    """The budget key of the session's bench and where it came from: ``--triton-hardware`` (None: this machine's
    :func:`~pytest_triton.hardware.hardware_key`), or under ``--triton-cloud`` the GPU of the endpoint's instance
    type."""
    named = options.text(config, "triton_hardware") or None
    if named or not options.flag(config, "triton_cloud"):
        return named, ""
    from pytest_triton.servers.sagemaker.endpoint import endpoint_hardware

    return endpoint_hardware(ServeOptions(settings=launcher_settings(config)))


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
    unstable = options.text(config, "triton_unstable")
    bench = TritonBench.from_options(path, hardware, required=named, unstable=unstable)
    bench.hardware_source = source
    bench.policy = WindowPolicy(mode="time", window_ms=options.number(config, "triton_window_ms"))
    return bench


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
class TritonServerFactory:
    """Starts Triton servers on repositories with the session's launcher; every one is stopped at the end.

    ``start(repository)`` returns the launcher once the server and its models are ready; the launcher says
    what it changed to serve the repository (``launcher.prepared``) and gives the transport that reaches it
    (``launcher.transport()``).
    """

    def __init__(self, launcher: str, options: ServeOptions, state: SessionState) -> None:
        self.state = state
        self._factory = ServerFactory(launcher, options)
        self._session: TritonLauncher | None = None

    @property
    def launcher(self) -> str:
        """The name of the launcher this factory uses."""
        return self._factory.launcher_name

    @property
    def serves_existing(self) -> bool:
        """Whether the launcher was pointed at a server that exists already (``--triton-url``, ``--cloud
        --endpoint NAME``): the session's server then needs no repository (an endpoint's comes from its model)."""
        needs_repository = getattr(self.launcher_type, "needs_repository", None)
        return needs_repository is not None and not needs_repository(self.options)

    @property
    def launcher_type(self) -> type[Any]:
        """The class of the launcher this factory uses (its class attributes say what it serves)."""
        return self._factory.launcher_type

    @property
    def options(self) -> ServeOptions:
        return self._factory.options

    @classmethod
    def from_config(cls, config: pytest.Config, staging: Path) -> TritonServerFactory:
        settings = launcher_settings(config)
        serve = ServeOptions(
            gpu=options.flag(config, "triton_gpu"),
            startup_timeout=options.number(config, "triton_startup_timeout"),
            staging=staging,
            settings=settings,
            progress=uncaptured_progress(config),
        )
        return cls(options.launcher_name(config), serve, session_state(config))

    def start(
        self,
        repository: str | Path | None,
        *,
        models: Sequence[str] | None = None,
        sagemaker: bool | None = None,
        env: Mapping[str, str] | None = None,
    ) -> TritonLauncher:
        """Start a server on ``repository`` and wait until it and every model are ready.

        ``sagemaker`` also serves Triton's SageMaker frontend (/ping, /invocations); ``env`` adds
        variables to the server's environment (e.g. SAGEMAKER_TRITON_DEFAULT_MODEL_NAME).
        """
        launcher = self._factory.create(repository, models=models, sagemaker=sagemaker, env=env)
        self.state.servers.append(launcher)  # listed first: a server that fails to start has a log to show
        if self.state.starting:
            self.state.owners[id(launcher)] = self.state.starting[-1]
        self._factory.servers.append(launcher)
        try:
            launcher.start()
        finally:
            if launcher.prepared is not None:
                self.state.changes.extend(launcher.prepared.describe())
        return launcher

    @property
    def servers(self) -> list[TritonLauncher]:
        """Every server this factory started in the session, oldest first."""
        return list(self._factory.servers)

    def configured_repository(self, config: pytest.Config) -> Path | None:
        """``--triton-repository`` (against the invocation folder) or ini ``triton_repository``."""
        value = options.text(config, "triton_repository")
        if not value:
            return None
        return _resolve(config, value, from_ini=config.getoption("triton_repository") is None)

    def session_server(self, config: pytest.Config) -> TritonLauncher:
        """The one server of the session (``--triton-repository`` / ini ``triton_repository``)."""
        if self._session is None:
            repository = self.configured_repository(config)
            if repository is None and not self.serves_existing:
                raise ConfigError(
                    "triton_server needs a repository: pass --triton-repository PATH or set "
                    "triton_repository in the ini file (or start one with triton_server_factory.start(PATH))"
                )
            self._session = self.start(repository)
            self.state.owners[id(self._session)] = "triton_server"  # whichever fixture asked for it first
        return self._session

    def default_server(self, config: pytest.Config) -> TritonLauncher:
        """The server ``triton_client`` talks to: the session's when one is configured, else the newest one
        this factory started."""
        if self._session is not None or self.configured_repository(config) or self.serves_existing:
            return self.session_server(config)
        if not self._factory.servers:
            raise ConfigError(
                "triton_client has no server to talk to: start one with triton_server_factory.start(PATH) before "
                "using the client, or pass --triton-repository PATH"
            )
        return self._factory.servers[-1]

    def stop_all(self) -> None:
        try:
            self._factory.stop_all()
        finally:
            self.state.servers.clear()


def _servers_of(item: pytest.Item, state: SessionState) -> list[tuple[int, TritonLauncher]]:
    """The session's servers that ``item`` used: started by it or by a fixture it requested."""
    used = {item.nodeid, *getattr(item, "fixturenames", ())}
    if "triton_client" in used:
        used.add("triton_server")
    return [(i, s) for i, s in enumerate(state.servers) if state.owners.get(id(s)) in used]


def _tail(server: TritonLauncher) -> str:
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


def summary_lines(config: pytest.Config) -> list[str]:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return []
    return list(dict.fromkeys(state.changes)) + state.notes
