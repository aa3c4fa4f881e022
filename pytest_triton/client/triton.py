"""tritonclient's HTTP and gRPC clients bound to one server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import final

from pytest_triton.errors import MissingDependency

if TYPE_CHECKING:
    from pytest_triton.servers.base import TritonLauncher


@final
@dataclass
class TritonClients:
    """A tritonclient HTTP client (``http``) and gRPC client (``grpc``) for one server."""

    http: Any
    grpc: Any
    server: TritonLauncher

    @classmethod
    def connect(cls, server: TritonLauncher) -> TritonClients:
        try:
            import tritonclient.grpc as grpcclient
            import tritonclient.http as httpclient
        except ImportError as exc:  # pragma: no cover - a core dependency
            raise MissingDependency("tritonclient[http,grpc]", "serve") from exc
        urls = server.urls
        http = httpclient.InferenceServerClient(urls.http.removeprefix("http://"))
        grpc = grpcclient.InferenceServerClient(urls.grpc)
        return cls(http=http, grpc=grpc, server=server)
