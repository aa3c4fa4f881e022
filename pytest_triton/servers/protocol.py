"""What every server offers, whatever runs Triton: the :class:`TritonServer` protocol and its data.

Tests never know which launcher runs. A launcher is built from a repository and :class:`ServeOptions`
(``from_options``), prepares that repository for the server it runs (``prepare``: a staged copy, a folder
mounted in a container, a model.tar.gz in S3) and says what it changed, starts, stops, gives its log and how
its server ended, and hands out the transport that reaches it. Model control (load, unload, readiness) is a
separate object, :class:`~pytest_triton.servers.control.ModelControl`, offered only where the server allows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import Protocol
from typing import runtime_checkable

from pytest_triton.client.urls import InferenceEndpoint
from pytest_triton.client.urls import ServerUrls
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress

if TYPE_CHECKING:
    from typing import Self

    from pytest_triton.client.transports import Transport
    from pytest_triton.repository.onnx_adapter import AdaptedModel
    from pytest_triton.servers.control import ModelControl

# one default for every path (fixtures, the serve CLI, launchers built by hand): a first start on a busy
# machine loads python models in ~1.5 s each, and a first TensorRT start builds engines for minutes
DEFAULT_STARTUP_TIMEOUT = 120.0


@dataclass(frozen=True)
class Prepared:
    """A repository made ready for one server, and what was changed to get there.

    ``folder`` is what gets served, on this machine (a staged copy; the launcher owns it and removes it at
    stop: a test may write more model folders there and load them through ``launcher.control``); ``location`` is
    where the server sees it ("/models" in a container, "s3://..." for an endpoint; "" when it is ``folder``).
    ``models`` are the model folders to load; ``adapted`` the ONNX models served by the adapter, with how;
    ``notes`` anything else a reader of the report should know.
    """

    source: Path
    folder: Path
    models: tuple[str, ...]
    adapted: tuple[AdaptedModel, ...] = ()
    notes: tuple[str, ...] = ()
    location: str = ""

    def describe(self) -> list[str]:
        """One line per change, for the session summary."""
        return [f"adapted: {model.describe()}" for model in self.adapted] + list(self.notes)


@dataclass(frozen=True)
class ServeOptions:
    """What a launcher may be told, from pytest's options or the ``serve`` command line.

    ``settings`` carries launcher-specific values by name (``tritonserver``, ``url``, ``image``, ``network``,
    ``shm_size``, ``endpoint``...): a launcher reads the ones it knows, so other packages' launchers get
    their own settings through the same object.
    """

    gpu: bool = False
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    staging: Path | None = None
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    sagemaker: bool = False
    progress: ProgressCallback | None = stderr_progress

    def setting(self, name: str, default: Any = None) -> Any:
        """A launcher-specific value, or ``default`` when it was not given (None counts as not given)."""
        value = self.settings.get(name)
        return default if value is None else value


@runtime_checkable
class TritonServer(Protocol):
    """A Triton server that a test can start, query and stop, whatever runs it: what a launcher class makes.

    Launchers are configured before ``start()`` and started once; ``start()`` prepares the repository
    (unless ``prepare()`` ran already) and returns only when the server and every requested model are ready,
    raising :class:`~pytest_triton.errors.ModelLoadError`, :class:`~pytest_triton.errors.ServerStartError` or
    :class:`~pytest_triton.errors.ServerTimeout` otherwise. ``stop()`` is idempotent and removes everything
    the launcher made. Used as a context manager, a launcher starts on entry and stops on exit.

    Optional class attributes, read with a default where a launcher leaves them out:
    ``serves_one_model`` (False: the server serves only a default model, so one server is made per model),
    ``runs_here`` (True: the server runs on this machine, so this machine's TensorRT is the one it uses) and
    ``needs_repository(options)`` (True: False where the options point at a server that exists already).
    """

    name: ClassVar[str]

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """Build a launcher for ``repository`` (None where the launcher serves something that exists)."""
        ...

    @property
    def urls(self) -> ServerUrls:
        """The server's endpoints (only meaningful once started)."""
        ...

    @property
    def backends(self) -> frozenset[str]:
        """The backends the server offers, e.g. ``{"python"}`` for the embedded binary."""
        ...

    @property
    def has_gpu(self) -> bool:
        """Whether the server can see at least one GPU."""
        ...

    @property
    def prepared(self) -> Prepared | None:
        """What ``prepare()`` made (None before it ran)."""
        ...

    @property
    def control(self) -> ModelControl | None:
        """Load, unload and readiness of models; None where the server has no model control."""
        ...

    @property
    def control_headers(self) -> dict[str, str]:
        """The header that opens model control where the server restricts it ({} where it does not); give it to
        tritonclient's ``load_model``, ``unload_model`` and ``get_model_repository_index`` as ``headers=``."""
        ...

    def prepare(self, source: Path) -> Prepared:
        """Make ``source`` servable by this server (stage, adapt, package) and say what was changed."""
        ...

    def start(self) -> Self:
        """Start (or attach to) the server and wait until it and its models are ready."""
        ...

    def stop(self) -> None:
        """Stop the server and remove everything the launcher made; calling it again does nothing."""
        ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def logs(self) -> str:
        """The whole server log so far ("" where the launcher cannot read it)."""
        ...

    def log_tail(self, lines: int = 50) -> str:
        """The last ``lines`` lines of the server log."""
        ...

    def exit_status(self) -> str | None:
        """How a server this launcher runs has ended ("was killed by SIGSEGV"); None while it runs or is not ours."""
        ...

    def check_alive(self) -> None:
        """Raise ServerError, saying how the server ended and with its log tail, if it no longer runs."""
        ...

    def transport(self, protocol: InferenceEndpoint = "http") -> Transport:
        """An inference transport that reaches this server (``http``, ``grpc`` or ``sagemaker``)."""
        ...
