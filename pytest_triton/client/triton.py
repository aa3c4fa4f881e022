"""tritonclient's HTTP and gRPC clients bound to one server, made when first used."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol
from typing import final

from pytest_triton.errors import MissingDependency

if TYPE_CHECKING:
    from pytest_triton.client.transports import Transport
    from pytest_triton.client.urls import InferenceEndpoint
    from pytest_triton.client.urls import ServerUrls


class TritonServerLike(Protocol):
    """What the clients need of a running server (every launcher offers it): its URLs, a liveness check, transports."""

    @property
    def urls(self) -> ServerUrls: ...

    def check_alive(self) -> None: ...

    def transport(self, protocol: InferenceEndpoint = "http") -> Transport: ...


@final
class TritonClients:
    """A tritonclient HTTP client (``http``) and gRPC client (``grpc``) for one server.

    The server is found when a client is first used (``find_server``), so the ``triton_client`` fixture
    works with a server the test starts itself through ``triton_server_factory``. A server the plugin started
    answers model control (``load_model``, ``unload_model``, ``get_model_repository_index``) only with
    ``headers=server.control_headers``.
    """

    def __init__(self, find_server: Callable[[], TritonServerLike]) -> None:
        self._find_server = find_server
        self._server: TritonServerLike | None = None
        self._http: Any = None
        self._grpc: Any = None

    @classmethod
    def connect(cls, server: TritonServerLike) -> TritonClients:
        """Clients for ``server``."""
        return cls(lambda: server)

    @property
    def server(self) -> TritonServerLike:
        """The server these clients talk to (a crashed one raises, saying how it ended)."""
        if self._server is None:
            self._server = self._find_server()
        self._server.check_alive()
        return self._server

    @property
    def http(self) -> Any:
        """``tritonclient.http.InferenceServerClient`` for the server's HTTP endpoint."""
        if self._http is None:
            httpclient = _import("tritonclient.http")
            self._http = httpclient.InferenceServerClient(self.server.urls.need("http").removeprefix("http://"))
        return self._http

    @property
    def grpc(self) -> Any:
        """``tritonclient.grpc.InferenceServerClient`` for the server's gRPC endpoint."""
        if self._grpc is None:
            from pytest_triton.client.transports import grpc_client

            self._grpc = grpc_client(self.server.urls.need("grpc"))
        return self._grpc

    def transport(self, protocol: InferenceEndpoint = "http") -> Transport:
        """The package's own inference transport to the same server (numpy in, numpy out)."""
        return self.server.transport(protocol)


def _import(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise MissingDependency("tritonclient[http,grpc]", "serve") from exc
