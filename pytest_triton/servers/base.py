"""The server base every built-in launcher stands on, and the runner protocol under it.

A launcher class is the handle of one server (:class:`~pytest_triton.servers.protocol.TritonServer`). What every
one of them does the same way lives in :class:`ServerBase`: its URLs and what ``prepare()`` made, model
control and transports over those URLs, the log and how the server ended (read from its :class:`Runner`),
``stop()``, ``repr()``, ``with``, and ``start()``: prepare, launch, wait until ready, and launch again on new
ports when Triton could not bind one. A runner is what runs the server: a process on this machine
(:class:`~pytest_triton.servers.local.triton_process.TritonProcess`) or a container
(:class:`~pytest_triton.servers.docker.container.TritonContainer`); a launcher of a server someone else runs
has none, and overrides ``start()``.

A launcher supplies only what differs, as a testcontainers module does on ``DockerContainer``: ``prepare()``
(stage, adapt, unpack), ``_launch()`` (ports, the command line, the runner's spawn) and ``_wait_ready()``
(what "ready" means), with ``backends`` and ``has_gpu``. ``docs/architecture.md`` shows one in a page.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import Protocol

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.client.rest import TritonRest
from pytest_triton.client.triton import TritonClients
from pytest_triton.client.urls import LOCALHOST
from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.client.urls import ServerUrls
from pytest_triton.errors import ConfigError
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.servers.control import ControlKey
from pytest_triton.servers.control import ModelControl
from pytest_triton.servers.control import restricts_api
from pytest_triton.servers.control import users_control_key
from pytest_triton.servers.logs import LogFile
from pytest_triton.servers.logs import last_error
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.ports import PortReservation
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.protocol import DEFAULT_STARTUP_TIMEOUT
from pytest_triton.servers.protocol import Prepared
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.wait import Deadline
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.client.transports import Transport
    from pytest_triton.repository.onnx_adapter import AdaptedModel

# Triton 2.51: "failed to start HTTP service: Unavailable - Socket '127.0.0.1:8000' already in use"
PORT_IN_USE = re.compile(r"failed to start .*already in use")


# Triton 2.51's gRPC aborting while the server starts: "(event_engine) Epoll1Poller:0x... encountered epoll_wait
# error: Bad file descriptor", then SIGABRT (exit code -6). The poller's epoll descriptor was closed under it inside
# tritonserver; nothing of the models is involved. Seen on a busy 2-core machine in the first run of a new
# environment; a second start has not shown it.
GRPC_EPOLL_ABORT = re.compile(r"Epoll1Poller.*encountered epoll_wait error")


class PortInUse(Exception):
    """Triton could not bind one of its ports: :meth:`ServerBase.start` launches again on new ones."""


class KnownStartCrash(Exception):
    """tritonserver died while starting with a crash of its own (:data:`GRPC_EPOLL_ABORT`), not the models':
    :meth:`ServerBase.start` starts it once more and says so in ``start_notes``; ``line`` is Triton's."""

    def __init__(self, line: str, how: str) -> None:
        super().__init__(line)
        self.line = line
        self.how = how


class Runner(Protocol):
    """What runs one server and holds everything it leaves to clean up (its work folder, log and ports).

    ``ports`` are released with the server; ``stopped`` is True once ``stop()`` ran (an end after that is
    ours, not a crash); ``what`` names the server in errors ("tritonserver", "tritonserver container").
    """

    what: str
    log: LogFile | None
    ports: PortReservation | None
    stopped: bool

    def workdir(self) -> Path:
        """The server's own work folder (made on first use, removed by ``stop()``)."""
        ...

    def finished(self) -> tuple[int, str] | None:
        """(exit code, how it ended in words) once the server has ended, its log complete; None while it runs."""
        ...

    def started(self) -> None:
        """Note that the server is ready (what it made while starting is cleaned up at stop)."""
        ...

    def kill(self) -> None:
        """End a failed attempt at once, keeping the log and the work folder, and release its ports."""
        ...

    def exit_status(self) -> str | None:
        """How the server ended on its own; None while it runs, before it started and after ``stop()``."""
        ...

    def check_alive(self) -> None:
        """Raise ServerError saying how the server ended, with its log tail, if it no longer runs."""
        ...

    def logs(self) -> str: ...

    def log_tail(self, lines: int = 50) -> str: ...

    def stop(self, timeout: float, /) -> None:
        """Stop the server (``timeout`` s to end gracefully) and remove everything; again: nothing."""
        ...


def tritonserver_args(
    repository: str | Path,
    models: Sequence[str],
    ports: Sequence[int],
    *,
    bind_local: bool = True,
    sagemaker_port: int | None = None,
    exit_timeout: int = 0,
    control_key: ControlKey | None = None,
) -> list[str]:
    """The arguments of ``tritonserver`` that the launchers with model control share.

    ``models`` load at startup with explicit model control; ``--exit-on-error=false`` keeps the server up
    when a model fails, so that every failure can be read from the repository index. ``bind_local``: the
    HTTP, gRPC and metrics frontends bind 127.0.0.1 on ``ports`` (else Triton's own ports, for a container
    whose ports are published). ``sagemaker_port`` adds the SageMaker frontend. ``control_key`` keeps model
    control (index, load, unload) behind its header, over HTTP and gRPC.
    """
    args = [
        f"--model-repository={repository}",
        "--model-control-mode=explicit",
        *(f"--load-model={name}" for name in models),
        "--exit-on-error=false",
        "--strict-readiness=true",
        f"--exit-timeout-secs={exit_timeout}",
    ]
    if bind_local:
        for frontend, port in zip(("http", "grpc", "metrics"), ports):
            args += [f"--{frontend}-address={LOCALHOST}", f"--{frontend}-port={port}"]
    if sagemaker_port is not None:
        args += ["--allow-sagemaker=true", f"--sagemaker-port={sagemaker_port}"]
    if control_key is not None:
        args += control_key.flags()
    return args


def exit_reason(lines: list[str], tail: str) -> tuple[str, str]:
    """(the error, the log lines to show) of a server that ended before it was ready. A rejected command line
    is followed by tritonserver's long usage text: what it said comes before that, so that is shown."""
    usage = next((i for i, line in enumerate(lines) if line.startswith("Usage: tritonserver")), None)
    if usage is None:
        return last_error(lines) or "no error line in its log", tail
    before = [line for line in lines[:usage] if line.strip()]
    return (before[-1] if before else "it printed its usage: an argument was rejected"), "\n".join(before[-50:])


def adapt_for_backends(folder: Path, backends: frozenset[str], gpu: bool) -> list[AdaptedModel]:
    """Adapt the ONNX models of the staged ``folder`` for a server on this machine without the onnxruntime
    backend (the python-backend adapter, placed for this machine's GPUs); none where it has that backend."""
    from pytest_triton.repository.onnx_adapter import AdapterTarget
    from pytest_triton.repository.onnx_adapter import adapt_repository
    from pytest_triton.repository.onnx_adapter import onnx_models

    if "onnxruntime" in backends or not onnx_models(folder):
        return []
    return list(adapt_repository(folder, AdapterTarget.this_environment(backends, gpu)))


class ServerBase:
    """A Triton server that a test starts, reaches and stops: the members every launcher shares.

    ``repository`` is what ``start()`` prepares unless ``prepare()`` ran; ``runner`` runs the server (None:
    someone else runs it). ``port_retries`` is how many times ``start()`` launches again on new ports when
    ``_wait_ready()`` raises :class:`PortInUse`; the attempts share ``startup_timeout``. ``sagemaker`` also
    serves Triton's SageMaker frontend; ``env`` is added to the server's environment.
    """

    name: ClassVar[str]

    def __init__(
        self,
        repository: Path | None,
        runner: Runner | None = None,
        *,
        models: Sequence[str] | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        stop_timeout: float = 10.0,
        port_retries: int = 0,
        sagemaker: bool = False,
        env: Mapping[str, str] | None = None,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        self.repository = repository
        self.runner = runner
        self.models: list[str] | None = None if models is None else list(models)
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.port_retries = port_retries
        self.sagemaker = sagemaker
        self.env = dict(env or {})
        self.progress = progress
        self.command: list[str] = []
        # set by a launcher that started its server with model control behind this key
        self.control_key: ControlKey | None = None
        self._prepared: Prepared | None = None
        self._urls: ServerUrls | None = None
        self._launched = False
        self._stopped = False
        # what happened while starting that the reports should carry (a known crash of tritonserver's, retried)
        self.start_notes: list[str] = []

    # -- what a launcher supplies ------------------------------------------------------------------------

    @property
    def backends(self) -> frozenset[str]:
        """The backends the server offers."""
        raise NotImplementedError

    @property
    def has_gpu(self) -> bool:
        """Whether the server can see at least one GPU."""
        raise NotImplementedError

    def prepare(self, source: Path) -> Prepared:
        """Make ``source`` servable by this server and say what was changed (sets ``_prepared``)."""
        raise NotImplementedError

    def _launch(self, prepared: Prepared, attempt: int) -> None:
        """Start attempt ``attempt`` of the server on ``prepared``: set ``_urls`` and ``command``, run it."""
        raise NotImplementedError

    def _wait_ready(self, prepared: Prepared, deadline: Deadline) -> None:
        """Return once the server and its models are ready; raise (PortInUse to retry) otherwise."""
        raise NotImplementedError

    def _check_startable(self) -> None:
        """Raise before anything starts where the server cannot run here (a GPU asked for and not there)."""

    def _ended_words(self, how: str) -> str:
        """The start of the message of a server that ended before it was ready ("tritonserver exited")."""
        return f"{self._runner().what} {how}"

    # -- what is the same for every launcher -------------------------------------------------------------

    @classmethod
    def _served_from(
        cls, repository: Path | None, options: ServeOptions, models: Sequence[str] | None
    ) -> tuple[Path, dict[str, Any]]:
        """For ``from_options`` of a launcher that serves a repository folder: the folder (ConfigError without
        one), and the keyword arguments every such launcher takes from the common options."""
        if repository is None:
            raise ConfigError(f"the {cls.name} launcher serves a model repository: give its folder")
        common = {"startup_timeout": options.startup_timeout, "sagemaker": options.sagemaker, "env": options.env}
        return repository, {**common, "models": models, "progress": options.progress}

    def _control_key_if(self, supported: bool, given: Sequence[str] = ()) -> ControlKey | None:
        """The key whose flags go on the command line: made once, where the binary has the options. Where the
        user's own arguments ``given`` restrict an API already, none is added, and their model-control key (if
        any) is the one this server's model control sends."""
        if restricts_api(given):
            self.control_key = users_control_key(given)
            return None
        if supported and self.control_key is None:
            self.control_key = ControlKey()
        return self.control_key

    @property
    def urls(self) -> ServerUrls:
        """The server's endpoints; raises ServerError before ``start()``."""
        if self._urls is None:
            raise ServerError(f"{type(self).__name__} is not started; call start() first")
        return self._urls

    @property
    def prepared(self) -> Prepared | None:
        """What ``prepare()`` made and changed (None before ``prepare()``/``start()``)."""
        return self._prepared

    @property
    def control(self) -> ModelControl | None:
        """Load, unload and readiness of this server's models (over its HTTP endpoint)."""
        return self._model_control()

    @property
    def control_headers(self) -> dict[str, str]:
        """The header that opens model control of this server ({} where it is not restricted): pass it to
        tritonclient's ``load_model``/``unload_model``/``get_model_repository_index`` as ``headers=``."""
        return {} if self.control_key is None else self.control_key.headers

    def _model_control(self) -> ModelControl:
        runner = self.runner
        return ModelControl(
            self.urls.need("http"),
            headers=self.control_headers,
            log_tail=self.log_tail,
            load_reason=lambda name: model_failure_reason(self._log_lines(), name),
            check_alive=self._alive_before_wait,
            progress=self.progress,
            what=runner.what if runner is not None else f"Triton at {self.urls.http}",
        )

    def _alive_before_wait(self) -> None:
        self.check_alive()

    def transport(self, protocol: InferenceEndpoint = "http") -> Transport:
        """An inference transport that reaches this server (``http``, ``grpc`` or ``sagemaker``)."""
        from pytest_triton.client.transports import transport_for

        return transport_for(self.urls, protocol)

    def clients(self) -> TritonClients:
        """tritonclient HTTP and gRPC clients for this server (each made when first used)."""
        return TritonClients.connect(self)

    def start(self) -> Self:
        """Prepare the repository (unless done), launch the server and wait, at most ``startup_timeout`` s,
        until it and every model are ready; a server that fails to start is stopped before the error."""
        if self._launched:
            raise ServerError(f"{type(self).__name__}.start() called twice; create a new launcher to start again")
        self._check_startable()
        self._launched = True
        try:
            prepared = self._prepared or self.prepare(self._source())
            deadline = Deadline(self.startup_timeout)  # after prepare: pulling an image is not startup
            attempt = port_conflicts = 0
            while True:
                try:
                    self._launch(prepared, attempt)
                    self._wait_ready(prepared, deadline)
                    break
                except PortInUse:
                    self._runner().kill()
                    port_conflicts += 1
                    if port_conflicts > self.port_retries:
                        raise ServerStartError(
                            f"tritonserver could not bind its ports after {attempt + 1} attempts",
                            log_tail=self.log_tail(),
                        ) from None
                except KnownStartCrash as crash:
                    self._runner().kill()
                    if self.start_notes:  # once only: a second crash is reported, as Triton's own
                        raise ServerStartError(
                            f"tritonserver {crash.how} while starting, twice, with a crash of its own (not the "
                            f"models'): {crash.line}\ncommand: {shlex.join(self.command)}",
                            log_tail=self.log_tail(),
                        ) from None
                    self.start_notes.append(
                        f"tritonserver {crash.how} while starting with a known crash of its own (gRPC: "
                        f"{crash.line!r}); started again once, and that start is the one measured"
                    )
                attempt += 1
            self._runner().started()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop the server and remove everything the launcher made (the log stays readable); again: nothing."""
        self._stopped = True
        if self.runner is not None:
            self.runner.stop(self.stop_timeout)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def logs(self) -> str:
        """The whole server log so far, kept after stop ("" where the launcher cannot read it)."""
        return "" if self.runner is None else self.runner.logs()

    def log_tail(self, lines: int = 50) -> str:
        """The last ``lines`` meaningful lines of the server log."""
        return "" if self.runner is None else self.runner.log_tail(lines)

    def exit_status(self) -> str | None:
        """How the server ended on its own ("was killed by SIGSEGV"); None while it runs, before ``start()``,
        after ``stop()`` and where it is not ours."""
        return None if self.runner is None else self.runner.exit_status()

    def check_alive(self) -> None:
        """Raise ServerError naming how the server ended, with its log tail, if it no longer runs."""
        if self.runner is not None:
            self.runner.check_alive()

    def __repr__(self) -> str:
        if not self._launched:
            state = "not started"
        elif self._stopped:
            state = "stopped"
        else:
            state = self.exit_status() or "running"
        return f"{type(self).__name__}({self._describe()}, {state})"

    def _describe(self) -> str:
        return f"repository={str(self.repository)!r}"

    # -- helpers for the launchers -----------------------------------------------------------------------

    def _runner(self) -> Runner:
        if self.runner is None:
            raise ServerError(f"{type(self).__name__} runs no server of its own")
        return self.runner

    def _source(self) -> Path:
        if self.repository is None:
            raise ConfigError(f"{type(self).__name__} has no repository to serve: give one")
        return self.repository

    def _control_rest(self, timeout: float = 2.0) -> TritonRest:
        """A REST client of this server's HTTP endpoint that may use model control."""
        return TritonRest(self.urls.need("http"), timeout=timeout, headers=self.control_headers)

    def _require_health_ready(self, rest: TritonRest) -> None:
        """The last step of a wait: ``/v2/health/ready`` answers 200 (with strict readiness: every model too)."""
        if not rest.ready():
            raise ServerStartError("tritonserver is up but /v2/health/ready is not 200", log_tail=self.log_tail())

    def _log_lines(self) -> list[str]:
        log = None if self.runner is None else self.runner.log
        return [] if log is None else log.lines()

    def _local_ports(self) -> tuple[int, ...]:
        """Reserve free ports on 127.0.0.1 for HTTP, gRPC, metrics (and SageMaker) and set ``urls`` to them;
        the runner releases them with the attempt."""
        ports = reserve_ports(4 if self.sagemaker else 3)
        self._runner().ports = ports
        p = ports.ports
        self._urls = ServerUrls.local(p[0], p[1], p[2], p[3] if self.sagemaker else None)
        return p

    def _server_env(self, prepared: Prepared, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base``, then the default model as the SageMaker Triton image's serve script sets it (one model,
        with the SageMaker frontend), then ``env``."""
        env = dict(base or {})
        if self.sagemaker and len(prepared.models) == 1:
            env.setdefault(DEFAULT_MODEL_ENV, prepared.models[0])
        return {**env, **self.env}

    def _check_running(self) -> None:
        """While waiting: raise what :meth:`_start_failure` makes of a server that has ended."""
        ended = self._runner().finished()
        if ended is not None:
            raise self._start_failure(*ended, self._log_lines())

    def _start_failure(self, code: int, how: str, lines: list[str]) -> Exception:
        """PortInUse where Triton could not bind a port (``start()`` retries), else ServerStartError with
        Triton's own error line, the exit code, the command line and the log tail."""
        if any(PORT_IN_USE.search(line) for line in lines):
            return PortInUse()
        crash = next((line.strip() for line in lines if GRPC_EPOLL_ABORT.search(line)), None)
        if crash is not None:
            return KnownStartCrash(crash, how)
        error, tail = exit_reason(lines, self.log_tail())
        return ServerStartError(
            f"{self._ended_words(how)} before it was ready: {error}\ncommand: {shlex.join(self.command)}",
            exit_code=code,
            log_tail=tail,
        )
