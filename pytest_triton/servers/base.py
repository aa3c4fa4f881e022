"""What every launcher offers: the URLs of a running Triton and the :class:`TritonLauncher` protocol.

Tests never know which launcher runs: a local process, a container, a SageMaker endpoint or a URL all
start, stop, report their URLs and logs, and answer per-model readiness the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING
from typing import Protocol
from typing import runtime_checkable

if TYPE_CHECKING:
    from typing import Self

LOCALHOST = "127.0.0.1"


@dataclass(frozen=True)
class ServerUrls:
    """The endpoints of one Triton server.

    ``http`` and ``metrics`` are full URLs (``http://127.0.0.1:8000``, ``http://127.0.0.1:8002/metrics``);
    ``grpc`` is ``host:port`` as tritonclient's gRPC client wants it; ``sagemaker`` is the SageMaker
    frontend's base URL (``/ping``, ``/invocations``) or None when it is not served.
    """

    http: str
    grpc: str
    metrics: str
    sagemaker: str | None = None

    @classmethod
    def local(
        cls,
        http_port: int,
        grpc_port: int,
        metrics_port: int,
        sagemaker_port: int | None = None,
        *,
        host: str = LOCALHOST,
    ) -> ServerUrls:
        """Build the URLs of a server listening on ``host`` with the given ports."""
        return cls(
            http=f"http://{host}:{http_port}",
            grpc=f"{host}:{grpc_port}",
            metrics=f"http://{host}:{metrics_port}/metrics",
            sagemaker=None if sagemaker_port is None else f"http://{host}:{sagemaker_port}",
        )

    def as_dict(self) -> dict[str, str]:
        """The URLs as a JSON-ready dict; ``sagemaker`` only when it is served."""
        out = {"http": self.http, "grpc": self.grpc, "metrics": self.metrics}
        if self.sagemaker is not None:
            out["sagemaker"] = self.sagemaker
        return out


@runtime_checkable
class TritonLauncher(Protocol):
    """A Triton server that a test can start, query and stop, whatever runs it.

    Launchers are configured in their constructor and then started once; ``start()`` returns only when the
    server and every requested model are ready, and raises :class:`~pytest_triton.errors.ModelLoadError`,
    :class:`~pytest_triton.errors.ServerStartError` or :class:`~pytest_triton.errors.ServerTimeout`
    otherwise. ``stop()`` is idempotent. Used as a context manager, a launcher starts on entry and stops
    on exit. (``isinstance(x, TritonLauncher)`` reads the properties on Python < 3.12, and a local
    launcher's ``urls`` raises before ``start()``: check started launchers.)
    """

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

    def start(self) -> Self:
        """Start (or attach to) the server and wait until it and its models are ready."""
        ...

    def stop(self) -> None:
        """Stop the server and everything it started; calling it again does nothing."""
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

    def model_ready(self, name: str, version: str = "") -> bool:
        """Whether model ``name`` (or one of its versions) is ready for inference."""
        ...

    def load_model(self, name: str) -> None:
        """Load (or reload) a model; raises ModelLoadError with Triton's text on failure."""
        ...

    def unload_model(self, name: str) -> None:
        """Unload a model."""
        ...

    def wait_ready(self, models: Sequence[str], timeout: float) -> None:
        """Wait until the server and every model in ``models`` are ready, at most ``timeout`` seconds."""
        ...
