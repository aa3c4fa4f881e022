"""The docker launcher: Triton in a container (an NGC ``tritonserver`` image, or any image like it).

Command in the container (the image's entry point runs it, as NGC's ``nvidia_entrypoint.sh`` does)::

    tritonserver --model-repository=/models --model-control-mode=explicit --load-model=M ...
      --exit-on-error=false --strict-readiness=true --exit-timeout-secs=N
      [host network: --http-address=127.0.0.1 --http-port=P1 --grpc-address=... --metrics-address=...]
      [--allow-sagemaker=true --sagemaker-port=P4] [EXTRA_ARGS...]

The container is a testcontainers ``DockerContainer``, wrapped (not subclassed), with everything docker-py
takes as keyword arguments passed in one ``with_kwargs`` call, since each call replaces the previous one:
``device_requests`` (``--gpu``), ``shm_size`` (1 GiB by default: Docker's 64 MB is too small for the python
backend), ``ulimits`` (memlock=-1, stack=64 MiB, as Triton's python backend quick start runs it),
``network_mode`` and ``labels`` (:mod:`pytest_triton.servers.docker_owners`). The repository is staged with
container paths (:mod:`pytest_triton.servers.docker_image`) and mounted read-only at ``/models``.

Ports: with ``network="host"`` the server binds 127.0.0.1 on free ports chosen here and passed as flags (no
docker proxy in the latency path); otherwise Triton's usual ports are published on 127.0.0.1 only.
Readiness is our own wait (testcontainers' ``HttpWaitStrategy`` asks for mapped ports, which host networking
has none of, and does not notice a container that exited): ``/v2/health/live``, then each model's readiness,
checking the container's state at every poll. The log is streamed into a file and read incrementally.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import threading
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import final

from pytest_triton.errors import ConfigError
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.repository.layout import model_folders
from pytest_triton.repository.layout import require_folder
from pytest_triton.repository.sagemaker import DEFAULT_MODEL_ENV
from pytest_triton.servers.base import LOCALHOST
from pytest_triton.servers.base import InferenceEndpoint
from pytest_triton.servers.base import Prepared
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.base import ServerUrls
from pytest_triton.servers.base import StartedInWith
from pytest_triton.servers.control import ModelControl
from pytest_triton.servers.docker_engine import CONTAINER_PORTS
from pytest_triton.servers.docker_engine import connect
from pytest_triton.servers.docker_engine import default_ulimits
from pytest_triton.servers.docker_engine import device_requests
from pytest_triton.servers.docker_engine import ensure_image
from pytest_triton.servers.docker_engine import exit_reason
from pytest_triton.servers.docker_engine import exit_words
from pytest_triton.servers.docker_engine import parse_ulimits
from pytest_triton.servers.docker_engine import pump_logs
from pytest_triton.servers.docker_engine import start_failure
from pytest_triton.servers.docker_engine import tritonserver_command
from pytest_triton.servers.docker_image import CONTAINER_REPOSITORY
from pytest_triton.servers.docker_image import ImageFacts
from pytest_triton.servers.docker_image import probe_image
from pytest_triton.servers.docker_image import stage_for_image
from pytest_triton.servers.docker_owners import owner_labels
from pytest_triton.servers.docker_owners import sweep_once
from pytest_triton.servers.docker_reaper import Reaper
from pytest_triton.servers.logs import LogFile
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.ports import PortReservation
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.process import make_owned_workdir
from pytest_triton.servers.process import sweep_dead_owners
from pytest_triton.servers.rest import TritonRest
from pytest_triton.servers.rest import fetch_text
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import models_poll
from pytest_triton.servers.wait import stderr_progress
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.client.transports import Transport

DEFAULT_IMAGE = "nvcr.io/nvidia/tritonserver:26.05-py3"
DEFAULT_SHM_SIZE = "1g"
# a first TensorRT start builds engines for minutes; a first pull of an NGC image (~10 GB) is not counted
DEFAULT_STARTUP_TIMEOUT = 600.0


@final
class DockerLauncher(StartedInWith):
    """Triton in a container of ``image`` serving ``repository`` (staged, read-only at ``/models``).

    ``models`` (None: every model folder) load at startup with explicit model control. ``gpus``: False,
    True/"all", or device ids ("0,1"). ``network``: "host" (ports chosen here, bound on 127.0.0.1) or
    "bridge" (Triton's ports published on 127.0.0.1). ``pull``: "missing", "always" or "never". ``ryuk``
    lets testcontainers start its reaper container (it must be pullable); ours needs nothing pulled.
    ``ulimits`` (None: memlock=-1, stack=64 MiB, updated by ``$PYTEST_TRITON_DOCKER_ULIMITS``, e.g.
    ``memlock=8388608`` where the daemon may not raise it) are set soft and hard.
    The repository is staged into the launcher's own work folder (removed at stop).
    """

    name: ClassVar[str] = "docker"

    def __init__(
        self,
        repository: str | os.PathLike[str],
        *,
        models: Sequence[str] | None = None,
        image: str = DEFAULT_IMAGE,
        gpus: bool | str | Sequence[str] = False,
        network: str = "host",
        shm_size: str = DEFAULT_SHM_SIZE,
        ulimits: Mapping[str, int] | None = None,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        pull: str = "missing",
        ryuk: bool = False,
        sagemaker: bool = False,
        env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        exit_timeout: int = 0,
        stop_timeout: float = 10.0,
        port_retries: int = 2,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        if network not in ("host", "bridge"):
            raise ConfigError(f"network={network!r} must be 'host' or 'bridge' (--triton-network)")
        if pull not in ("missing", "always", "never"):
            raise ConfigError(f"pull={pull!r} must be 'missing', 'always' or 'never'")
        if not image:
            raise ConfigError("image='' is empty: give a Triton image with --triton-image")
        self.repository = Path(repository).absolute()
        self.models: list[str] | None = None if models is None else list(models)
        self.image = image
        self.gpus = gpus
        self.gpu = gpus if isinstance(gpus, bool) else len(gpus) > 0
        self.ulimits = default_ulimits() if ulimits is None else dict(ulimits)
        self.network = network
        self.shm_size = shm_size
        self.startup_timeout = startup_timeout
        self.pull = pull
        self.ryuk = ryuk
        self.sagemaker = sagemaker
        self.env = dict(env or {})
        self.extra_args = list(extra_args)
        self.exit_timeout = exit_timeout
        self.stop_timeout = stop_timeout
        self.port_retries = port_retries
        self.progress = progress
        self.command: list[str] = []
        self._prepared: Prepared | None = None
        self._client: Any = None
        self._facts: ImageFacts | None = None
        self._container: Any = None  # testcontainers DockerContainer
        self._ports: PortReservation | None = None
        self._urls: ServerUrls | None = None
        self._log: LogFile | None = None
        self._log_thread: threading.Thread | None = None
        self._workdir: Path | None = None
        self._stopped = False
        self._final_state: tuple[int, bool] | None = None  # (exit code, OOM) of a container that ended

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """A launcher from the common options. Settings: ``triton_image``, ``network`` (host or bridge), ``shm_size``,
        ``gpu_devices`` (ids; default every GPU with ``gpu``), ``pull``, ``ryuk``, ``ulimits``
        ("memlock=-1,stack=67108864") and ``container_startup_timeout`` (seconds)."""
        if repository is None:
            raise ServerStartError("the docker launcher serves a model repository: give its folder")
        devices = options.setting("gpu_devices")
        ulimits = options.setting("ulimits")
        return cls(
            repository,
            models=models,
            image=str(options.setting("triton_image", DEFAULT_IMAGE)),
            gpus=(str(devices) if devices else True) if options.gpu else False,
            network=str(options.setting("network", "host")),
            shm_size=str(options.setting("shm_size", DEFAULT_SHM_SIZE)),
            ulimits=None if ulimits is None else {**default_ulimits(), **parse_ulimits(str(ulimits))},
            startup_timeout=float(options.setting("container_startup_timeout", options.startup_timeout)),
            pull=str(options.setting("pull", "missing")),
            ryuk=bool(options.setting("ryuk", False)),
            sagemaker=options.sagemaker,
            env=options.env,
            progress=options.progress,
        )

    # -- what the image offers -------------------------------------------------------------------------

    def _docker(self) -> Any:
        if self._client is None:
            self._client = connect()
        return self._client

    def _image_facts(self) -> ImageFacts:
        if self._facts is None:
            client = self._docker()
            ensure_image(client, self.image, pull=self.pull, progress=self.progress)
            self._facts = probe_image(client, self.image)
        return self._facts

    @property
    def backends(self) -> frozenset[str]:
        """The backends of the image's ``/opt/tritonserver/backends`` (pulls and probes the image once)."""
        return self._image_facts().backends

    @property
    def has_gpu(self) -> bool:
        """Whether the container is given GPUs (the daemon refuses to start it when it cannot)."""
        return self.gpu

    @property
    def urls(self) -> ServerUrls:
        """The server's endpoints on 127.0.0.1; raises ServerError before start()."""
        if self._urls is None:
            raise ServerError("DockerLauncher is not started; call start() first")
        return self._urls

    @property
    def container_id(self) -> str | None:
        """The id of the running container (None before start and after stop)."""
        if self._container is None or self._container._container is None:
            return None
        return str(self._container._container.id)

    @property
    def prepared(self) -> Prepared | None:
        """The staged repository and what was adapted in it (None before ``prepare()``/``start()``)."""
        return self._prepared

    @property
    def control(self) -> ModelControl:
        """Load, unload and readiness of this server's models."""
        return ModelControl(
            self.urls.need("http"),
            log_tail=self.log_tail,
            load_reason=lambda name: model_failure_reason(self._log.lines() if self._log else [], name),
            check_alive=self.check_alive,
            progress=self.progress,
            what="tritonserver container",
        )

    def transport(self, protocol: InferenceEndpoint = "http") -> Transport:
        """An inference transport to this server."""
        from pytest_triton.client.transports import transport_for

        return transport_for(self.urls, protocol)

    # -- preparing the repository ----------------------------------------------------------------------

    def _work(self) -> Path:
        """This launcher's work folder (staged repository, logs), removed by stop()."""
        if self._workdir is None:
            sweep_dead_owners()  # before this launcher makes its own folder
            self._workdir = make_owned_workdir()  # swept once its process is gone, even after SIGKILL
        return self._workdir

    def prepare(self, source: Path) -> Prepared:
        """Stage ``source`` into the work folder for the image (real copies, ONNX models adapted where the
        image has no onnxruntime backend, no host path in any config); it is mounted read-only at /models."""
        require_folder(Path(source), "model repository")
        folder = self._work() / "repository"
        adapted = stage_for_image(Path(source), folder, self._image_facts(), gpu=self.gpu)
        models = model_folders(folder) if self.models is None else self.models
        notes = (f"served by the docker launcher from image {self.image} (repository mounted read-only at /models)",)
        self._prepared = Prepared(Path(source), folder, tuple(models), tuple(adapted), notes, CONTAINER_REPOSITORY)
        return self._prepared

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> Self:
        """Pull the image if needed, stage the repository, start the container and wait (at most
        ``startup_timeout`` s) until Triton and every model are ready."""
        if self._container is not None or self._stopped:
            raise ServerError("DockerLauncher.start() called twice; create a new launcher to start again")
        try:
            client = self._docker()
            sweep_once(client, self.progress)
            prepared = self._prepared or self.prepare(self.repository)
            models = list(prepared.models)
            for attempt in range(self.port_retries + 1):
                self._run_container(models, attempt)
                try:
                    self._wait_started(models)
                    return self
                except _PortInUse:
                    if attempt == self.port_retries:
                        raise ServerStartError(
                            f"tritonserver could not bind its ports after {attempt + 1} attempts",
                            log_tail=self.log_tail(),
                        ) from None
                    self._remove_container()
        except BaseException:
            self.stop()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _run_container(self, models: list[str], attempt: int) -> None:
        from docker.errors import DockerException
        from docker.types import Ulimit
        from testcontainers.core.config import testcontainers_config
        from testcontainers.core.container import DockerContainer

        assert self._prepared is not None
        self._ports = reserve_ports(4 if self.sagemaker else 3)
        ports = self._ports.ports
        self._urls = ServerUrls.local(ports[0], ports[1], ports[2], ports[3] if self.sagemaker else None)
        self.command = tritonserver_command(
            models, ports, host_network=self.network == "host", sagemaker=self.sagemaker, exit_timeout=self.exit_timeout
        ) + list(self.extra_args)
        container = DockerContainer(self.image).with_command(self.command)
        name = f"pytest-triton-{os.getpid()}-{secrets.token_hex(4)}"
        container.with_name(name)
        container.with_volume_mapping(str(self._prepared.folder), CONTAINER_REPOSITORY, "ro")
        env = dict(self.env)
        if self.sagemaker and len(models) == 1:  # what the SageMaker Triton image's serve script does
            env.setdefault(DEFAULT_MODEL_ENV, models[0])
        container.with_envs(**env)
        if self.network == "bridge":
            endpoints = ["http", "grpc", "metrics", "sagemaker"][: len(ports)]
            for endpoint, port in zip(endpoints, ports):
                # docker-py takes (address, port); testcontainers' annotation says int
                container.with_bind_ports(f"{CONTAINER_PORTS[endpoint]}/tcp", (LOCALHOST, port))  # type: ignore[arg-type]
        # one call: with_kwargs replaces whatever an earlier call set
        container.with_kwargs(
            device_requests=device_requests(self.gpus),
            shm_size=self.shm_size,
            ulimits=[Ulimit(name=name, soft=value, hard=value) for name, value in self.ulimits.items()],
            network_mode=self.network,
            labels=owner_labels(),
        )
        testcontainers_config.ryuk_disabled = not self.ryuk
        # watched by name before it exists: a SIGKILL between create and start must not leave it behind
        Reaper.get().watch(name)
        self._container = container
        self._final_state = None
        try:
            container.start()
        except DockerException as err:
            explanation = getattr(err, "explanation", None) or str(err)
            raise start_failure(self.image, str(explanation), gpu=self.gpu, ulimits=self.ulimits) from None
        assert self.container_id is not None
        self._log = LogFile(self._work() / f"tritonserver-{attempt}.log")
        self._log_thread = threading.Thread(
            target=pump_logs,
            args=(container._container, self._log.path),
            name="pytest-triton-docker-logs",
            daemon=True,
        )
        self._log_thread.start()

    def _state(self) -> tuple[str, int, bool]:
        """The container's (status, exit code, OOM-killed) as the daemon sees it now."""
        assert self._container is not None
        assert self._container._container is not None
        from docker.errors import NotFound

        try:
            self._container._container.reload()
        except NotFound:
            return "removed", -1, False
        state = self._container._container.attrs.get("State", {})
        return str(state.get("Status", "")), int(state.get("ExitCode", 0) or 0), bool(state.get("OOMKilled"))

    def _check_running(self) -> None:
        status, code, oom = self._state()
        if status in ("exited", "dead", "removed"):
            self._final_state = (code, oom)
            self._raise_exited(code, oom)

    def _raise_exited(self, code: int, oom: bool) -> None:
        self._drain_logs()
        lines = self._log.lines() if self._log is not None else []
        if any("already in use" in line and "failed to start" in line for line in lines):
            raise _PortInUse()
        error, tail = exit_reason(lines, self.log_tail())
        raise ServerStartError(
            f"the tritonserver container of {self.image!r} {exit_words(code, oom)} before it was ready: {error}",
            exit_code=code,
            log_tail=tail,
        )

    def _wait_started(self, models: list[str]) -> None:
        assert self._urls is not None
        rest = TritonRest(self._urls.need("http"), timeout=2.0)

        ping = f"{self._urls.sagemaker}/ping" if self._urls.sagemaker else None

        def check() -> Poll:
            self._check_running()
            poll = models_poll(rest, models)
            if poll.done and ping is not None:  # the SageMaker frontend starts after the HTTP one
                try:
                    fetch_text(ping, timeout=2.0)
                except ServerError as err:
                    return Poll(False, f"SageMaker frontend not answering yet: {err}")
            return poll

        try:
            wait_until(
                check, timeout=self.startup_timeout, interval=0.25, progress=self.progress, log_tail=self.log_tail
            )
            if not rest.ready():
                raise ServerStartError("tritonserver is up but /v2/health/ready is not 200", log_tail=self.log_tail())
        finally:
            rest.close()

    def _drain_logs(self) -> None:
        """Let the log pump write what the daemon still has (a stream ends when its container ends)."""
        if self._log_thread is not None:
            self._log_thread.join(timeout=5.0)

    def _remove_container(self) -> None:
        container, self._container = self._container, None
        if container is not None and container._container is not None:
            with contextlib.suppress(Exception):
                container._container.stop(timeout=int(self.stop_timeout))
            with contextlib.suppress(Exception):  # gone already (its reaper, a sweep or the user removed it)
                container.stop(force=True, delete_volume=True)
        if container is not None and container._name:
            Reaper.get().forget(container._name)
        self._drain_logs()
        if self._ports is not None:
            self._ports.release()
            self._ports = None

    def stop(self) -> None:
        """Stop and remove the container, free its ports, remove the staged copy; calling it again does nothing."""
        if self._container is not None and self._final_state is None:
            with contextlib.suppress(Exception):
                status, code, oom = self._state()
                if status in ("exited", "dead"):
                    self._final_state = (code, oom)
        self._stopped = True
        self._remove_container()
        if self._log is not None:
            self._log.freeze()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def __repr__(self) -> str:
        state = "running" if self._container is not None else "stopped" if self._stopped else "not started"
        return f"DockerLauncher(image={self.image!r}, repository={str(self.repository)!r}, {state})"

    # -- state and logs --------------------------------------------------------------------------------

    def exit_status(self) -> str | None:
        """How the container ended on its own ("exited with code 1"); None while it runs, before start() and
        after stop()."""
        if self._stopped or self._container is None:
            return None
        if self._final_state is None:
            try:
                status, code, oom = self._state()
            except Exception:  # the daemon went away: say nothing rather than guess
                return None
            if status not in ("exited", "dead", "removed"):
                return None
            self._final_state = (code, oom)
        return exit_words(*self._final_state)

    def check_alive(self) -> None:
        """Raise ServerError naming how the container ended, with its log tail, if it no longer runs."""
        status = self.exit_status()
        if status is not None:
            self._drain_logs()
            raise ServerError(
                f"the tritonserver container of {self.image!r} is no longer running: it {status}",
                exit_code=self._final_state[0] if self._final_state else None,
                log_tail=self.log_tail(),
            )

    def logs(self) -> str:
        """The whole container log so far (kept after stop)."""
        return "" if self._log is None else self._log.text()

    def log_tail(self, lines: int = 50) -> str:
        """The last ``lines`` meaningful lines of the container log."""
        return "" if self._log is None else self._log.tail(lines)


class _PortInUse(Exception):
    """Triton could not bind one of its ports (host network): retry with new ones."""
