"""One Triton container and everything it leaves to clean up: the counterpart of ``triton_process.py``.

The docker launcher and sagemaker-local's container mode differ in their command line, their mount point
(``/models`` or ``/opt/ml/model``) and what "ready" means. What they share is here: the engine connection
(with the sweep of containers whose owner died), the image and what it offers, the owned work folder,
the container itself (a testcontainers ``DockerContainer``, wrapped, with everything docker-py takes as
keyword arguments in one ``with_kwargs`` call, since each call replaces the previous one), its log streamed
into a file, how it ended, and the removal, also of a container whose owner was SIGKILLed (the reaper
watches it by name before it exists).
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
from typing import Any
from typing import final

from pytest_triton.client.urls import LOCALHOST
from pytest_triton.errors import ConfigError
from pytest_triton.errors import ServerError
from pytest_triton.hardware import WORKER_GPUS_ENV
from pytest_triton.servers.docker.engine import connect
from pytest_triton.servers.docker.engine import default_ulimits
from pytest_triton.servers.docker.engine import device_requests
from pytest_triton.servers.docker.engine import ensure_image
from pytest_triton.servers.docker.engine import exit_words
from pytest_triton.servers.docker.engine import parse_ulimits
from pytest_triton.servers.docker.engine import pump_logs
from pytest_triton.servers.docker.engine import start_failure
from pytest_triton.servers.docker.engine import start_ryuk
from pytest_triton.servers.docker.image import ImageFacts
from pytest_triton.servers.docker.image import probe_image
from pytest_triton.servers.docker.owners import owner_labels
from pytest_triton.servers.docker.owners import sweep_once
from pytest_triton.servers.docker.reaper import Reaper
from pytest_triton.servers.logs import LogFile
from pytest_triton.servers.ports import PortReservation
from pytest_triton.servers.process import make_owned_workdir
from pytest_triton.servers.process import sweep_dead_owners
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.wait import ProgressCallback

DEFAULT_SHM_SIZE = "1g"
# a first TensorRT start in a container builds its engines: minutes, not the process launcher's 120 s
DEFAULT_CONTAINER_STARTUP_TIMEOUT = 600.0
# the settings (--triton-setting KEY=VALUE) every launcher that runs a container reads, with what they do
CONTAINER_SETTINGS: Mapping[str, str] = {
    "image": "the Triton image (--triton-image)",
    "network": "host (default; free ports on 127.0.0.1) or bridge (ports published on 127.0.0.1)",
    "shm_size": f"shared memory of the container (default {DEFAULT_SHM_SIZE})",
    "gpu_devices": "GPU ids given to the container with --triton-gpu, e.g. 0,1 (default all; an xdist worker's own)",
    "pull": "when to pull the image: missing (default), always or never",
    "ulimits": "ulimits over the defaults, e.g. memlock=-1,stack=67108864",
    "container_startup_timeout": f"seconds to wait for the server and its models "
    f"(default {DEFAULT_CONTAINER_STARTUP_TIMEOUT:g}: a first TensorRT start builds engines)",
}


def container_settings(options: ServeOptions) -> dict[str, Any]:
    """The container keyword arguments the common options give (``gpus``, ``network``, ``shm_size``,
    ``ulimits``, ``pull``): settings ``gpu_devices`` (ids; default every GPU with ``gpu``), ``network``,
    ``shm_size``, ``ulimits`` ("memlock=-1,stack=67108864") and ``pull``."""
    # an xdist worker's own GPUs (pytest_triton.plugin.workers) unless the user named the devices
    devices = options.setting("gpu_devices") or os.environ.get(WORKER_GPUS_ENV)
    ulimits = options.setting("ulimits")
    return {
        "gpus": (str(devices) if devices else True) if options.gpu else False,
        "network": str(options.setting("network", "host")),
        "shm_size": str(options.setting("shm_size", DEFAULT_SHM_SIZE)),
        "ulimits": None if ulimits is None else {**default_ulimits(), **parse_ulimits(str(ulimits))},
        "pull": str(options.setting("pull", "missing")),
    }


@final
class TritonContainer:
    """The container, log, ports and work folder of one server in ``image``; ``what`` names it in errors.

    ``gpus``: False, True/"all", or device ids ("0,1"). ``network``: "host" or "bridge". ``ulimits`` are set
    soft and hard (None: memlock=-1, stack=64 MiB, updated by ``$PYTEST_TRITON_DOCKER_ULIMITS``). ``pull``:
    "missing", "always" or "never". testcontainers starts its Ryuk reaper as it does for any of its users
    (``TESTCONTAINERS_RYUK_DISABLED=true`` turns it off); this package's own reaper runs either way.
    """

    def __init__(
        self,
        image: str,
        *,
        what: str = "tritonserver container",
        gpus: bool | str | Sequence[str] = False,
        network: str = "host",
        shm_size: str = DEFAULT_SHM_SIZE,
        ulimits: Mapping[str, int] | None = None,
        pull: str = "missing",
        progress: ProgressCallback | None = None,
    ) -> None:
        if network not in ("host", "bridge"):
            raise ConfigError(f"network={network!r} must be 'host' or 'bridge' (--triton-setting network=...)")
        if pull not in ("missing", "always", "never"):
            raise ConfigError(f"pull={pull!r} must be 'missing', 'always' or 'never' (--triton-setting pull=...)")
        if not image:
            raise ConfigError("image='' is empty: give a Triton image with --triton-image")
        self.image = image
        self.what = what
        self.gpus = gpus
        self.gpu = gpus if isinstance(gpus, bool) else len(gpus) > 0
        self.network = network
        self.shm_size = shm_size
        self.ulimits = default_ulimits() if ulimits is None else dict(ulimits)
        self.pull = pull
        self.progress = progress
        self.ports: PortReservation | None = None  # released with the container
        self.log: LogFile | None = None
        self.stopped = False
        self._client: Any = None
        self._facts: ImageFacts | None = None
        self._container: Any = None  # testcontainers DockerContainer
        self._log_thread: threading.Thread | None = None
        self._workdir: Path | None = None
        self._final_state: tuple[int, bool] | None = None  # (exit code, OOM) of a container that ended

    # -- the engine and the image ------------------------------------------------------------------------

    def client(self) -> Any:
        """The docker-py client (connected on first use, when containers of dead owners are swept once)."""
        if self._client is None:
            self._client = connect()
            sweep_once(self._client, self.progress)
        return self._client

    def facts(self) -> ImageFacts:
        """What the image offers (pulled if needed, then probed once)."""
        if self._facts is None:
            client = self.client()
            ensure_image(client, self.image, pull=self.pull, progress=self.progress)
            self._facts = probe_image(client, self.image)
        return self._facts

    def workdir(self) -> Path:
        """This server's work folder (staged repository, logs), removed by stop()."""
        if self._workdir is None:
            sweep_dead_owners()  # before this server makes its own folder
            self._workdir = make_owned_workdir()  # swept once its process is gone, even after SIGKILL
        return self._workdir

    # -- the container -----------------------------------------------------------------------------------

    def _wrapped(self) -> Any:
        """docker-py's container under the testcontainers one (None before run() and after remove())."""
        from testcontainers.core.exceptions import ContainerStartException

        if self._container is None:
            return None
        try:
            return self._container.get_wrapped_container()
        except ContainerStartException:  # created, never started
            return None

    @property
    def container_id(self) -> str | None:
        """The id of the running container (None before run() and after remove())."""
        wrapped = self._wrapped()
        return None if wrapped is None else str(wrapped.id)

    def attrs(self) -> dict[str, Any]:
        """What the daemon says of the running container (``docker inspect``); {} when there is none."""
        wrapped = self._wrapped()
        if wrapped is None:
            return {}
        wrapped.reload()
        return dict(wrapped.attrs)

    def run(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        *,
        mounts: Mapping[Path, str],
        published: Mapping[int, int] | None = None,
        log_name: str = "tritonserver.log",
    ) -> None:
        """Start ``command`` in a new container: ``mounts`` maps host folders to read-only container paths;
        ``published`` maps container ports to ports on 127.0.0.1 (bridge network only)."""
        from docker.errors import DockerException
        from docker.types import Ulimit
        from testcontainers.core.container import DockerContainer

        self.client()
        container = DockerContainer(self.image).with_command(list(command))
        name = f"pytest-triton-{os.getpid()}-{secrets.token_hex(4)}"
        container.with_name(name)
        for host, inside in mounts.items():
            container.with_volume_mapping(str(host), inside, "ro")
        container.with_envs(**env)
        if self.network == "bridge":
            for inside_port, port in (published or {}).items():
                # published on 127.0.0.1 only: docker-py takes (address, port), but testcontainers 4.15's
                # with_bind_ports takes a port alone (it would bind 0.0.0.0) and fails on a tuple; its
                # ports mapping goes to docker-py as it is
                container.ports[f"{inside_port}/tcp"] = (LOCALHOST, port)  # type: ignore[assignment]
        container.with_kwargs(
            device_requests=device_requests(self.gpus),
            shm_size=self.shm_size,
            ulimits=[Ulimit(name=limit, soft=value, hard=value) for limit, value in self.ulimits.items()],
            # ``network``, not ``network_mode``: where pytest runs in a container (Docker out of Docker)
            # testcontainers adds the network it finds unless one is given, and docker-py refuses both at once
            network=self.network,
            labels=owner_labels(),
        )
        start_ryuk()  # before our container: a Ryuk image that cannot be had is named as Ryuk's
        # watched by name before it exists: a SIGKILL between create and start must not leave it behind
        Reaper.get().watch(name)
        self._container = container
        self._final_state = None
        try:
            container.start()
        except DockerException as err:
            explanation = getattr(err, "explanation", None) or str(err)
            raise start_failure(self.image, str(explanation), gpu=self.gpu, ulimits=self.ulimits) from None
        self.log = LogFile(self.workdir() / log_name)
        self._log_thread = threading.Thread(
            target=pump_logs,
            args=(container.get_wrapped_container(), self.log.path),
            name="pytest-triton-docker-logs",
            daemon=True,
        )
        self._log_thread.start()

    def _state(self) -> tuple[str, int, bool]:
        """The container's (status, exit code, OOM-killed) as the daemon sees it now."""
        wrapped = self._wrapped()
        assert wrapped is not None
        from docker.errors import NotFound

        try:
            wrapped.reload()
        except NotFound:
            return "removed", -1, False
        state = wrapped.attrs.get("State", {})
        return str(state.get("Status", "")), int(state.get("ExitCode", 0) or 0), bool(state.get("OOMKilled"))

    def ended(self) -> tuple[int, bool] | None:
        """(exit code, OOM-killed) once the container has ended, its log drained; None while it runs."""
        if self._final_state is None and self._container is not None:
            status, code, oom = self._state()
            if status in ("exited", "dead", "removed"):
                self._final_state = (code, oom)
        if self._final_state is not None:
            self.drain_logs()
        return self._final_state

    def finished(self) -> tuple[int, str] | None:
        """(exit code, how it ended in words) once the container has ended, its log drained; None while it runs."""
        ended = self.ended()
        return None if ended is None else (ended[0], exit_words(*ended))

    def started(self) -> None:
        """Nothing to note: everything the container made is removed with it."""

    def kill(self) -> None:
        """End a failed attempt: remove the container and free its ports (log and work folder stay)."""
        self.remove(stop_timeout=2.0)

    def drain_logs(self) -> None:
        """Let the log pump write what the daemon still has (a stream ends when its container ends)."""
        if self._log_thread is not None:
            self._log_thread.join(timeout=5.0)

    def remove(self, stop_timeout: float = 10.0) -> None:
        """Stop and remove the container and free its ports (the work folder stays: a retry reuses it)."""
        wrapped = self._wrapped()
        container, self._container = self._container, None
        if container is not None and wrapped is not None:
            with contextlib.suppress(Exception):
                wrapped.stop(timeout=int(stop_timeout))
            with contextlib.suppress(Exception):  # gone already (its reaper, a sweep or the user removed it)
                container.stop(force=True, delete_volume=True)
        if container is not None and container._name:
            Reaper.get().forget(container._name)
        self.drain_logs()
        if self.ports is not None:
            self.ports.release()
            self.ports = None

    def stop(self, stop_timeout: float = 10.0) -> None:
        """Remove the container, its ports and the work folder (the log stays readable); again: nothing."""
        with contextlib.suppress(Exception):  # how it ended, if it did, before we remove it
            self.ended()
        self.stopped = True
        self.remove(stop_timeout)
        if self.log is not None:
            self.log.freeze()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- state and logs ----------------------------------------------------------------------------------

    def exit_status(self) -> str | None:
        """How the container ended on its own ("exited with code 1"); None while it runs, before run() and
        after stop()."""
        if self.stopped or self._container is None:
            return None
        try:
            ended = self.ended()
        except Exception:  # the daemon went away: say nothing rather than guess
            return None
        return None if ended is None else exit_words(*ended)

    def check_alive(self) -> None:
        """Raise ServerError naming how the container ended, with its log tail, if it no longer runs."""
        status = self.exit_status()
        if status is not None:
            raise ServerError(
                f"the {self.what} of {self.image!r} is no longer running: it {status}",
                exit_code=self._final_state[0] if self._final_state else None,
                log_tail=self.log_tail(),
            )

    def logs(self) -> str:
        """The whole container log so far (kept after stop)."""
        return "" if self.log is None else self.log.text()

    def log_tail(self, lines: int = 50) -> str:
        """The last ``lines`` meaningful lines of the container log."""
        return "" if self.log is None else self.log.tail(lines)
