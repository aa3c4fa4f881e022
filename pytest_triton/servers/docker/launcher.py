"""The docker launcher: Triton in a container (an NGC ``tritonserver`` image, or any image like it).

Command in the container (the image's entry point runs it, as NGC's ``nvidia_entrypoint.sh`` does)::

    tritonserver --model-repository=/models --model-control-mode=explicit --load-model=M ...
      --exit-on-error=false --strict-readiness=true --exit-timeout-secs=N
      [host network: --http-address=127.0.0.1 --http-port=P1 --grpc-address=... --metrics-address=...]
      [--allow-sagemaker=true --sagemaker-port=P4] [EXTRA_ARGS...]

The container, its log, its end and its removal are a :class:`~pytest_triton.servers.docker.container.
TritonContainer` (shared with sagemaker-local's container mode): ``device_requests`` (``--gpu``),
``shm_size`` (1 GiB by default: Docker's 64 MB is too small for the python backend), ``ulimits``
(memlock=-1, stack=64 MiB, as Triton's python backend quick start runs it), ``network_mode`` and ``labels``
(:mod:`pytest_triton.servers.docker.owners`). The repository is staged with container paths
(:mod:`pytest_triton.servers.docker.image`) and mounted read-only at ``/models``.

Ports: with ``network="host"`` the server binds 127.0.0.1 on free ports chosen here and passed as flags (no
docker proxy in the latency path); otherwise Triton's usual ports are published on 127.0.0.1 only.
Readiness is our own wait (testcontainers' ``HttpWaitStrategy`` asks for mapped ports, which host networking
has none of, and does not notice a container that exited): ``/v2/health/live``, then each model's readiness,
checking the container's state at every poll. The log is streamed into a file and read incrementally.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import ClassVar
from typing import final

from pytest_triton.client.rest import TritonRest
from pytest_triton.client.rest import fetch_text
from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.client.urls import ServerUrls
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.model_archive import DEFAULT_MODEL_ENV
from pytest_triton.repository.layout import model_folders
from pytest_triton.repository.layout import require_folder
from pytest_triton.servers.base import Prepared
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.base import StartedInWith
from pytest_triton.servers.control import ModelControl
from pytest_triton.servers.docker.container import CONTAINER_SETTINGS
from pytest_triton.servers.docker.container import DEFAULT_CONTAINER_STARTUP_TIMEOUT
from pytest_triton.servers.docker.container import DEFAULT_SHM_SIZE
from pytest_triton.servers.docker.container import TritonContainer
from pytest_triton.servers.docker.container import container_settings
from pytest_triton.servers.docker.engine import CONTAINER_PORTS
from pytest_triton.servers.docker.engine import exit_reason
from pytest_triton.servers.docker.engine import exit_words
from pytest_triton.servers.docker.engine import tritonserver_command
from pytest_triton.servers.docker.image import CONTAINER_REPOSITORY
from pytest_triton.servers.docker.image import stage_for_image
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import models_poll
from pytest_triton.servers.wait import stderr_progress
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.client.transports import Transport

DEFAULT_IMAGE = "nvcr.io/nvidia/tritonserver:26.05-py3"
# a first TensorRT start builds engines for minutes; a first pull of an NGC image (~10 GB) is not counted
DEFAULT_STARTUP_TIMEOUT = 600.0


@final
class DockerLauncher(StartedInWith):
    """Triton in a container of ``image`` serving ``repository`` (staged, read-only at ``/models``).

    ``models`` (None: every model folder) load at startup with explicit model control. ``gpus``: False,
    True/"all", or device ids ("0,1"). ``network``: "host" (ports chosen here, bound on 127.0.0.1) or
    "bridge" (Triton's ports published on 127.0.0.1). ``pull``: "missing", "always" or "never".
    testcontainers' Ryuk follows ``TESTCONTAINERS_RYUK_DISABLED``; this package's reaper needs nothing pulled.
    ``ulimits`` (None: memlock=-1, stack=64 MiB, updated by ``$PYTEST_TRITON_DOCKER_ULIMITS``, e.g.
    ``memlock=8388608`` where the daemon may not raise it) are set soft and hard.
    The repository is staged into the launcher's own work folder (removed at stop).
    """

    name: ClassVar[str] = "docker"
    setting_keys: ClassVar[Mapping[str, str]] = CONTAINER_SETTINGS

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
        sagemaker: bool = False,
        env: Mapping[str, str] | None = None,
        extra_args: Sequence[str] = (),
        exit_timeout: int = 0,
        stop_timeout: float = 10.0,
        port_retries: int = 2,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        self.repository = Path(repository).absolute()
        self.models: list[str] | None = None if models is None else list(models)
        self.image = image
        self.startup_timeout = startup_timeout
        self.sagemaker = sagemaker
        self.env = dict(env or {})
        self.extra_args = list(extra_args)
        self.exit_timeout = exit_timeout
        self.stop_timeout = stop_timeout
        self.port_retries = port_retries
        self.progress = progress
        self.command: list[str] = []
        self._prepared: Prepared | None = None
        self._urls: ServerUrls | None = None
        # the container and its settings (network, shm_size, ulimits, pull...)
        self.container = TritonContainer(
            image,
            gpus=gpus,
            network=network,
            shm_size=shm_size,
            ulimits=ulimits,
            pull=pull,
            progress=progress,
        )

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """A launcher from the common options. Settings: ``image``, ``container_startup_timeout``
        (seconds) and those of :func:`~pytest_triton.servers.docker.container.container_settings`."""
        if repository is None:
            raise ServerStartError("the docker launcher serves a model repository: give its folder")
        return cls(
            repository,
            models=models,
            image=str(options.setting("image", DEFAULT_IMAGE)),
            **container_settings(options),
            startup_timeout=float(options.setting("container_startup_timeout", DEFAULT_CONTAINER_STARTUP_TIMEOUT)),
            sagemaker=options.sagemaker,
            env=options.env,
            progress=options.progress,
        )

    # -- what the image offers -------------------------------------------------------------------------

    @property
    def backends(self) -> frozenset[str]:
        """The backends of the image's ``/opt/tritonserver/backends`` (pulls and probes the image once)."""
        return self.container.facts().backends

    @property
    def has_gpu(self) -> bool:
        """Whether the container is given GPUs (the daemon refuses to start it when it cannot)."""
        return self.container.gpu

    @property
    def urls(self) -> ServerUrls:
        """The server's endpoints on 127.0.0.1; raises ServerError before start()."""
        if self._urls is None:
            raise ServerError("DockerLauncher is not started; call start() first")
        return self._urls

    @property
    def container_id(self) -> str | None:
        """The id of the running container (None before start and after stop)."""
        return self.container.container_id

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
            load_reason=lambda name: model_failure_reason(self._log_lines(), name),
            check_alive=self.check_alive,
            progress=self.progress,
            what="tritonserver container",
        )

    def transport(self, protocol: InferenceEndpoint = "http") -> Transport:
        """An inference transport to this server."""
        from pytest_triton.client.transports import transport_for

        return transport_for(self.urls, protocol)

    # -- preparing the repository ----------------------------------------------------------------------

    def prepare(self, source: Path) -> Prepared:
        """Stage ``source`` into the work folder for the image (real copies, ONNX models adapted where the
        image has no onnxruntime backend, no host path in any config); it is mounted read-only at /models."""
        require_folder(Path(source), "model repository")
        folder = self.container.workdir() / "repository"
        adapted = stage_for_image(Path(source), folder, self.container.facts(), gpu=self.container.gpu)
        models = model_folders(folder) if self.models is None else self.models
        notes = (f"served by the docker launcher from image {self.image} (repository mounted read-only at /models)",)
        self._prepared = Prepared(Path(source), folder, tuple(models), tuple(adapted), notes, CONTAINER_REPOSITORY)
        return self._prepared

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> Self:
        """Pull the image if needed, stage the repository, start the container and wait (at most
        ``startup_timeout`` s) until Triton and every model are ready."""
        if self.container.container_id is not None or self.container.stopped:
            raise ServerError("DockerLauncher.start() called twice; create a new launcher to start again")
        try:
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
                    self.container.remove(self.stop_timeout)
        except BaseException:
            self.stop()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _run_container(self, models: list[str], attempt: int) -> None:
        assert self._prepared is not None
        self.container.ports = reserve_ports(4 if self.sagemaker else 3)
        ports = self.container.ports.ports
        self._urls = ServerUrls.local(ports[0], ports[1], ports[2], ports[3] if self.sagemaker else None)
        self.command = tritonserver_command(
            models,
            ports,
            host_network=self.container.network == "host",
            sagemaker=self.sagemaker,
            exit_timeout=self.exit_timeout,
        ) + list(self.extra_args)
        env = dict(self.env)
        if self.sagemaker and len(models) == 1:  # what the SageMaker Triton image's serve script does
            env.setdefault(DEFAULT_MODEL_ENV, models[0])
        endpoints = ["http", "grpc", "metrics", "sagemaker"][: len(ports)]
        self.container.run(
            self.command,
            env,
            mounts={self._prepared.folder: CONTAINER_REPOSITORY},
            published={CONTAINER_PORTS[endpoint]: port for endpoint, port in zip(endpoints, ports)},
            log_name=f"tritonserver-{attempt}.log",
        )

    def _check_running(self) -> None:
        ended = self.container.ended()
        if ended is None:
            return
        lines = self._log_lines()
        if any("already in use" in line and "failed to start" in line for line in lines):
            raise _PortInUse()
        error, tail = exit_reason(lines, self.log_tail())
        raise ServerStartError(
            f"the tritonserver container of {self.image!r} {exit_words(*ended)} before it was ready: {error}",
            exit_code=ended[0],
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

    def stop(self) -> None:
        """Stop and remove the container, free its ports, remove the staged copy; calling it again does nothing."""
        self.container.stop(self.stop_timeout)

    def __repr__(self) -> str:
        box = self.container
        state = "running" if box.container_id is not None else "stopped" if box.stopped else "not started"
        return f"DockerLauncher(image={self.image!r}, repository={str(self.repository)!r}, {state})"

    # -- state and logs --------------------------------------------------------------------------------

    def exit_status(self) -> str | None:
        """How the container ended on its own ("exited with code 1"); None while it runs, before start() and
        after stop()."""
        return self.container.exit_status()

    def check_alive(self) -> None:
        """Raise ServerError naming how the container ended, with its log tail, if it no longer runs."""
        self.container.check_alive()

    def logs(self) -> str:
        """The whole container log so far (kept after stop)."""
        return self.container.logs()

    def _log_lines(self) -> list[str]:
        return self.container.log.lines() if self.container.log is not None else []

    def log_tail(self, lines: int = 50) -> str:
        """The last ``lines`` meaningful lines of the container log."""
        return self.container.log_tail(lines)


class _PortInUse(Exception):
    """Triton could not bind one of its ports (host network): retry with new ones."""
