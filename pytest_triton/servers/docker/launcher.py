"""The docker launcher: Triton in a container (an NGC ``tritonserver`` image, or any image like it).

Command in the container (the image's entry point runs it, as NGC's ``nvidia_entrypoint.sh`` does)::

    tritonserver --model-repository=/models --model-control-mode=explicit --load-model=M ...
      --exit-on-error=false --strict-readiness=true --exit-timeout-secs=N
      [host network: --http-address=127.0.0.1 --http-port=P1 --grpc-address=... --metrics-address=...]
      [--allow-sagemaker=true --sagemaker-port=P4]
      [--http-restricted-api=model-repository:KEY=VALUE --grpc-restricted-protocol=...] [EXTRA_ARGS...]

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
testcontainers' Ryuk follows ``TESTCONTAINERS_RYUK_DISABLED``; this package's own reaper needs nothing pulled.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import ClassVar
from typing import final

from pytest_triton.repository.layout import model_folders
from pytest_triton.repository.layout import require_folder
from pytest_triton.servers.base import ServerBase
from pytest_triton.servers.base import tritonserver_args
from pytest_triton.servers.control import ModelControl
from pytest_triton.servers.docker.container import CONTAINER_SETTINGS
from pytest_triton.servers.docker.container import DEFAULT_CONTAINER_STARTUP_TIMEOUT
from pytest_triton.servers.docker.container import DEFAULT_SHM_SIZE
from pytest_triton.servers.docker.container import TritonContainer
from pytest_triton.servers.docker.container import container_settings
from pytest_triton.servers.docker.engine import CONTAINER_PORTS
from pytest_triton.servers.docker.image import CONTAINER_REPOSITORY
from pytest_triton.servers.docker.image import stage_for_image
from pytest_triton.servers.docker.owners import end_of_run
from pytest_triton.servers.protocol import Prepared
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.wait import Deadline
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import models_poll
from pytest_triton.servers.wait import ping_poll
from pytest_triton.servers.wait import stderr_progress
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self

DEFAULT_IMAGE = "nvcr.io/nvidia/tritonserver:26.05-py3"
# a first TensorRT start builds engines for minutes; a first pull of an NGC image (~10 GB) is not counted
DEFAULT_STARTUP_TIMEOUT = 600.0


@final
class DockerLauncher(ServerBase):
    """Triton in a container of ``image`` serving ``repository`` (staged, read-only at ``/models``).

    ``models`` (None: every model folder) load at startup. ``gpus``: False, True/"all", or device ids ("0,1").
    ``network``: "host" (ports chosen here, bound on 127.0.0.1) or "bridge" (Triton's ports published on
    127.0.0.1). ``pull``: "missing", "always" or "never". ``ulimits`` (None: memlock=-1, stack=64 MiB, updated
    by ``$PYTEST_TRITON_DOCKER_ULIMITS``, e.g. ``memlock=8388608`` where the daemon may not raise it).
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
        super().__init__(
            Path(repository).absolute(),
            self.container,
            models=models,
            startup_timeout=startup_timeout,
            stop_timeout=stop_timeout,
            port_retries=port_retries,
            sagemaker=sagemaker,
            env=env,
            progress=progress,
        )
        self.image = image
        self.extra_args = list(extra_args)
        self.exit_timeout = exit_timeout

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """A launcher from the common options. Settings: ``image``, ``container_startup_timeout``
        (seconds) and those of :func:`~pytest_triton.servers.docker.container.container_settings`."""
        folder, common = cls._served_from(repository, options, models)
        timeout = float(options.setting("container_startup_timeout", DEFAULT_CONTAINER_STARTUP_TIMEOUT))
        image = str(options.setting("image", DEFAULT_IMAGE))
        return cls(folder, image=image, **container_settings(options), **{**common, "startup_timeout": timeout})

    @classmethod
    def end_session(cls, run: str) -> None:
        """At the session's end: remove the run's containers that are ours or whose owner is provably dead."""
        end_of_run(run)

    @property
    def backends(self) -> frozenset[str]:
        """The backends of the image's ``/opt/tritonserver/backends`` (pulls and probes the image once)."""
        return self.container.facts().backends

    @property
    def has_gpu(self) -> bool:
        """Whether the container is given GPUs (the daemon refuses to start it when it cannot)."""
        return self.container.gpu

    @property
    def container_id(self) -> str | None:
        """The id of the running container (None before start and after stop)."""
        return self.container.container_id

    @property
    def control(self) -> ModelControl:
        """Load, unload and readiness of this server's models."""
        return self._model_control()

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

    def _launch(self, prepared: Prepared, attempt: int) -> None:
        ports = self._local_ports()
        host_network = self.container.network == "host"
        key = self._control_key_if(self.container.facts().restricted_api, self.extra_args)
        sagemaker_port = (ports[3] if host_network else CONTAINER_PORTS["sagemaker"]) if self.sagemaker else None
        args = tritonserver_args(
            CONTAINER_REPOSITORY,
            prepared.models,
            ports,
            bind_local=host_network,
            sagemaker_port=sagemaker_port,
            exit_timeout=self.exit_timeout,
            control_key=key,
        )
        self.command = ["tritonserver", *args, *self.extra_args]
        env = self._server_env(prepared)
        endpoints = ["http", "grpc", "metrics", "sagemaker"][: len(ports)]
        self.container.run(
            self.command,
            env,
            mounts={prepared.folder: CONTAINER_REPOSITORY},
            published={CONTAINER_PORTS[endpoint]: port for endpoint, port in zip(endpoints, ports)},
            log_name=f"tritonserver-{attempt}.log",
        )

    def _wait_ready(self, prepared: Prepared, deadline: Deadline) -> None:
        """Ready: ``/v2/health/live`` and every model READY (the container's state checked at each poll),
        the SageMaker frontend's ``/ping`` where it serves one, and ``/v2/health/ready`` 200."""
        rest, models, sagemaker = self._control_rest(), list(prepared.models), self.urls.sagemaker

        def check() -> Poll:
            self._check_running()
            poll = models_poll(rest, models)  # the SageMaker frontend starts after the HTTP one
            return ping_poll(sagemaker) if poll.done and sagemaker else poll

        try:
            wait_until(check, timeout=deadline, interval=0.25, progress=self.progress, log_tail=self.log_tail)
            self._require_health_ready(rest)
        finally:
            rest.close()

    def _ended_words(self, how: str) -> str:
        return f"the tritonserver container of {self.image!r} {how}"

    def _describe(self) -> str:
        return f"image={self.image!r}, repository={str(self.repository)!r}"
