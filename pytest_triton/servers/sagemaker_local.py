"""The ``sagemaker-local`` launcher: Triton started the way the SageMaker Triton container's serve script does.

It takes a model.tar.gz (what ``--cloud`` uploads) or a repository folder, unpacks it into its own work
folder (the stand-in for ``/opt/ml/model``), derives the command line with
:func:`~pytest_triton.servers.sagemaker_serve.serve_plan` from the container environment (the archive's
``.env`` sidecar, then the given ``env``) and runs the ``tritonserver`` binary with only the SageMaker
frontend: no HTTP, so no model control; gRPC and metrics only where the variables turn them on. It is ready
when ``/ping`` answers 200, as SageMaker's health check requires.

Two deviations from the container, both announced in :attr:`notes`: ONNX models are adapted for a binary
without the onnxruntime backend (as the local launcher does), and the ports are free ones on this machine
(``SAGEMAKER_BIND_TO_PORT``, and the gRPC/metrics ports when they are on) instead of 8080/8001/8002.
Triton 2.51's SageMaker frontend binds 0.0.0.0 (it has no address flag).
"""

from __future__ import annotations

import os
import shutil
import tarfile
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import final

from pytest_triton.errors import ConfigError
from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.hardware import gpu_visible
from pytest_triton.repository.sagemaker import read_env_file
from pytest_triton.repository.sagemaker import sidecar_env
from pytest_triton.servers.base import DEFAULT_STARTUP_TIMEOUT
from pytest_triton.servers.base import LOCALHOST
from pytest_triton.servers.base import InferenceEndpoint
from pytest_triton.servers.base import Prepared
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.base import ServerUrls
from pytest_triton.servers.base import StartedInWith
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import resolve_binary
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.logs import server_error
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.process import describe_exit
from pytest_triton.servers.rest import fetch_text
from pytest_triton.servers.sagemaker_serve import RepositoryLayout
from pytest_triton.servers.sagemaker_serve import ServePlan
from pytest_triton.servers.sagemaker_serve import serve_plan
from pytest_triton.servers.triton_process import TritonProcess
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.client.transports import SageMakerTransport

_FRONTEND_STARTED = "Started Sagemaker HTTPService"


def is_archive(path: Path) -> bool:
    """Whether ``path`` names a model archive (``.tar.gz``, ``.tgz``, ``.tar``) rather than a folder."""
    return path.name.endswith((".tar.gz", ".tgz", ".tar"))


def unpack_model_archive(archive: Path, dest: Path) -> Path:
    """Unpack a model.tar.gz into ``dest`` as SageMaker does into /opt/ml/model (links and escapes refused)."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ConfigError(
            f"cannot unpack {str(archive)!r}: {exc}; check it with `tar -tzf {archive}`", path=str(archive)
        ) from exc
    return dest


def _sagemaker_port_of(plan: ServePlan) -> int:
    value = plan.flag("--sagemaker-port")
    return int(value) if value else 8080


@final
class SageMakerLocalLauncher(StartedInWith):
    """A ``tritonserver`` serving a model.tar.gz (or folder) exactly as the SageMaker Triton container would.

    ``env`` is the container environment (``SAGEMAKER_TRITON_DEFAULT_MODEL_NAME`` and the other variables of
    the serve script), on top of the archive's ``.env`` sidecar. ``start()`` raises
    :class:`ConfigError` where the serve script would exit before Triton starts, with its own words.
    """

    name: ClassVar[str] = "sagemaker-local"
    # only the default model answers /invocations: a repository is served once per model it is called for
    serves_one_model: ClassVar[bool] = True

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        env: Mapping[str, str] | None = None,
        binary: str | os.PathLike[str] | TritonBinary | None = None,
        gpu: bool = False,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        stop_timeout: float = 10.0,
        staging: Path | None = None,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        self.source = Path(source).absolute()
        self.env = dict(env or {})
        self.gpu = gpu
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.staging = staging
        self.progress = progress
        self.notes: list[str] = []
        self.plan: ServePlan | None = None
        self.command: list[str] = []
        self._prepared: Prepared | None = None
        self._binary_arg = binary
        self._binary: TritonBinary | None = None
        self._model_dir: Path | None = None
        self._process = TritonProcess("sagemaker-local tritonserver", staging=staging)
        self._urls: ServerUrls | None = None

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """A launcher from the common options: ``repository`` is a model.tar.gz or a folder; ``models`` must be
        None or the one default model (SageMaker serves one); setting ``tritonserver`` names the binary."""
        if repository is None:
            raise ConfigError("the sagemaker-local launcher serves a model.tar.gz or a repository folder: give one")
        env = dict(options.env)
        if models is not None:
            if len(models) != 1:
                raise ConfigError(
                    f"models={list(models)!r}: a SageMaker endpoint serves one model (its default model); "
                    "name one, or set SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"
                )
            env.setdefault("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME", models[0])
        return cls(
            repository,
            env=env,
            binary=options.setting("tritonserver"),
            gpu=options.gpu,
            startup_timeout=options.startup_timeout,
            staging=options.staging,
            progress=options.progress,
        )

    # -- what it serves ----------------------------------------------------------------------------------

    @property
    def prepared(self) -> Prepared | None:
        """The unpacked repository and what was changed in it (None before ``prepare()``/``start()``)."""
        return self._prepared

    @property
    def control(self) -> None:
        """None: the container serves only /ping and /invocations, with no model control."""
        return None

    @property
    def binary(self) -> TritonBinary:
        """The tritonserver binary (found on first use, as the local launcher finds it)."""
        if self._binary is None:
            self._binary = resolve_binary(self._binary_arg)
        return self._binary

    @property
    def backends(self) -> frozenset[str]:
        return self.binary.backends

    @property
    def has_gpu(self) -> bool:
        return self.gpu and gpu_visible()

    @property
    def model_dir(self) -> Path:
        """The unpacked repository (the stand-in for /opt/ml/model); raises before prepare()."""
        if self._model_dir is None:
            raise ServerError("SageMakerLocalLauncher is not prepared; call prepare() or start() first")
        return self._model_dir

    @property
    def default_model(self) -> str:
        """The model ``/invocations`` serves (SAGEMAKER_TRITON_DEFAULT_MODEL_NAME, as the serve script settled it)."""
        if self.plan is None or self.plan.default_model is None:
            raise ServerError("SageMakerLocalLauncher has no default model before prepare()")
        return self.plan.default_model

    def container_env(self) -> dict[str, str]:
        """The container's environment: the archive's ``.env`` sidecar, then ``env``."""
        sidecar = sidecar_env(self.source) if is_archive(self.source) else self.source / ".env"
        values = read_env_file(sidecar) if sidecar.is_file() else {}
        values.update(self.env)
        return values

    def prepare(self, source: Path | None = None) -> Prepared:
        """Unpack (or copy) the archive into the work folder as /opt/ml/model, check it as the serve script
        does, adapt ONNX models for this binary, and settle the command line."""
        from pytest_triton.repository.onnx_adapter import AdapterTarget
        from pytest_triton.repository.onnx_adapter import adapt_repository
        from pytest_triton.repository.onnx_adapter import onnx_models

        if source is not None:
            self.source = Path(source).absolute()
        if self._prepared is not None:
            return self._prepared
        if not self.source.exists():
            raise ConfigError(f"{str(self.source)!r} does not exist; pass a model.tar.gz or a repository folder")
        model_dir = self._process.workdir() / "model"
        if is_archive(self.source):
            unpack_model_archive(self.source, model_dir)
        elif self.source.is_dir():
            shutil.copytree(self.source, model_dir, symlinks=False, ignore=shutil.ignore_patterns(".env"))
        else:
            raise ConfigError(f"{str(self.source)!r} is neither a model.tar.gz nor a repository folder")
        env = self.container_env()
        if env.get("SAGEMAKER_MULTI_MODEL") == "true":
            raise ConfigError(
                "SAGEMAKER_MULTI_MODEL=true: multi-model endpoints load models per request from S3, which "
                "sagemaker-local does not emulate; test each model as a single-model archive"
            )
        # the serve script's checks run on what SageMaker unpacked, before any adaptation
        self.plan = serve_plan(env, RepositoryLayout.of(model_dir), model_repository=model_dir)
        adapted: list[Any] = []
        if "onnxruntime" not in self.backends and onnx_models(model_dir):
            adapted = adapt_repository(model_dir, AdapterTarget.this_environment(self.backends, self.has_gpu))
        self._model_dir = model_dir
        self.notes += list(self.plan.warnings)
        assert self.plan.default_model is not None
        self._prepared = Prepared(
            self.source, model_dir, (self.plan.default_model,), tuple(adapted), tuple(self.notes), "/opt/ml/model"
        )
        return self._prepared

    # -- lifecycle -------------------------------------------------------------------------------------

    def _ports_env(self, env: dict[str, str]) -> dict[str, str]:
        """Free ports for the frontends the container would open, as the variables that name them."""
        wanted = ["SAGEMAKER_BIND_TO_PORT"]
        if env.get("SAGEMAKER_TRITON_ALLOW_GRPC") == "true":
            wanted.append("SAGEMAKER_TRITON_GRPC_PORT")
        if env.get("SAGEMAKER_TRITON_ALLOW_METRICS") == "true":
            wanted.append("SAGEMAKER_TRITON_METRICS_PORT")
        missing = [name for name in wanted if not env.get(name)]
        if not missing:
            return {}
        reservation = self._process.ports = reserve_ports(len(missing))
        placed = dict(zip(missing, (str(p) for p in reservation.ports)))
        self.notes.append("ports chosen here: " + ", ".join(f"{k}={v}" for k, v in placed.items()))
        return placed

    def start(self) -> Self:
        """Start Triton as the container would and wait until ``/ping`` answers 200."""
        if self._process.proc is not None:
            raise ServerError("SageMakerLocalLauncher.start() called twice; create a new launcher to start again")
        try:
            self.prepare()
            env = self.container_env()
            env.update(self._ports_env(env))
            plan = serve_plan(
                env,
                RepositoryLayout.of(self.model_dir),
                gpu_count=_gpu_count() if self.has_gpu else 0,
                model_repository=self.model_dir,
            )
            self.plan = plan
            binary = self.binary
            self.command = [str(binary.path), *plan.args, *self._process.binary_flags(binary)]
            process_env = binary.environ()
            process_env.update(env)
            assert plan.default_model is not None
            process_env["SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"] = plan.default_model  # the script exports it
            self._urls = _urls(plan, env)
            self._process.spawn(self.command, process_env, "tritonserver.log")
            self._wait_started(plan)
            self._process.started()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_started(self, plan: ServePlan) -> None:
        log, proc = self._process.log, self._process.proc
        assert log is not None
        assert proc is not None
        assert self._urls is not None
        ping = f"{self._urls.sagemaker}/ping"
        model = plan.default_model or ""

        def check() -> Poll:
            log.read_new()
            code = proc.poll()
            if code is not None:
                self._raise_exited(code, model)
            if not any(_FRONTEND_STARTED in line for line in log.lines()):
                return Poll(False, f"loading {model}")
            try:
                fetch_text(ping, timeout=2.0)
            except ServerError as exc:
                return Poll(False, str(exc))
            return Poll(True, "/ping answered 200")

        wait_until(
            check,
            timeout=self.startup_timeout,
            what="sagemaker-local tritonserver",
            interval=0.1,
            progress=self.progress,
            log_tail=self.log_tail,
        )

    def _raise_exited(self, code: int, model: str) -> None:
        assert self._process.log is not None
        assert self._model_dir is not None
        lines = self._process.log.lines()
        # model namespacing names models "<repository>::<model>" in the log
        reason = model_failure_reason(lines, f"{self._model_dir}::{model}") or model_failure_reason(lines, model)
        if reason:
            raise ModelLoadError(model, reason, log_tail=self.log_tail())
        raise ServerStartError(
            f"tritonserver (sagemaker-local) {describe_exit(code)}: {server_error(lines) or 'see the log'}",
            exit_code=code,
            log_tail=self.log_tail(),
        )

    def stop(self) -> None:
        """Stop the server and its python stubs, remove their shared memory and the work folder."""
        self._process.stop(self.stop_timeout)

    # -- queries ---------------------------------------------------------------------------------------

    @property
    def urls(self) -> ServerUrls:
        """Only ``sagemaker`` (``/ping``, ``/invocations``), plus gRPC/metrics where the variables turn them on."""
        if self._urls is None:
            raise ServerError("SageMakerLocalLauncher is not started; call start() first")
        return self._urls

    def logs(self) -> str:
        return self._process.logs()

    def log_tail(self, lines: int = 50) -> str:
        return self._process.log_tail(lines)

    def exit_status(self) -> str | None:
        return self._process.exit_status()

    def check_alive(self) -> None:
        self._process.check_alive()

    def transport(self, protocol: InferenceEndpoint = "sagemaker", *, binary: bool = True) -> SageMakerTransport:
        """The ``/invocations`` transport for the default model (inputs read from its config.pbtxt)."""
        from pytest_triton.client.transports import SageMakerTransport
        from pytest_triton.cloud.specs import model_input_specs

        if protocol != "sagemaker":
            raise ConfigError(f"protocol={protocol!r}: sagemaker-local serves only 'sagemaker' (/invocations)")
        specs = model_input_specs(self.model_dir, self.default_model)
        url = self.urls.sagemaker
        assert url is not None
        return SageMakerTransport(url, specs, binary=binary)

    def __repr__(self) -> str:
        return f"SageMakerLocalLauncher(source={str(self.source)!r}, urls={self._urls})"


def _urls(plan: ServePlan, env: Mapping[str, str]) -> ServerUrls:
    grpc = f"{LOCALHOST}:{plan.flag('--grpc-port') or 8001}" if plan.flag("--allow-grpc") == "true" else None
    metrics = None
    if plan.flag("--allow-metrics") == "true":
        metrics = f"http://{LOCALHOST}:{plan.flag('--metrics-port') or 8002}/metrics"
    return ServerUrls(http=None, grpc=grpc, metrics=metrics, sagemaker=f"http://{LOCALHOST}:{_sagemaker_port_of(plan)}")


def _gpu_count() -> int:
    """What ``nvidia-smi -L`` would count: the /dev/nvidiaN devices."""
    return sum(1 for p in Path("/dev").glob("nvidia[0-9]*") if p.name[len("nvidia") :].isdigit())
