"""Where a Triton server answers: its address and endpoint URLs, shared by the clients and the launchers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_triton.errors import ServerError

LOCALHOST = "127.0.0.1"

InferenceEndpoint = Literal["http", "grpc", "sagemaker"]


@dataclass(frozen=True)
class ServerUrls:
    """The endpoints of one Triton server; an endpoint the server does not offer is None.

    ``http`` and ``metrics`` are full URLs (``http://127.0.0.1:8000``, ``http://127.0.0.1:8002/metrics``);
    ``grpc`` is ``host:port`` as tritonclient's gRPC client wants it; ``sagemaker`` is the base URL of
    SageMaker's ``/ping`` and ``/invocations``. A SageMaker endpoint has only ``sagemaker``.
    """

    http: str | None = None
    grpc: str | None = None
    metrics: str | None = None
    sagemaker: str | None = None

    @classmethod
    def local(
        cls,
        http_port: int | None,
        grpc_port: int | None,
        metrics_port: int | None,
        sagemaker_port: int | None = None,
        *,
        host: str = LOCALHOST,
    ) -> ServerUrls:
        """The URLs of a server listening on ``host`` with the given ports (None: not served)."""
        return cls(
            http=None if http_port is None else f"http://{host}:{http_port}",
            grpc=None if grpc_port is None else f"{host}:{grpc_port}",
            metrics=None if metrics_port is None else f"http://{host}:{metrics_port}/metrics",
            sagemaker=None if sagemaker_port is None else f"http://{host}:{sagemaker_port}",
        )

    def as_dict(self) -> dict[str, str]:
        """The served endpoints as a JSON-ready dict."""
        named = {"http": self.http, "grpc": self.grpc, "metrics": self.metrics, "sagemaker": self.sagemaker}
        return {name: url for name, url in named.items() if url is not None}

    def need(self, endpoint: InferenceEndpoint | Literal["metrics"]) -> str:
        """The URL of ``endpoint``; raises ServerError naming what the server offers when it has none."""
        url: str | None = getattr(self, endpoint)
        if url is None:
            offered = ", ".join(self.as_dict()) or "nothing"
            raise ServerError(f"this server has no {endpoint} endpoint (it offers {offered})")
        return url
