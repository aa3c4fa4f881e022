"""Triton's HTTP REST API (KServe v2 plus Triton's extensions), over the one HTTP client of the package.

Health, metadata, per-model readiness and configuration, the repository index (state and reason of every
model), model control, statistics and the metrics page. Every model name is quoted in its URL, and no call
goes through a proxy (see :mod:`pytest_triton.client.http11`).
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from typing import final

from pytest_triton.client.http11 import KeepAliveHttp
from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError


@dataclass(frozen=True)
class IndexEntry:
    """One row of ``POST /v2/repository/index``: a model (version) and its state.

    ``state`` is "" for a model Triton has never tried to load, or failed to read (a config.pbtxt that
    does not parse shows up like this: the reason is only in the log).
    """

    name: str
    version: str = ""
    state: str = ""
    reason: str = ""


def model_path(name: str, version: str = "") -> str:
    """``/v2/models/NAME[/versions/V]`` with both parts quoted."""
    path = f"/v2/models/{urllib.parse.quote(name, safe='')}"
    if version:
        path += f"/versions/{urllib.parse.quote(version, safe='')}"
    return path


@final
class TritonRest:
    """A client of one Triton HTTP endpoint (``http://host:port``); ``headers`` go with every request (a
    server that restricts model control asks for its key there)."""

    def __init__(self, base_url: str, *, timeout: float = 5.0, headers: Mapping[str, str] | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.headers = dict(headers or {})
        self._http = KeepAliveHttp(self.base_url, timeout)

    def close(self) -> None:
        """Close the kept-alive connections."""
        self._http.close()

    def request(self, method: str, path: str, body: Any = None, *, timeout: float | None = None) -> tuple[int, bytes]:
        """Send one request; returns (status, body). HTTP errors are returned, connection errors raise OSError."""
        data = b"" if body is None else json.dumps(body).encode()
        headers = {**self.headers, "Content-Type": "application/json"} if data else dict(self.headers)
        reply = self._http.request(method, path, data, headers, timeout=timeout)
        return reply.status, reply.body

    def get_json(self, path: str, what: str, *, timeout: float | None = None) -> Any:
        """GET ``path`` and parse its JSON; raises ServerError saying ``what`` failed, with Triton's text."""
        try:
            status, body = self.request("GET", path, timeout=timeout)
        except OSError as err:
            raise ServerError(
                f"{what} failed: GET {self.base_url}{path} failed: {err}; is the server running and the URL right?"
            ) from err
        if status != 200:
            raise ServerError(f"{what} failed: GET {self.base_url}{path}: HTTP {status} {error_text(body)}")
        return json.loads(body)

    def _ok(self, path: str) -> bool:
        try:
            status, _ = self.request("GET", path)
        except OSError:
            return False
        return status == 200

    def live(self) -> bool:
        """``GET /v2/health/live`` answers 200 (False when nothing answers)."""
        return self._ok("/v2/health/live")

    def ready(self) -> bool:
        """``GET /v2/health/ready`` answers 200."""
        return self._ok("/v2/health/ready")

    def model_ready(self, name: str, version: str = "") -> bool:
        """``GET /v2/models/NAME[/versions/V]/ready`` answers 200."""
        return self._ok(model_path(name, version) + "/ready")

    def metadata(self, name: str) -> dict[str, Any]:
        """A model's KServe metadata (``GET /v2/models/NAME``): inputs and outputs with shapes and datatypes."""
        result: dict[str, Any] = self.get_json(model_path(name), f"reading the metadata of model {name!r}")
        return result

    def config(self, name: str) -> dict[str, Any]:
        """The model configuration Triton uses (``GET /v2/models/NAME/config``), as JSON."""
        result: dict[str, Any] = self.get_json(model_path(name) + "/config", f"reading the config of model {name!r}")
        return result

    def statistics(self, name: str = "", version: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        """Triton's inference statistics of one model (version), or of every model when ``name`` is ""."""
        path = (model_path(name, version) if name else "/v2/models") + "/stats"
        result: dict[str, Any] = self.get_json(path, "reading inference statistics", timeout=timeout)
        return result

    def index(self) -> list[IndexEntry]:
        """The repository index: every model of the repository with its state and reason."""
        try:
            status, body = self.request("POST", "/v2/repository/index", {})
        except OSError as err:
            raise ServerError(f"POST {self.base_url}/v2/repository/index failed: {err}") from err
        if status != 200:
            raise ServerError(f"POST {self.base_url}/v2/repository/index answered {status}: {error_text(body)}")
        rows = json.loads(body or b"[]")
        return [
            IndexEntry(
                name=str(row.get("name", "")),
                version=str(row.get("version", "")),
                state=str(row.get("state", "")),
                reason=str(row.get("reason", "")),
            )
            for row in rows
        ]

    def load(self, name: str, *, timeout: float = 300.0) -> None:
        """Load (or reload) a model; Triton answers once loading finished, with its error text if it failed."""
        path = f"/v2/repository/models/{urllib.parse.quote(name, safe='')}/load"
        status, body = self.request("POST", path, timeout=timeout)
        if status != 200:
            raise ModelLoadError(name, error_text(body))

    def unload(self, name: str) -> None:
        """Ask Triton to unload a model (it answers before the unload has finished)."""
        status, body = self.request("POST", f"/v2/repository/models/{urllib.parse.quote(name, safe='')}/unload")
        if status != 200:
            raise ServerError(f"unloading model {name!r} failed ({status}): {error_text(body)}")


def error_text(body: bytes) -> str:
    """Triton's ``{"error": "..."}`` text, or the raw body."""
    text = body.decode("utf-8", errors="replace")
    try:
        parsed = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(parsed, dict) and "error" in parsed:
        return str(parsed["error"])
    return text.strip()


def fetch_text(url: str, *, timeout: float = 5.0) -> str:
    """GET a full URL (e.g. the metrics endpoint) and return its body as text; raises ServerError if not 200."""
    parts = urllib.parse.urlsplit(url)
    client = KeepAliveHttp(f"{parts.scheme}://{parts.netloc}", timeout)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    try:
        reply = client.request("GET", path)
    except OSError as err:
        raise ServerError(f"GET {url} failed: {err}") from err
    finally:
        client.close()
    if reply.status != 200:
        raise ServerError(f"GET {url} answered {reply.status}: {error_text(reply.body)}")
    return reply.body.decode("utf-8", errors="replace")
