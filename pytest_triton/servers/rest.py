"""The few KServe v2 / Triton HTTP calls a launcher needs, with the standard library only.

Health, per-model readiness, the repository index (state and reason of every model) and model control.
Proxies from the environment are ignored: these calls go to a server the tests started or were given.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any
from typing import final

from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


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


def _quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


@final
class TritonRest:
    """A minimal client of a Triton HTTP endpoint (``http://host:port``)."""

    def __init__(self, base_url: str, *, timeout: float = 5.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = None, *, timeout: float | None = None) -> tuple[int, bytes]:
        """Send one request; returns (status, body). HTTP errors are returned, connection errors raise OSError."""
        data = None if body is None else json.dumps(body).encode()
        if data is None and method == "POST":
            data = b""
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data:
            req.add_header("Content-Type", "application/json")
        try:
            with _OPENER.open(req, timeout=self.timeout if timeout is None else timeout) as resp:
                return int(resp.status), resp.read()
        except urllib.error.HTTPError as err:
            with err:
                return int(err.code), err.read()

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
        path = f"/v2/models/{_quote(name)}"
        if version:
            path += f"/versions/{_quote(version)}"
        return self._ok(path + "/ready")

    def index(self) -> list[IndexEntry]:
        """The repository index: every model of the repository with its state and reason."""
        status, body = self.request("POST", "/v2/repository/index", {})
        if status != 200:
            raise ServerError(f"POST {self.base_url}/v2/repository/index answered {status}: {_error_text(body)}")
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
        status, body = self.request("POST", f"/v2/repository/models/{_quote(name)}/load", timeout=timeout)
        if status != 200:
            raise ModelLoadError(name, _error_text(body))

    def unload(self, name: str) -> None:
        """Ask Triton to unload a model (it answers before the unload has finished)."""
        status, body = self.request("POST", f"/v2/repository/models/{_quote(name)}/unload")
        if status != 200:
            raise ServerError(f"unloading model {name!r} failed ({status}): {_error_text(body)}")

    def config(self, name: str) -> dict[str, Any]:
        """The model configuration Triton uses (``GET /v2/models/NAME/config``), as JSON."""
        status, body = self.request("GET", f"/v2/models/{_quote(name)}/config")
        if status != 200:
            raise ServerError(f"reading the config of model {name!r} failed ({status}): {_error_text(body)}")
        result: dict[str, Any] = json.loads(body)
        return result


def _error_text(body: bytes) -> str:
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
    """GET a URL (e.g. the metrics endpoint) and return its body as text; raises ServerError if not 200."""
    try:
        with _OPENER.open(url, timeout=timeout) as resp:
            return bytes(resp.read()).decode("utf-8", errors="replace")
    except urllib.error.HTTPError as err:
        with err:
            raise ServerError(f"GET {url} answered {err.code}: {_error_text(err.read())}") from None
    except OSError as err:
        raise ServerError(f"GET {url} failed: {err}") from err
