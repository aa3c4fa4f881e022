"""The ``sagemaker-local`` launcher: Triton started the way the SageMaker Triton container's serve script does.

It takes a model.tar.gz (what ``--cloud`` uploads) or a repository folder, unpacks it into its own work
folder (the stand-in for ``/opt/ml/model``, :mod:`~pytest_triton.servers.sagemaker.model_data`), derives the
command line with :func:`~pytest_triton.cloud.serve_script.serve_plan` from the container environment (the
archive's ``<archive>.env`` sidecar, or a folder's ``sagemaker.env``, then the given ``env``) and runs the
``tritonserver`` binary with only the SageMaker frontend: no HTTP, so no model control; gRPC and metrics only
where the variables turn them on (:class:`LaunchPlan`). It is ready when ``/ping`` answers 200, as SageMaker's
health check requires.

Two deviations from the container, both announced in :attr:`notes`: ONNX models are adapted for a binary
without the onnxruntime backend (as the local launcher does), and the ports are free ones on this machine
(``SAGEMAKER_BIND_TO_PORT``, and the gRPC/metrics ports when they are on) instead of 8080/8001/8002.
gRPC and metrics, when the variables turn them on, bind 127.0.0.1 (``--grpc-address``/``--metrics-address``
added to ``SAGEMAKER_TRITON_ADDITIONAL_ARGS``, unless that variable names an address itself). Triton 2.51's
SageMaker frontend binds 0.0.0.0: it has no address flag (``tritonserver --help`` of the 2.51 binary lists
``--sagemaker-port``, ``--sagemaker-safe-port-range`` and ``--sagemaker-thread-count`` only).

Given an image (``image=``, ``--triton-image``), it runs in a container of that image instead, as SageMaker
runs it: the unpacked archive mounted read-only at ``/opt/ml/model``, the container environment, a bridge network
with the ports above published on 127.0.0.1 only. An image with the serve script on its PATH (NGC's images
have ``/usr/bin/serve``) is started with ``serve``, so that script itself decides the command line; an image
without it (the local stand-in) is started with the command line :func:`serve_plan` derives. ONNX models are
adapted only where the image has no onnxruntime backend.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING
from typing import ClassVar
from typing import final

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.client.rest import fetch_text
from pytest_triton.client.urls import LOCALHOST
from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.client.urls import ServerUrls
from pytest_triton.cloud.serve_script import RepositoryLayout
from pytest_triton.cloud.serve_script import ServePlan
from pytest_triton.cloud.serve_script import serve_plan
from pytest_triton.errors import ConfigError
from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.hardware import gpu_visible
from pytest_triton.servers.base import Runner
from pytest_triton.servers.base import ServerBase
from pytest_triton.servers.base import adapt_for_backends
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import help_text
from pytest_triton.servers.binary import resolve_binary
from pytest_triton.servers.control import ControlKey
from pytest_triton.servers.control import has_restricted_api
from pytest_triton.servers.control import restricts_api
from pytest_triton.servers.control import users_control_key
from pytest_triton.servers.docker.container import CONTAINER_SETTINGS
from pytest_triton.servers.docker.container import DEFAULT_CONTAINER_STARTUP_TIMEOUT
from pytest_triton.servers.docker.container import TritonContainer
from pytest_triton.servers.docker.container import container_settings
from pytest_triton.servers.docker.image import adapt_for_image
from pytest_triton.servers.local.triton_process import TritonProcess
from pytest_triton.servers.logs import model_failure_reason
from pytest_triton.servers.logs import server_error
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.protocol import DEFAULT_STARTUP_TIMEOUT
from pytest_triton.servers.protocol import Prepared
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.relay import SageMakerGuard
from pytest_triton.servers.sagemaker.model_data import MODEL_MOUNT
from pytest_triton.servers.sagemaker.model_data import default_model_env
from pytest_triton.servers.sagemaker.model_data import read_container_env
from pytest_triton.servers.sagemaker.model_data import serve_script_checks
from pytest_triton.servers.sagemaker.model_data import server_repository
from pytest_triton.servers.sagemaker.model_data import unpack_as_sagemaker
from pytest_triton.servers.wait import Deadline
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.client.transports import SageMakerTransport

_FRONTEND_STARTED = "Started Sagemaker HTTPService"
ADDITIONAL_ARGS = "SAGEMAKER_TRITON_ADDITIONAL_ARGS"  # the serve script appends its words to Triton's command line
# the settings the launcher reads: the docker launcher's container settings, for a run in an image
LOCAL_SETTINGS: Mapping[str, str] = {
    **CONTAINER_SETTINGS,
    "image": "a Triton image to run the server in (default: a process here)",
    "tritonserver": "the tritonserver binary of the process (default: on PATH, else nvidia-pytriton's)",
}


@final
class SageMakerLocalLauncher(ServerBase):
    """A ``tritonserver`` serving a model.tar.gz (or folder) exactly as the SageMaker Triton container would;
    ``start()`` raises :class:`ConfigError` where the serve script would exit before Triton starts, in its words."""

    name: ClassVar[str] = "sagemaker-local"
    setting_keys: ClassVar[Mapping[str, str]] = LOCAL_SETTINGS
    # only the default model answers /invocations: a repository is served once per model it is called for
    serves_one_model: ClassVar[bool] = True

    def __init__(
        self,
        source: str | os.PathLike[str],
        *,
        env: Mapping[str, str] | None = None,
        binary: str | os.PathLike[str] | TritonBinary | None = None,
        image: str | TritonContainer | None = None,
        gpu: bool = False,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        stop_timeout: float = 10.0,
        staging: Path | None = None,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        self.container = _container(image, gpu=gpu, progress=progress)
        runner: Runner = self.container or TritonProcess("sagemaker-local tritonserver", staging=staging)
        super().__init__(
            Path(source).absolute(),
            runner,
            startup_timeout=startup_timeout,
            stop_timeout=stop_timeout,
            sagemaker=True,
            env=env,
            progress=progress,
        )
        self.gpu, self.staging = gpu, staging
        self.notes: list[str] = []
        self.plan: ServePlan | None = None
        self._binary_arg = binary
        self._model_dir: Path | None = None

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """From the common options: ``repository`` a model.tar.gz or folder, ``models`` None or its default model."""
        if repository is None:
            raise ConfigError("the sagemaker-local launcher serves a model.tar.gz or a repository folder: give one")
        container, startup_timeout = container_from_options(options)
        return cls(
            repository,
            env=default_model_env(options.env, models),
            binary=options.setting("tritonserver"),
            image=container,
            gpu=options.gpu,
            startup_timeout=startup_timeout,
            staging=options.staging,
            progress=options.progress,
        )

    @property
    def source(self) -> Path:
        """The model.tar.gz or folder served."""
        return self._source()

    @property
    def control(self) -> None:
        """None: the container serves only /ping and /invocations, with no model control."""
        return None

    @cached_property
    def binary(self) -> TritonBinary:
        """The tritonserver binary (found on first use, as the local launcher finds it)."""
        return resolve_binary(self._binary_arg)

    @property
    def backends(self) -> frozenset[str]:
        """The backends of the binary, or of the image's ``/opt/tritonserver/backends``."""
        return self.binary.backends if self.container is None else self.container.facts().backends

    @property
    def has_gpu(self) -> bool:
        return self.container.gpu if self.container is not None else self.gpu and gpu_visible()

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
        """The container's environment: the archive's ``<archive>.env`` or the folder's ``sagemaker.env``, then env."""
        return read_container_env(self.source, self.env)

    def prepare(self, source: Path | None = None) -> Prepared:
        """Unpack the archive (copy the folder) as /opt/ml/model, check it as the serve script does, adapt ONNX."""
        if source is not None:
            self.repository = Path(source).absolute()
        if self._prepared is not None:
            return self._prepared
        model_dir = unpack_as_sagemaker(self.source, self._runner().workdir() / "model")
        # the serve script's checks run on what SageMaker unpacked, before any adaptation
        plan = self.plan = serve_script_checks(self.container_env(), model_dir, in_container=self.container is not None)
        if self.container is not None:
            adapted = adapt_for_image(model_dir, self.container.facts(), gpu=self.container.gpu)
            self.notes.append(container_note(self.container))
        else:
            adapted = adapt_for_backends(model_dir, self.backends, self.has_gpu)
        self._model_dir = model_dir
        self.notes += list(plan.warnings)
        models, notes = (self.default_model,), tuple(self.notes)
        self._prepared = Prepared(self.source, model_dir, models, tuple(adapted), notes, MODEL_MOUNT)
        return self._prepared

    def transport(self, protocol: InferenceEndpoint = "sagemaker", *, binary: bool = True) -> SageMakerTransport:
        """The ``/invocations`` transport for the default model (inputs read from its config.pbtxt)."""
        if protocol != "sagemaker":
            raise ConfigError(f"protocol={protocol!r}: sagemaker-local serves only 'sagemaker' (/invocations)")
        return invocations_transport(self.urls, self.model_dir, self.default_model, binary=binary)

    def _launch(self, prepared: Prepared, attempt: int) -> None:
        """Start Triton as the container would: the serve script's command line from the environment."""
        binary = None if self.container is not None else self.binary
        launch = LaunchPlan.of(self.container_env(), self._runner(), self.model_dir, gpu=self.has_gpu, binary=binary)
        self.notes += launch.notes
        self.plan, self._urls, args, self.control_key = launch.plan, launch.urls, launch.plan.args, launch.control_key
        if isinstance(self.runner, TritonProcess):
            self.command = [str(self.binary.path), *args, *self.runner.binary_flags(self.binary)]
            launch.spawn(self.runner, self.command, self.binary)
        elif self.container is not None:
            self.command = ["serve"] if self.container.facts().serve_script else ["tritonserver", *args]
            launch.run_in(self.container, self.command, self.model_dir)

    def _wait_ready(self, prepared: Prepared, deadline: Deadline) -> None:
        """Ready: the SageMaker frontend started (read from the log) and ``/ping`` answers 200."""
        check = functools.partial(frontend_ready, self._runner(), self.urls, self._check_running, self.default_model)
        what, tail = "sagemaker-local tritonserver", self.log_tail
        wait_until(check, timeout=deadline, what=what, interval=0.1, progress=self.progress, log_tail=tail)

    def _start_failure(self, code: int, how: str, lines: list[str]) -> Exception:
        return start_failure(self.plan, self.default_model, code, how, lines, self.log_tail())

    def _describe(self) -> str:
        return f"source={str(self.source)!r}, urls={self._urls}"


def container_from_options(options: ServeOptions) -> tuple[TritonContainer | None, float]:
    """The container setting ``image`` asks for (with the docker launcher's container settings; None: a process
    here) and the startup timeout that goes with it."""
    image = options.setting("image")
    if image is None:
        return None, options.startup_timeout
    container = TritonContainer(str(image), **container_settings(options), progress=options.progress)
    return container, float(options.setting("container_startup_timeout", DEFAULT_CONTAINER_STARTUP_TIMEOUT))


@dataclass(frozen=True)
class LaunchPlan:
    """How one attempt starts, as the serve script starts it but on this machine: the container environment
    with free ports for the frontends it opens (where ``env`` places none) and 127.0.0.1 for gRPC and metrics,
    the serve script's plan over that environment, and the notes saying what was placed here."""

    env: dict[str, str]
    plan: ServePlan
    notes: tuple[str, ...]
    control_key: ControlKey | None = None

    @classmethod
    def of(
        cls, env: Mapping[str, str], runner: Runner, model_dir: Path, *, gpu: bool, binary: TritonBinary | None = None
    ) -> Self:
        """The plan for the unpacked ``model_dir`` on ``runner`` (the container, or a process here of ``binary``),
        with the GPUs of this machine where ``gpu``; the ports are reserved on ``runner``, which releases them.
        Where the plan opens model control (gRPC on) and the binary or image can restrict it, it gets a key."""
        env, notes = dict(env), bridge_or_host(runner) if isinstance(runner, TritonContainer) else []
        placed = free_ports_env(env, runner)
        if placed:
            notes.append("ports chosen here: " + ", ".join(f"{k}={v}" for k, v in placed.items()))
        env.update(placed)
        if isinstance(runner, TritonContainer) and runner.network == "bridge":  # reached through published ports
            notes.append(f"frontends published on {LOCALHOST} only: the container runs on a bridge network")
        else:
            loopback, bound = loopback_env(env)
            if bound:
                notes.append(f"{' and '.join(bound)} bound to {LOCALHOST}")
            env.update(loopback)
            notes.append(f"reached through a relay on {LOCALHOST}: the server runs in a network namespace of its own")
        restricted = runner.facts().restricted_api if isinstance(runner, TritonContainer) else False
        if binary is not None:
            restricted = has_restricted_api(help_text(binary))
        given = env.get(ADDITIONAL_ARGS, "").split()  # as the serve script splits it
        if restricts_api(given):  # the user's own rule: theirs is the key
            key, added = users_control_key(given), None
        else:
            key = added = ControlKey() if restricted and opens_model_control(env) else None
        env.update(control_key_env(env, added))
        gpus = _gpu_count() if gpu else 0
        repository = server_repository(model_dir, in_container=isinstance(runner, TritonContainer))
        plan = serve_plan(env, RepositoryLayout.of(model_dir), gpu_count=gpus, model_repository=repository)
        assert plan.default_model is not None
        env[DEFAULT_MODEL_ENV] = plan.default_model  # the script exports it
        return cls(env, plan, tuple(notes), key)

    @property
    def urls(self) -> ServerUrls:
        """Where the frontends of the plan listen, on 127.0.0.1 (gRPC and metrics only where it turns them on)."""
        return _urls(self.plan)

    def run_in(self, container: TritonContainer, command: Sequence[str], model_dir: Path) -> None:
        """Start ``command`` in ``container`` with the archive read-only at /opt/ml/model; on a bridge network the
        plan's ports are published at the same numbers on 127.0.0.1 (on the host's they are already there)."""
        bridged = container.network == "bridge"
        published = {port: port for port in _frontend_ports(self.plan).values()} if bridged else None
        container.run(command, self.env, mounts={model_dir: MODEL_MOUNT}, published=published)

    def spawn(self, process: TritonProcess, command: Sequence[str], binary: TritonBinary) -> None:
        """Start ``command`` on ``process`` with ``binary``'s environment and the container's. The SageMaker
        frontend binds every interface, so the process gets a network of its own, reached on 127.0.0.1 at the
        ports of the plan; the SageMaker port's relay passes ``/ping`` and ``/invocations``, anything else only with
        the plan's control key (where it has none, never)."""
        guard = SageMakerGuard(self.control_key)
        isolate = {port: (guard if name == "sagemaker" else None) for name, port in _frontend_ports(self.plan).items()}
        process.spawn(command, {**binary.environ(), **self.env}, "tritonserver.log", isolate=isolate)


def frontend_ready(runner: Runner, urls: ServerUrls, check_running: Callable[[], None], model: str) -> Poll:
    """One look at a server starting to serve ``model``: ready once its log says the SageMaker frontend started
    and its ``/ping`` answers 200; ``check_running`` raises where the server has ended."""
    log = runner.log
    assert log is not None
    log.read_new()
    check_running()
    if not any(_FRONTEND_STARTED in line for line in log.lines()):
        return Poll(False, f"loading {model}")
    try:
        fetch_text(f"{urls.sagemaker}/ping", timeout=2.0)
    except ServerError as exc:
        return Poll(False, str(exc))
    return Poll(True, "/ping answered 200")


def invocations_transport(urls: ServerUrls, model_dir: Path, model: str, *, binary: bool) -> SageMakerTransport:
    """The ``/invocations`` transport for ``model`` at ``urls``, its inputs read from its config.pbtxt under
    ``model_dir``."""
    from pytest_triton.client.transports import SageMakerTransport
    from pytest_triton.cloud.specs import model_input_specs

    url = urls.sagemaker
    assert url is not None
    return SageMakerTransport(url, model_input_specs(model_dir, model), binary=binary)


def _container(
    image: str | TritonContainer | None, *, gpu: bool, progress: ProgressCallback | None
) -> TritonContainer | None:
    """The container to run in (None: a process here). It runs on a bridge network with the plan's ports
    published on 127.0.0.1 only (Triton's SageMaker frontend binds every interface, which on the host network
    is every interface of this machine); :func:`bridge_or_host` falls back where the daemon has no bridge."""
    if isinstance(image, str):
        image = TritonContainer(image, gpus=gpu, progress=progress)
    if image is not None:
        image.what = "sagemaker-local container"
        image.network = "bridge"
    return image


def bridge_or_host(container: TritonContainer) -> list[str]:
    """Keep the container on a bridge network where the daemon has one; where it has none (``dockerd
    --bridge=none``) run it on the host network, saying what that exposes. The notes for the report."""
    if container.client().networks.list(names=["bridge"]):
        return []
    container.network = "host"
    return [
        "this Docker daemon has no bridge network (--bridge=none): the container runs on the host network, where "
        "Triton's SageMaker frontend listens on every interface of this machine (gRPC and metrics on 127.0.0.1); "
        "give the daemon a bridge network to keep it on 127.0.0.1"
    ]


def container_note(container: TritonContainer) -> str:
    facts = container.facts()
    how = (
        f"started by the image's own serve script ({facts.serve_script}), as SageMaker starts it"
        if facts.serve_script
        else "the image has no serve script on its PATH: started with the command line that script derives"
    )
    return f"sagemaker-local in a container of {container.image} (archive read-only at {MODEL_MOUNT}); {how}"


def free_ports_env(env: Mapping[str, str], runner: Runner) -> dict[str, str]:
    """Free ports for the frontends the container would open and ``env`` does not place, as the variables
    that name them (the runner releases them)."""
    wanted = ["SAGEMAKER_BIND_TO_PORT"]
    if env.get("SAGEMAKER_TRITON_ALLOW_GRPC") == "true":
        wanted.append("SAGEMAKER_TRITON_GRPC_PORT")
    if env.get("SAGEMAKER_TRITON_ALLOW_METRICS") == "true":
        wanted.append("SAGEMAKER_TRITON_METRICS_PORT")
    missing = [name for name in wanted if not env.get(name)]
    if not missing:
        return {}
    reservation = runner.ports = reserve_ports(len(missing))
    return dict(zip(missing, (str(p) for p in reservation.ports)))


def start_failure(plan: ServePlan | None, model: str, code: int, how: str, lines: list[str], tail: str) -> Exception:
    """What a server that ended before ``/ping`` answered raises: ModelLoadError where the log names why the
    default model failed (model namespacing names it "<repository>::<model>"), else ServerStartError."""
    repository = (plan.flag("--model-repository") if plan is not None else None) or ""
    names = [f"{repository}::{model}", f"{repository.rstrip('/')}::{model}", model]
    reason = next((found for name in names if (found := model_failure_reason(lines, name))), "")
    if reason:
        return ModelLoadError(model, reason, log_tail=tail)
    error = server_error(lines) or "see the log"
    return ServerStartError(f"tritonserver (sagemaker-local) {how}: {error}", exit_code=code, log_tail=tail)


def loopback_env(env: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """``SAGEMAKER_TRITON_ADDITIONAL_ARGS`` with 127.0.0.1 for the gRPC and metrics frontends the variables turn
    on (they bind 0.0.0.0 otherwise; an address the user gave there is kept), and the frontends so bound."""
    given = env.get(ADDITIONAL_ARGS, "")
    switches = (("grpc", "SAGEMAKER_TRITON_ALLOW_GRPC"), ("metrics", "SAGEMAKER_TRITON_ALLOW_METRICS"))
    bound = [name for name, variable in switches if env.get(variable) == "true" and f"--{name}-address" not in given]
    if not bound:
        return {}, []
    added = [f"--{name}-address={LOCALHOST}" for name in bound]
    return {ADDITIONAL_ARGS: " ".join([given, *added]).strip()}, bound


def opens_model_control(env: Mapping[str, str]) -> bool:
    """Whether the container environment opens a frontend with model control: gRPC (the serve script runs
    Triton with explicit model control), or HTTP turned on through ``SAGEMAKER_TRITON_ADDITIONAL_ARGS``."""
    return env.get("SAGEMAKER_TRITON_ALLOW_GRPC") == "true" or "--allow-http=true" in env.get(ADDITIONAL_ARGS, "")


def control_key_env(env: Mapping[str, str], key: ControlKey | None) -> dict[str, str]:
    """``SAGEMAKER_TRITON_ADDITIONAL_ARGS`` with the flags that restrict model control to ``key`` (none where
    ``key`` is None), so an image's serve script passes them on too."""
    if key is None:
        return {}
    return {ADDITIONAL_ARGS: " ".join([env.get(ADDITIONAL_ARGS, ""), *key.flags()]).strip()}


def _frontend_ports(plan: ServePlan) -> dict[str, int]:
    value = plan.flag("--sagemaker-port")
    ports = {"sagemaker": int(value) if value else 8080}
    if plan.flag("--allow-grpc") == "true":
        ports["grpc"] = int(plan.flag("--grpc-port") or 8001)
    if plan.flag("--allow-metrics") == "true":
        ports["metrics"] = int(plan.flag("--metrics-port") or 8002)
    return ports


def _urls(plan: ServePlan) -> ServerUrls:
    ports = _frontend_ports(plan)
    return ServerUrls.local(None, ports.get("grpc"), ports.get("metrics"), ports["sagemaker"])


def _gpu_count() -> int:
    """What ``nvidia-smi -L`` would count: the /dev/nvidiaN devices."""
    return sum(1 for p in Path("/dev").glob("nvidia[0-9]*") if p.name[len("nvidia") :].isdigit())
