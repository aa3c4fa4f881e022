"""The URL launcher: attach to a Triton server that is already running; it starts and stops nothing."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import ClassVar
from typing import final

from pytest_triton.client.rest import TritonRest
from pytest_triton.client.rest import fetch_text
from pytest_triton.client.urls import ServerUrls
from pytest_triton.errors import ConfigError
from pytest_triton.errors import ServerError
from pytest_triton.errors import ServerStartError
from pytest_triton.repository.layout import model_folders
from pytest_triton.servers.base import ServerBase
from pytest_triton.servers.control import ControlKey
from pytest_triton.servers.control import ModelControl
from pytest_triton.servers.protocol import DEFAULT_STARTUP_TIMEOUT
from pytest_triton.servers.protocol import Prepared
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import stderr_progress
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
class UrlLauncher(ServerBase):
    """A Triton server someone else runs, reached at ``http_url``.

    ``grpc_url`` and ``metrics_url`` default to Triton's port layout (HTTP port P → gRPC P+1, metrics
    P+2). ``start()`` waits up to ``startup_timeout`` s for the server (and ``models``) to be ready and
    ``stop()`` leaves it running. There is no log to read. ``backends`` defaults to the backends of the
    models that are READY when it is first read (a lower bound: the API does not list backends);
    ``has_gpu`` defaults to whether the metrics endpoint reports GPU metrics. The server reads its own
    repository: ``prepare()`` only lists the models of the folder it is given, to wait for them.
    ``control_key`` is the header of a server that restricts model control (setting ``control_header``).
    """

    name: ClassVar[str] = "url"
    setting_keys: ClassVar[Mapping[str, str]] = {
        "url": "HTTP URL of the running server (--triton-url)",
        "control_header": "NAME=VALUE: the header that opens model control of a server started with "
        "--http-restricted-api=model-repository:NAME=VALUE",
    }

    @classmethod
    def needs_repository(cls, options: ServeOptions) -> bool:
        """Never: the server reads its own repository."""
        return False

    def __init__(
        self,
        http_url: str,
        grpc_url: str | None = None,
        *,
        metrics_url: str | None = None,
        sagemaker_url: str | None = None,
        models: Sequence[str] = (),
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        backends: frozenset[str] | None = None,
        has_gpu: bool | None = None,
        control_key: ControlKey | None = None,
        progress: ProgressCallback | None = stderr_progress,
    ) -> None:
        super().__init__(None, models=models, startup_timeout=startup_timeout, progress=progress)
        self.control_key = control_key
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
        self._backends = backends
        self._has_gpu = has_gpu
        self._rest = TritonRest(http, headers=self.control_headers)

    @classmethod
    def from_options(
        cls, repository: Path | None, options: ServeOptions, *, models: Sequence[str] | None = None
    ) -> Self:
        """A launcher for the server at setting ``url``; ``repository`` (optional) names the models to wait for."""
        url = options.setting("url")
        if not url:
            raise ConfigError(
                "the url launcher needs the server's URL: pass --triton-url http://HOST:PORT to pytest "
                "(python -m pytest_triton serve: --url http://HOST:PORT)"
            )
        header = options.setting("control_header")
        key = ControlKey.parse(str(header)) if header else None
        launcher = cls(str(url), startup_timeout=options.startup_timeout, control_key=key, progress=options.progress)
        if models is not None:
            launcher.models = list(models)
        if repository is not None:
            launcher.prepare(repository)
        return launcher

    def prepare(self, source: Path) -> Prepared:
        """Nothing is staged (the server reads its own repository); the models of ``source`` are waited for."""
        if not self.models:
            self.models = model_folders(Path(source))
        note = f"served by the Triton at {self.urls.http}, from its own copy of the repository"
        self._prepared = Prepared(Path(source), Path(source), tuple(self.models), notes=(note,))
        return self._prepared

    @property
    def control(self) -> ModelControl:
        """Load, unload and readiness of the server's models (it must run with explicit model control to load)."""
        what = f"Triton at {self.urls.http}"
        return ModelControl(self._rest.base_url, progress=self.progress, what=what, headers=self.control_headers)

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
                self._has_gpu = "nv_gpu_utilization{" in fetch_text(self.urls.need("metrics"))
            except ServerError:
                self._has_gpu = False
        return self._has_gpu

    def start(self) -> Self:
        """Wait until the server answers and ``models`` are ready; raises ServerStartError if nothing answers."""
        self._launched = True

        def live() -> Poll:
            return Poll(self._rest.live(), "no answer yet")

        http = self.urls.http
        try:
            wait_until(live, timeout=self.startup_timeout, what=f"Triton at {http}", progress=self.progress)
        except TimeoutError:
            raise ServerStartError(
                f"no Triton server answers at http_url={http!r} "
                f"(GET /v2/health/live, {self.startup_timeout:.0f} s); start it or fix the URL"
            ) from None
        self.control.wait_ready(self.models or [], self.startup_timeout)
        return self

    def check_alive(self) -> None:
        """Raise ServerError if the server no longer answers ``GET /v2/health/live`` (``stop()`` leaves it
        running, and there is no log to read: the server belongs to someone else)."""
        if not self._rest.live():
            raise ServerError(f"the Triton server at {self.urls.http} no longer answers GET /v2/health/live")

    def _describe(self) -> str:
        return f"http_url={self.urls.http!r}, grpc_url={self.urls.grpc!r}"
