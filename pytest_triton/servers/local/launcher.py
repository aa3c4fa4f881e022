"""The local launcher: a ``tritonserver`` process on 127.0.0.1 (the user's, an NGC one, or nvidia-pytriton's).

Command line (ports reserved by :mod:`pytest_triton.servers.ports`)::

    tritonserver --model-repository REPO --model-control-mode=explicit --load-model M1 --load-model M2
      --exit-on-error=false --strict-readiness=true --exit-timeout-secs 0
      --http-address 127.0.0.1 --http-port P1 --grpc-address 127.0.0.1 --grpc-port P2
      --metrics-address 127.0.0.1 --metrics-port P3
      [--allow-sagemaker=true --sagemaker-port P4] [--backend-directory DIR] [--cache-directory DIR]
      [--http-restricted-api=model-repository:KEY=VALUE --grpc-restricted-protocol=...]
      --backend-config=python,shm-region-prefix-name=pytest_triton_PID_TOKEN_
      [--disable-auto-complete-config] [EXTRA_ARGS...]

``--exit-on-error=false`` keeps the server up when a model fails, so every failure can be read from the
repository index (state and reason per model) instead of only the first one from a dying process.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING
from typing import ClassVar
from typing import final

from pytest_triton.client.rest import IndexEntry
from pytest_triton.client.rest import TritonRest
from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.hardware import gpu_visible
from pytest_triton.repository.layout import model_folders
from pytest_triton.repository.layout import require_folder
from pytest_triton.repository.layout import stage_copy
from pytest_triton.servers.base import ServerBase
from pytest_triton.servers.base import adapt_for_backends
from pytest_triton.servers.base import tritonserver_args
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import help_text
from pytest_triton.servers.binary import resolve_binary
from pytest_triton.servers.control import ModelControl
from pytest_triton.servers.control import has_restricted_api
from pytest_triton.servers.local.triton_process import TritonProcess
from pytest_triton.servers.logs import LogFile
from pytest_triton.servers.logs import loaded_models
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.logs import server_error
from pytest_triton.servers.protocol import DEFAULT_STARTUP_TIMEOUT
from pytest_triton.servers.protocol import Prepared
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.relay import SageMakerGuard
from pytest_triton.servers.wait import Deadline
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress
from pytest_triton.servers.wait import wait_models_ready
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self

_NO_GPU_HINT = (
    "gpu=True but no GPU is visible (no /dev/nvidia0, `nvidia-smi -L` lists none, or CUDA_VISIBLE_DEVICES "
    "hides them); run on a GPU machine (in a container: --gpus all), check the NVIDIA driver with "
    "`nvidia-smi`, or run without --gpu"
)


@final
class LocalLauncher(ServerBase):
    """A ``tritonserver`` process serving ``repository`` on 127.0.0.1, stopped with everything it started.

    ``prepare`` stages the repository in the work folder (nothing is written into it) and, without the
    onnxruntime backend, adapts its ONNX models for this binary and GPUs. ``models`` (None: all) load at startup;
    ``start()`` returns once all are ready, else raises :class:`ModelLoadError` with Triton's reason for each.
    ``binary``: a path or a :class:`TritonBinary` (None: :func:`find_tritonserver`). ``sagemaker=True`` adds the
    SageMaker frontend (it binds 0.0.0.0: Triton 2.51 has no address flag). ``auto_complete_config=False``:
    ``--disable-auto-complete-config``. ``exit_timeout``: ``--exit-timeout-secs`` (0: no ``finalize()``).
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
        self._process = TritonProcess()
        super().__init__(
            Path(repository).absolute(),
            self._process,
            models=models,
            startup_timeout=startup_timeout,
            stop_timeout=stop_timeout,
            port_retries=port_retries,
            sagemaker=sagemaker,
            env=env,
            progress=progress,
        )
        self.gpu = gpu
        self.extra_args = list(extra_args)
        self.auto_complete_config = auto_complete_config
        self.exit_timeout = exit_timeout
        self._binary_arg = binary

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """A launcher from the common options; setting ``tritonserver`` names the binary."""
        folder, common = cls._served_from(repository, options, models)
        return cls(folder, binary=options.setting("tritonserver"), gpu=options.gpu, **common)

    @cached_property
    def binary(self) -> TritonBinary:
        """The tritonserver binary this launcher runs (found on first use)."""
        return resolve_binary(self._binary_arg)

    @property
    def backends(self) -> frozenset[str]:
        """The backends of the binary's backend folder, e.g. ``{"python"}`` for nvidia-pytriton's."""
        return self.binary.backends

    @cached_property
    def has_gpu(self) -> bool:
        """Whether a GPU is visible to the server."""
        return gpu_visible()

    @property
    def control(self) -> ModelControl:
        """Load, unload and readiness of this server's models."""
        return self._model_control()

    @property
    def shm_prefix(self) -> str:
        """The prefix of this server's python-backend shared-memory regions ("" before start)."""
        return self._process.shm_prefix

    @property
    def pid(self) -> int | None:
        """The tritonserver process id (None before start)."""
        return self._process.pid

    @property
    def process_group(self) -> int | None:
        """The process group of the server and its python stubs (None before start), the same after it ended."""
        return self._process.process_group

    @property
    def running(self) -> bool:
        """Whether the tritonserver process is running."""
        return self._process.running

    def prepare(self, source: Path) -> Prepared:
        """Stage ``source`` into this launcher's work folder and adapt its ONNX models where needed."""
        require_folder(Path(source), "model repository")
        folder = stage_copy(Path(source), self._process.workdir() / "repository")
        adapted = adapt_for_backends(folder, self.backends, self.has_gpu)
        models = model_folders(folder) if self.models is None else self.models
        self._prepared = Prepared(Path(source), folder, tuple(models), tuple(adapted))
        return self._prepared

    def _check_startable(self) -> None:
        if self.gpu and not self.has_gpu:
            raise ServerStartError(_NO_GPU_HINT)

    def _launch(self, prepared: Prepared, attempt: int) -> None:
        binary, ports = self.binary, self._local_ports()
        key = self._control_key_if(has_restricted_api(help_text(binary)), self.extra_args)
        args = tritonserver_args(
            prepared.folder,
            prepared.models,
            ports,
            sagemaker_port=ports[3] if self.sagemaker else None,
            exit_timeout=self.exit_timeout,
            control_key=key,
        )
        complete = [] if self.auto_complete_config else ["--disable-auto-complete-config"]
        self.command = [str(binary.path), *args, *self._process.binary_flags(binary), *complete, *self.extra_args]
        env = self._server_env(prepared, binary.environ())
        # the SageMaker frontend binds every interface: then the server gets a network of its own
        isolate = {p: (SageMakerGuard(key) if p == ports[3] else None) for p in ports} if self.sagemaker else None
        self._process.spawn(self.command, env, f"tritonserver-{attempt}.log", isolate=isolate)

    def _wait_ready(self, prepared: Prepared, deadline: Deadline) -> None:
        """Ready: every frontend started (read from the log), every startup model READY in the repository index,
        and ``/v2/health/ready`` 200."""
        log, models, rest = self._process.log, list(prepared.models), self._control_rest()
        assert log is not None
        frontends = [*FRONTENDS, *([SAGEMAKER_FRONTEND] if self.sagemaker else [])]
        wait_for_frontends(log, frontends, models, self._check_running, deadline, self.progress, self.log_tail)
        check_startup_models(rest, models, log.lines(), self.log_tail)
        wait_models_ready(rest, models, timeout=deadline, progress=self.progress, log_tail=self.log_tail)
        self._require_health_ready(rest)
        self._check_running()

    def _ended_words(self, how: str) -> str:
        return "tritonserver exited"

    def _alive_before_wait(self) -> None:
        self._process.require_running()  # also after stop(): a wait on a stopped server cannot succeed

    def _describe(self) -> str:
        return f"repository={str(self.repository)!r}, pid={self.pid}"


FRONTENDS = ("Started GRPCInferenceService", "Started HTTPService", "Started Metrics Service")
SAGEMAKER_FRONTEND = "Started Sagemaker HTTPService"


def wait_for_frontends(
    log: LogFile,
    frontends: Sequence[str],
    models: Sequence[str],
    check_running: Callable[[], None],
    deadline: Deadline,
    progress: ProgressCallback | None,
    log_tail: Callable[[], str],
) -> None:
    """Wait until the log says every frontend started (Triton loads the startup models before it opens its
    ports): reading the log is cheap, so it is polled every 50 ms, and the progress counts the loaded models."""
    seen: set[str] = set()

    def check() -> Poll:
        for line in log.read_new():
            seen.update(f for f in frontends if f in line)
        check_running()
        if len(seen) < len(frontends):
            ok, failed = loaded_models(log.lines())
            return Poll(False, f"{len(ok & set(models))}/{len(models)} models loaded, {len(failed)} failed")
        return Poll(True)

    wait_until(check, timeout=deadline, interval=0.05, progress=progress, log_tail=log_tail)


def check_startup_models(rest: TritonRest, models: list[str], lines: list[str], log_tail: Callable[[], str]) -> None:
    """After startup loading: raise ModelLoadError for every requested model that did not load, with Triton's
    reason (from the repository index, else the log)."""
    try:
        entries = rest.index()
    except (ServerError, OSError) as err:  # with --exit-on-error=false a failed init still opens the ports
        raise ServerStartError(
            f"tritonserver started but is not usable: {server_error(lines) or err}", log_tail=log_tail()
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
        raise ModelLoadError(first, failures[first], log_tail=log_tail(), failures=failures)
