"""The URL launcher: attach to a Triton server that is already running; it starts and stops nothing."""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING
from typing import final

from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.servers.base import ServerUrls
from pytest_triton.servers.rest import TritonRest
from pytest_triton.servers.rest import fetch_text
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress
from pytest_triton.servers.wait import wait_models_ready
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self


def _derived_urls(http_url: str) -> tuple[str, str]:
    """gRPC and metrics URLs for Triton's default layout (HTTP port P, gRPC P+1, metrics P+2)."""
    parsed = urllib.parse.urlsplit(http_url)
    host = parsed.hostname or "127.0.0.1"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{port + 1}", f"{parsed.scheme}://{host}:{port + 2}/metrics"


@final
class UrlLauncher:
    """A Triton server someone else runs, reached at ``http_url``.

    ``grpc_url`` and ``metrics_url`` default to Triton's port layout (HTTP port P → gRPC P+1, metrics
    P+2). ``start()`` waits up to ``startup_timeout`` s for the server (and ``models``) to be ready and
    ``stop()`` leaves it running. There is no log to read. ``backends`` defaults to the backends of the
    models that are READY when it is first read (a lower bound: the API does not list backends);
    ``has_gpu`` defaults to whether the metrics endpoint reports GPU metrics.
    """

    def __init__(
        self,
        http_url: str,
        grpc_url: str | None = None,
        *,
        metrics_url: str | None = None,
        sagemaker_url: str | None = None,
        models: Sequence[str] = (),
        startup_timeout: float = 30.0,
        backends: frozenset[str] | None = None,
        has_gpu: bool | None = None,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        http = http_url.rstrip("/")
        if "://" not in http:
            http = "http://" + http
        grpc_default, metrics_default = _derived_urls(http)
        self._urls = ServerUrls(
            http=http,
            grpc=grpc_url or grpc_default,
            metrics=metrics_url or metrics_default,
            sagemaker=sagemaker_url,
        )
        self.models = list(models)
        self.startup_timeout = startup_timeout
        self.progress = progress
        self._backends = backends
        self._has_gpu = has_gpu
        self._rest = TritonRest(http)

    @property
    def urls(self) -> ServerUrls:
        """The server's endpoints."""
        return self._urls

    @property
    def backends(self) -> frozenset[str]:
        """The backends the server is known to offer (given, or those of its READY models)."""
        if self._backends is None:
            found = set()
            for entry in self._rest.index():
                if entry.state == "READY":
                    config = self._rest.config(entry.name)
                    backend = str(config.get("backend") or config.get("platform") or "")
                    if backend:
                        found.add(backend)
            self._backends = frozenset(found)
        return self._backends

    @property
    def has_gpu(self) -> bool:
        """Whether the server reports GPU metrics (or what was given)."""
        if self._has_gpu is None:
            try:
                self._has_gpu = "nv_gpu_utilization{" in fetch_text(self._urls.metrics)
            except ServerError:
                self._has_gpu = False
        return self._has_gpu

    def start(self) -> Self:
        """Wait until the server answers and ``models`` are ready; raises ServerStartError if nothing answers."""

        def live() -> Poll:
            return Poll(self._rest.live(), "no answer yet")

        try:
            wait_until(
                live,
                timeout=self.startup_timeout,
                what=f"Triton at {self._urls.http}",
                progress=self.progress,
            )
        except TimeoutError:
            raise ServerStartError(
                f"no Triton server answers at http_url={self._urls.http!r} "
                f"(GET /v2/health/live, {self.startup_timeout:.0f} s); start it or fix the URL"
            ) from None
        self.wait_ready(self.models, self.startup_timeout)
        return self

    def stop(self) -> None:
        """Nothing to stop: the server belongs to someone else."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"UrlLauncher(http_url={self._urls.http!r}, grpc_url={self._urls.grpc!r})"

    def logs(self) -> str:
        """Always "": the server's log is not reachable through its API."""
        return ""

    def log_tail(self, lines: int = 50) -> str:
        """Always "" (see :meth:`logs`)."""
        return ""

    def exit_status(self) -> str | None:
        """Always None: the server's process belongs to someone else."""
        return None

    def check_alive(self) -> None:
        """Raise ServerError if the server no longer answers ``GET /v2/health/live``."""
        if not self._rest.live():
            raise ServerError(f"the Triton server at {self._urls.http} no longer answers GET /v2/health/live")

    def model_ready(self, name: str, version: str = "") -> bool:
        """Whether ``GET /v2/models/NAME[/versions/V]/ready`` answers 200."""
        return self._rest.model_ready(name, version)

    def load_model(self, name: str) -> None:
        """Load a model (the server must run with ``--model-control-mode=explicit``)."""
        self._rest.load(name)

    def unload_model(self, name: str) -> None:
        """Unload a model."""
        self._rest.unload(name)

    def wait_ready(self, models: Sequence[str], timeout: float) -> None:
        """Wait until the server and each of ``models`` are ready, at most ``timeout`` s."""
        wait_models_ready(
            self._rest, models, timeout=timeout, what=f"Triton at {self._urls.http}", progress=self.progress
        )
