"""The objects behind the server fixtures: a factory that stages, starts and stops servers.

Session state (servers, adapted models) lives in ``config.stash``; the plugin's hooks read
it to attach server logs to failing tests and to print the summary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Literal
from typing import final

import pytest

from pytest_triton.errors import ConfigError

if TYPE_CHECKING:
    from pytest_triton.repository.onnx_adapter import AdaptedModel
    from pytest_triton.servers.base import TritonLauncher

LauncherName = Literal["local", "url"]


@dataclass
class SessionState:
    servers: list[TritonLauncher] = field(default_factory=list)
    adapted: list[AdaptedModel] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dead: set[int] = field(default_factory=set)  # id() of servers already reported as ended on their own


STATE_KEY = pytest.StashKey[SessionState]()


def session_state(config: pytest.Config) -> SessionState:
    if STATE_KEY not in config.stash:
        config.stash[STATE_KEY] = SessionState()
    return config.stash[STATE_KEY]


@final
class TritonServerFactory:
    """Starts Triton servers on repositories (staged first when ONNX models need the adapter)."""

    def __init__(
        self,
        *,
        launcher: LauncherName,
        staging: Path,
        state: SessionState,
        binary: str | None = None,
        url: str | None = None,
        gpu: bool = False,
        startup_timeout: float = 120.0,
    ) -> None:
        if launcher == "url" and not url:
            raise ConfigError("--triton-launcher url needs --triton-url http://HOST:PORT")
        self.launcher = launcher
        self.staging = staging
        self.state = state
        self.binary = binary
        self.url = url
        self.gpu = gpu
        self.startup_timeout = startup_timeout
        self._session: TritonLauncher | None = None
        self._count = 0

    @classmethod
    def from_config(cls, config: pytest.Config, staging: Path) -> TritonServerFactory:
        launcher: LauncherName
        chosen = str(config.getoption("triton_launcher") or config.getini("triton_launcher") or "local")
        if chosen == "local":
            launcher = "local"
        elif chosen == "url":
            launcher = "url"
        else:
            raise ConfigError(f"triton_launcher={chosen!r} is not one of 'local', 'url'")
        url = config.getoption("triton_url")
        if url and not config.getoption("triton_launcher"):
            launcher = "url"
        timeout = config.getini("triton_startup_timeout")
        return cls(
            launcher=launcher,
            staging=staging,
            state=session_state(config),
            binary=config.getoption("tritonserver"),
            url=url,
            gpu=bool(config.getoption("gpu")),
            startup_timeout=float(str(timeout)),
        )

    def start(
        self,
        repository: str | Path,
        *,
        models: list[str] | None = None,
        sagemaker: bool = False,
        env: Mapping[str, str] | None = None,
    ) -> TritonLauncher:
        """Start a server on ``repository`` and wait until it and every model are ready.

        ``sagemaker`` also serves Triton's SageMaker frontend (/ping, /invocations); ``env`` adds
        variables to the server's environment (e.g. SAGEMAKER_TRITON_DEFAULT_MODEL_NAME).
        """
        if self.launcher == "url":
            from pytest_triton.servers.url import UrlLauncher

            assert self.url is not None
            server: TritonLauncher = UrlLauncher(self.url).start()
            self.state.servers.append(server)
            return server
        from pytest_triton.repository.onnx_adapter import stage_repository
        from pytest_triton.servers.binary import find_tritonserver
        from pytest_triton.servers.local import LocalLauncher

        source = Path(repository)
        if not source.is_dir():
            raise ConfigError(f"model repository {str(source)!r} is not a folder")
        binary = find_tritonserver(self.binary)
        self._count += 1
        staged = self.staging / f"repo-{self._count}-{source.name}"
        adapted = stage_repository(source, staged, backends=binary.backends, has_gpu=self.gpu)
        self.state.adapted.extend(adapted)
        server = LocalLauncher(
            staged,
            models=models,
            binary=binary,
            gpu=self.gpu,
            startup_timeout=self.startup_timeout,
            sagemaker=sagemaker,
            env=env,
        )
        self.state.servers.append(server)
        server.start()
        return server

    def session_server(self, config: pytest.Config) -> TritonLauncher:
        """The one server of the session (``--triton-repository`` / ini ``triton_repository``)."""
        if self._session is None:
            repository = config.getoption("triton_repository") or config.getini("triton_repository")
            if not repository and self.launcher != "url":
                raise ConfigError(
                    "triton_server needs a repository: pass --triton-repository PATH or set "
                    "triton_repository in the ini file (or use triton_server_factory)"
                )
            root = Path(str(repository))
            if not root.is_absolute():
                root = config.rootpath / root
            self._session = self.start(root)
        return self._session

    def stop_all(self) -> None:
        errors: list[BaseException] = []
        for server in reversed(self.state.servers):
            try:
                server.stop()
            except Exception as exc:  # stop the others before reporting
                errors.append(exc)
        self.state.servers.clear()
        if errors:
            raise errors[0]


def attach_server_logs(item: pytest.Item, report: pytest.TestReport) -> None:
    """Add each server's log tail to a test report: on a failing test, and on the first report after a
    server ended on its own (a crash), which also gets a summary line. The test's outcome is left as it is."""
    state = item.config.stash.get(STATE_KEY, None)
    if state is None:
        return
    for index, server in enumerate(state.servers):
        title = f"tritonserver {index} log (last 50 lines)"
        status = server.exit_status()
        if status is not None and id(server) not in state.dead:
            state.dead.add(id(server))
            state.notes.append(f"tritonserver {index} {status}; first seen at {item.nodeid} ({report.when})")
            title = f"tritonserver {index} {status}: its log (last 50 lines)"
        elif not report.failed:
            continue
        try:
            tail = server.log_tail(50)
        except Exception:  # a dead server must not hide the test's own failure
            continue
        if tail:
            report.sections.append((title, tail))


def summary_lines(config: pytest.Config) -> list[str]:
    state = config.stash.get(STATE_KEY, None)
    if state is None:
        return []
    lines = [f"adapted: {model.describe()}" for model in state.adapted]
    return lines + state.notes
