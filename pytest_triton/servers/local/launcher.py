"""The local launcher: a ``tritonserver`` process on 127.0.0.1 (the user's, an NGC one, or nvidia-pytriton's).

Command line (ports reserved by :mod:`pytest_triton.servers.ports`)::

    tritonserver --model-repository REPO --model-control-mode=explicit --load-model M1 --load-model M2
      --exit-on-error=false --strict-readiness=true --exit-timeout-secs 0
      --http-address 127.0.0.1 --http-port P1 --grpc-address 127.0.0.1 --grpc-port P2
      --metrics-address 127.0.0.1 --metrics-port P3
      [--allow-sagemaker=true --sagemaker-port P4] [--backend-directory DIR] [--cache-directory DIR]
      --backend-config=python,shm-region-prefix-name=pytest_triton_PID_TOKEN_
      [--disable-auto-complete-config] [EXTRA_ARGS...]

``--exit-on-error=false`` keeps the server up when a model fails, so every failure can be read from the
repository index (state and reason per model) instead of only the first one from a dying process.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import final

from pytest_triton.client.rest import IndexEntry
from pytest_triton.client.rest import TritonRest
from pytest_triton.client.urls import LOCALHOST
from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.client.urls import ServerUrls
from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.hardware import gpu_visible
from pytest_triton.model_archive import DEFAULT_MODEL_ENV
from pytest_triton.repository.layout import model_folders
from pytest_triton.repository.layout import require_folder
from pytest_triton.repository.layout import stage_copy
from pytest_triton.servers.base import DEFAULT_STARTUP_TIMEOUT
from pytest_triton.servers.base import Prepared
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.base import StartedInWith
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import resolve_binary
from pytest_triton.servers.control import ModelControl
from pytest_triton.servers.local.triton_process import TritonProcess
from pytest_triton.servers.logs import last_error
from pytest_triton.servers.logs import loaded_models
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.logs import server_error
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress
from pytest_triton.servers.wait import wait_models_ready
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.client.transports import Transport

_NO_GPU_HINT = (
    "gpu=True but no GPU is visible (no /dev/nvidia0, `nvidia-smi -L` lists none, or CUDA_VISIBLE_DEVICES "
    "hides them); run on a GPU machine (in a container: --gpus all), check the NVIDIA driver with "
    "`nvidia-smi`, or run without --gpu"
)


_PORT_IN_USE = re.compile(r"failed to start \w+ service: .*already in use")


class _PortInUse(Exception):
    """Triton could not bind one of its ports: retry with new ones."""


@final
class LocalLauncher(StartedInWith):
    """A ``tritonserver`` process serving ``repository`` on 127.0.0.1, stopped with everything it started.

    The repository is staged into the launcher's own work folder first (``prepare``), so nothing is written
    into it (the python backend writes ``__pycache__`` beside each model.py), and on a server without the
    onnxruntime backend ONNX models are adapted there for this binary's backends and this machine's GPUs.
    ``models`` (None: every model folder) are loaded at startup with ``--model-control-mode=explicit``;
    ``start()`` returns once all of them are ready and raises :class:`ModelLoadError` with Triton's reason
    for each one that failed. ``binary`` is a path or a :class:`TritonBinary` (None: see
    :func:`find_tritonserver`). ``sagemaker=True`` adds the SageMaker frontend on its own port (it binds
    0.0.0.0: Triton 2.51 has no address flag for it). ``auto_complete_config=False`` passes
    ``--disable-auto-complete-config``: python models then load about 1.3 s faster, but every config must be
    complete. ``exit_timeout`` is Triton's ``--exit-timeout-secs``: 0 stops in about a second without the
    models' ``finalize()``; a few seconds lets python models finalize (stop takes ~3 s then).
    """

    name: ClassVar[str] = "local"
    setting_keys: ClassVar[Mapping[str, str]] = {
        "tritonserver": "the tritonserver binary (default: on PATH, else the one in nvidia-pytriton)"
    }

    def __init__(
        self,
        repository: str | os.PathLike[str],
        *,
        models: Sequence[str] | None = None,
        binary: str | os.PathLike[str] | TritonBinary | None = None,
        gpu: bool = False,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        extra_args: Sequence[str] = (),
        sagemaker: bool = False,
        auto_complete_config: bool = True,
        exit_timeout: int = 0,
        stop_timeout: float = 10.0,
        port_retries: int = 3,
        env: Mapping[str, str] | None = None,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        self.repository = Path(repository).absolute()
        self.models: list[str] | None = None if models is None else list(models)
        self.gpu = gpu
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args)
        self.sagemaker = sagemaker
        self.auto_complete_config = auto_complete_config
        self.exit_timeout = exit_timeout
        self.stop_timeout = stop_timeout
        self.port_retries = port_retries
        self.progress = progress
        self.env = dict(env or {})
        self._binary_arg = binary
        self._binary: TritonBinary | None = None
        self._process = TritonProcess()
        self._urls: ServerUrls | None = None
        self._has_gpu: bool | None = None
        self._prepared: Prepared | None = None
        self.command: list[str] = []

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """A launcher from the common options; setting ``tritonserver`` names the binary."""
        if repository is None:
            raise ServerStartError("the local launcher serves a model repository: give its folder")
        return cls(
            repository,
            models=models,
            binary=options.setting("tritonserver"),
            gpu=options.gpu,
            startup_timeout=options.startup_timeout,
            sagemaker=options.sagemaker,
            env=options.env,
            progress=options.progress,
        )

    # -- configuration ---------------------------------------------------------------------------------

    @property
    def binary(self) -> TritonBinary:
        """The tritonserver binary this launcher runs (found on first use)."""
        if self._binary is None:
            self._binary = resolve_binary(self._binary_arg)
        return self._binary

    @property
    def backends(self) -> frozenset[str]:
        """The backends of the binary's backend folder, e.g. ``{"python"}`` for nvidia-pytriton's."""
        return self.binary.backends

    @property
    def has_gpu(self) -> bool:
        """Whether a GPU is visible to the server."""
        if self._has_gpu is None:
            self._has_gpu = gpu_visible()
        return self._has_gpu

    @property
    def urls(self) -> ServerUrls:
        """The server's endpoints; raises ServerError before start()."""
        if self._urls is None:
            raise ServerError("LocalLauncher is not started; call start() first")
        return self._urls

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
            load_reason=lambda name: model_failure_reason(self._process.log.lines() if self._process.log else [], name),
            check_alive=self._process.require_running,
            progress=self.progress,
            what="tritonserver",
        )

    def transport(self, protocol: InferenceEndpoint = "http") -> Transport:
        """An inference transport to this server."""
        from pytest_triton.client.transports import transport_for

        return transport_for(self.urls, protocol)

    def prepare(self, source: Path) -> Prepared:
        """Stage ``source`` into this launcher's work folder and adapt its ONNX models where needed."""
        from pytest_triton.repository.onnx_adapter import AdapterTarget
        from pytest_triton.repository.onnx_adapter import adapt_repository
        from pytest_triton.repository.onnx_adapter import onnx_models

        require_folder(Path(source), "model repository")
        folder = stage_copy(Path(source), self._process.workdir() / "repository")
        adapted: list[Any] = []
        if "onnxruntime" not in self.backends and onnx_models(folder):
            adapted = adapt_repository(folder, AdapterTarget.this_environment(self.backends, self.has_gpu))
        models = model_folders(folder) if self.models is None else self.models
        self._prepared = Prepared(Path(source), folder, tuple(models), tuple(adapted))
        return self._prepared

    @property
    def shm_prefix(self) -> str:
        """The prefix of this server's python-backend shared-memory regions ("" before start)."""
        return self._process.shm_prefix

    @property
    def pid(self) -> int | None:
        """The tritonserver process id (None before start)."""
        return self._process.pid

    @property
    def running(self) -> bool:
        """Whether the tritonserver process is running."""
        return self._process.running

    def exit_status(self) -> str | None:
        """How the server ended on its own ("was killed by SIGSEGV", "exited with code 1").

        None while it runs, before start() and after stop().
        """
        return self._process.exit_status()

    def check_alive(self) -> None:
        """Raise ServerError naming how the server ended, with its log tail, if it is no longer running."""
        self._process.check_alive()

    def _build_command(
        self, binary: TritonBinary, folder: Path, models: list[str], ports: tuple[int, ...]
    ) -> list[str]:
        cmd = [
            str(binary.path),
            f"--model-repository={folder}",
            "--model-control-mode=explicit",
            *(f"--load-model={name}" for name in models),
            "--exit-on-error=false",
            "--strict-readiness=true",
            f"--exit-timeout-secs={self.exit_timeout}",
            f"--http-address={LOCALHOST}",
            f"--http-port={ports[0]}",
            f"--grpc-address={LOCALHOST}",
            f"--grpc-port={ports[1]}",
            f"--metrics-address={LOCALHOST}",
            f"--metrics-port={ports[2]}",
        ]
        if self.sagemaker:
            cmd += ["--allow-sagemaker=true", f"--sagemaker-port={ports[3]}"]
        cmd += self._process.binary_flags(binary)
        if not self.auto_complete_config:
            cmd.append("--disable-auto-complete-config")
        cmd += self.extra_args
        return cmd

    # -- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> Self:
        """Prepare the repository (unless done), start tritonserver and wait (at most ``startup_timeout`` s)
        until it and every model are ready."""
        if self._process.proc is not None:
            raise ServerError("LocalLauncher.start() called twice; create a new launcher to start again")
        if self.gpu and not self.has_gpu:
            raise ServerStartError(_NO_GPU_HINT)
        binary = self.binary
        budget = _Budget(self.startup_timeout)
        try:
            prepared = self._prepared or self.prepare(self.repository)
            models = list(prepared.models)
            for attempt in range(self.port_retries + 1):
                try:
                    self._launch(binary, prepared.folder, models, attempt)
                    self._wait_started(models, budget)
                    self._process.started()
                    return self
                except _PortInUse:
                    self._process.kill()
                    if attempt == self.port_retries:
                        raise ServerStartError(
                            f"tritonserver could not bind its ports after {attempt + 1} attempts",
                            log_tail=self.log_tail(),
                        ) from None
        except BaseException:
            self.stop()
            raise
        raise AssertionError("unreachable")  # pragma: no cover

    def _launch(self, binary: TritonBinary, folder: Path, models: list[str], attempt: int) -> None:
        reservation = self._process.ports = reserve_ports(4 if self.sagemaker else 3)
        ports = reservation.ports
        self._urls = ServerUrls.local(ports[0], ports[1], ports[2], ports[3] if self.sagemaker else None)
        self.command = self._build_command(binary, folder, models, ports)
        self._process.spawn(self.command, self._environ(binary, models), f"tritonserver-{attempt}.log")

    def _environ(self, binary: TritonBinary, models: list[str]) -> dict[str, str]:
        env = binary.environ()
        if self.sagemaker and len(models) == 1:  # what the SageMaker Triton image's serve script does
            env.setdefault(DEFAULT_MODEL_ENV, models[0])
        env.update(self.env)
        return env

    def _wait_started(self, models: list[str], budget: _Budget) -> None:
        assert self._urls is not None
        log, proc = self._process.log, self._process.proc
        assert log is not None
        assert proc is not None
        rest = TritonRest(self._urls.need("http"), timeout=2.0)
        frontends = ["Started GRPCInferenceService", "Started HTTPService", "Started Metrics Service"]
        if self.sagemaker:
            frontends.append("Started Sagemaker HTTPService")
        seen: set[str] = set()

        def check() -> Poll:
            new = log.read_new()
            for line in new:
                seen.update(f for f in frontends if f in line)
            code = proc.poll()
            if code is not None:
                self._raise_exited(code)
            if len(seen) < len(frontends):  # Triton loads the startup models before opening its ports
                ok, failed = loaded_models(log.lines())
                return Poll(False, f"{len(ok & set(models))}/{len(models)} models loaded, {len(failed)} failed")
            return Poll(True)

        # reading the log is cheap: poll it often so a ready server is seen within ~50 ms
        wait_until(check, timeout=budget.left(), interval=0.05, progress=self.progress, log_tail=self.log_tail)
        self._check_models(rest, models)
        wait_models_ready(rest, models, timeout=budget.left(), progress=self.progress, log_tail=self.log_tail)
        if not rest.ready():
            raise ServerStartError("tritonserver is up but /v2/health/ready is not 200", log_tail=self.log_tail())
        code = proc.poll()
        if code is not None:
            self._raise_exited(code)

    def _raise_exited(self, code: int) -> None:
        assert self._process.log is not None
        lines = self._process.log.lines()
        if any(_PORT_IN_USE.search(line) for line in lines):
            raise _PortInUse()
        tail = self.log_tail()
        usage = next((i for i, line in enumerate(lines) if line.startswith("Usage: tritonserver")), None)
        if usage is not None:  # it rejected its command line and printed its usage
            before = [line for line in lines[:usage] if line.strip()]
            error = before[-1] if before else "it printed its usage: an argument was rejected"
            tail = "\n".join(before[-50:])
        else:
            error = last_error(lines) or "no error line in its log"
        raise ServerStartError(
            f"tritonserver exited before it was ready: {error}\ncommand: {shlex.join(self.command)}",
            exit_code=code,
            log_tail=tail,
        )

    def _check_models(self, rest: TritonRest, models: list[str]) -> None:
        """After startup loading: collect every requested model that did not load, with Triton's reason."""
        assert self._process.log is not None
        lines = self._process.log.lines()
        try:
            entries = rest.index()
        except (ServerError, OSError) as err:  # with --exit-on-error=false a failed init still opens the ports
            raise ServerStartError(
                f"tritonserver started but is not usable: {server_error(lines) or err}",
                log_tail=self.log_tail(),
            ) from None
        index: dict[str, list[IndexEntry]] = {}
        for entry in entries:
            index.setdefault(entry.name, []).append(entry)
        failures: dict[str, str] = {}
        for name in models:
            entries = index.get(name, [])
            if any(e.state == "READY" for e in entries):
                continue
            reasons = [e.reason for e in entries if e.reason and e.reason != "unloaded"]
            reason = "\n".join(reasons) or model_failure_reason(lines, name)
            if not reason:
                states = ", ".join(sorted({e.state or "no state" for e in entries})) or "not in the repository index"
                reason = f"not ready after startup ({states})"
            failures[name] = reason
        if failures:
            first = next(iter(failures))
            raise ModelLoadError(first, failures[first], log_tail=self.log_tail(), failures=failures)

    def stop(self) -> None:
        """Stop tritonserver and its python stubs, remove their shared memory and the work folder (the staged
        repository); the log stays readable. Calling it again does nothing."""
        self._process.stop(self.stop_timeout)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped" if self._process.proc is not None else "not started"
        return f"LocalLauncher(repository={str(self.repository)!r}, pid={self.pid}, {state})"

    # -- queries ---------------------------------------------------------------------------------------

    def logs(self) -> str:
        """The whole server log so far (kept after stop)."""
        return self._process.logs()

    def log_tail(self, lines: int = 50) -> str:
        """The last ``lines`` non-blank lines of the server log."""
        return self._process.log_tail(lines)


class _Budget:
    """What is left of a time budget shared by several waits."""

    def __init__(self, seconds: float) -> None:
        self._deadline = time.monotonic() + seconds

    def left(self) -> float:
        return max(0.0, self._deadline - time.monotonic())
