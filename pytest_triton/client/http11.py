"""The one HTTP/1.1 client that talks to Triton: REST calls (health, repository, statistics) and inference.

Latency measurements count everything the client does per request, so this path is kept short: the request
line, headers and body go out in one ``sendall`` on a TCP_NODELAY socket (http.client writes headers and body
separately and parses the reply through ``email.feedparser``), and the reply is read with ``Content-Length``
or chunked framing. ``benchmarks/fidelity.py`` measures the client's own overhead (latency minus the server's
queue and compute) against perf_analyzer's; the results are in ``benchmarks/results/``.

It never goes through a proxy: the servers it talks to were started by the tests or named by the user, and a
user behind a corporate proxy has ``http_proxy`` set (urllib's ``urlopen`` would send these calls there).
One connection per thread, reopened once when the server has closed an idle one.

Every reply is bounded in time and size: ``timeout`` is a deadline for the whole reply (from sending the
request to its last byte), not a per-read limit, so a server that drips one byte at a time cannot hold a
test; and a reply body larger than ``max_reply_bytes`` (default 1 GiB) is refused before it is read.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass

from pytest_triton.errors import ConfigError
from pytest_triton.errors import InferenceError
from pytest_triton.errors import InferenceTimeout

_MAX_HEADER_BYTES = 64 * 1024
MAX_REPLY_BYTES = 1 << 30  # the largest reply body read (an inference reply of 1 GiB is already unusual)


class ProtocolError(OSError):
    """The server's reply is not well-formed HTTP/1.1 (or the connection closed mid-reply)."""


class ReplyTooLarge(ProtocolError):
    """The reply body is larger than the client's ``max_reply_bytes`` (never retried)."""


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes


class _Connection:
    """One socket and its read buffer."""

    def __init__(self, host: str, port: int, timeout: float, max_reply_bytes: int = MAX_REPLY_BYTES) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray()
        self.reusable = True
        self.max_reply_bytes = max_reply_bytes
        self.timeout = timeout
        self.deadline = float("inf")

    def close(self) -> None:
        self.sock.close()

    def _recv(self) -> bytes:
        """One read, bounded by what is left of the reply's deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"the reply was not complete within {self.timeout:g} s")
        self.sock.settimeout(left)
        return self.sock.recv(256 * 1024)

    def _check_size(self, size: int) -> None:
        if size > self.max_reply_bytes:
            self.reusable = False
            raise ReplyTooLarge(
                f"reply body of {size} bytes is larger than max_reply_bytes={self.max_reply_bytes}: "
                "raise it on the client if such replies are expected"
            )

    def _fill(self) -> None:
        chunk = self._recv()
        if not chunk:
            raise ProtocolError("the server closed the connection")
        self.buffer += chunk

    def _take(self, count: int) -> bytes:
        while len(self.buffer) < count:
            self._fill()
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def _line(self) -> bytes:
        while (end := self.buffer.find(b"\r\n")) < 0:
            if len(self.buffer) > _MAX_HEADER_BYTES:
                raise ProtocolError("reply line longer than 64 KiB")
            self._fill()
        return self._take(end + 2)[:-2]

    def exchange(self, request: bytes, timeout: float) -> Reply:
        """Send ``request`` and read the whole reply within ``timeout`` seconds (TimeoutError after)."""
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.sock.settimeout(timeout)
        self.sock.sendall(request)
        status_line = self._line()
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
            raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
        headers: dict[str, str] = {}
        size = 0
        while line := self._line():
            size += len(line)
            if size > _MAX_HEADER_BYTES:
                raise ProtocolError("reply headers longer than 64 KiB")
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        status = int(parts[1])
        close = headers.get("connection", "").lower() == "close" or parts[0] == b"HTTP/1.0"
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = self._chunked()
        elif "content-length" in headers:
            length = int(headers["content-length"])
            self._check_size(length)
            body = self._take(length)
        elif status in (204, 304) or status < 200:
            body = b""
        else:  # no framing: the body runs until the server closes the connection
            body, close = self._until_closed(), True
        self.reusable = not close
        return Reply(status, headers, body)

    def _until_closed(self) -> bytes:
        self._check_size(len(self.buffer))
        while chunk := self._recv():
            self.buffer += chunk
            self._check_size(len(self.buffer))
        return self._take(len(self.buffer))

    def _chunked(self) -> bytes:
        body = bytearray()
        while True:
            size = int(self._line().split(b";", 1)[0], 16)
            if size == 0:
                while self._line():  # trailers
                    pass
                return bytes(body)
            self._check_size(len(body) + size)
            body += self._take(size)
            self._take(2)


class KeepAliveHttp:
    """Requests to one ``http://HOST:PORT[/prefix]`` over one persistent connection per thread."""

    def __init__(self, base_url: str, timeout: float, *, max_reply_bytes: int = MAX_REPLY_BYTES) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ConfigError(f"url={base_url!r} is not an http://HOST:PORT URL")
        self.host, self.port, self.prefix = parts.hostname, parts.port or 80, parts.path.rstrip("/")
        self.timeout = timeout
        self.max_reply_bytes = max_reply_bytes
        self._host_header = f"Host: {self.host}:{self.port}\r\n"
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[_Connection] = []

    def _connection(self) -> _Connection:
        conn: _Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = _Connection(self.host, self.port, self.timeout, self.max_reply_bytes)
            self._local.conn = conn
            with self._lock:
                self._open.append(conn)
        return conn

    def _drop(self, conn: _Connection) -> None:
        conn.close()
        self._local.conn = None
        with self._lock:
            self._open = [c for c in self._open if c is not conn]

    def encode(self, path: str, body: bytes, headers: dict[str, str], *, method: str = "POST") -> bytes:
        """The whole request as bytes: it can be built once and sent many times."""
        lines = [f"{method} {self.prefix}{path} HTTP/1.1\r\n", self._host_header]
        lines += [f"{name}: {value}\r\n" for name, value in headers.items()]
        if body or method in ("POST", "PUT"):
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("\r\n")
        return "".join(lines).encode("latin-1") + body

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{self.prefix}{path}"

    def request(
        self,
        method: str,
        path: str,
        body: bytes = b"",
        headers: dict[str, str] | None = None,
        *,
        raw: bytes | None = None,
        timeout: float | None = None,
    ) -> Reply:
        """Send one request and return the reply, whatever its status.

        Raises OSError when the server cannot be reached or the reply is cut or too large (TimeoutError when
        the whole reply has not arrived ``timeout`` seconds after sending, default the client's); a request
        is never sent twice after a timeout.
        """
        request = raw if raw is not None else self.encode(path, body, headers or {}, method=method)
        for attempt in (1, 2):  # the server may have closed an idle connection: reconnect once
            try:
                conn = self._connection()
                reply = conn.exchange(request, self.timeout if timeout is None else timeout)
            except OSError as exc:  # socket errors, timeouts and ProtocolError
                if getattr(self._local, "conn", None) is not None:
                    self._drop(self._local.conn)
                if attempt == 2 or isinstance(exc, (TimeoutError, ReplyTooLarge)):
                    raise
                continue
            if not conn.reusable:
                self._drop(conn)
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    def post(self, path: str, body: bytes, headers: dict[str, str], *, raw: bytes | None = None) -> Reply:
        """POST an inference request; failures raise InferenceError (InferenceTimeout) with the server's text."""
        url = self.url(path)
        try:
            reply = self.request("POST", path, body, headers, raw=raw)
        except TimeoutError as exc:
            raise InferenceTimeout(f"POST {url} got no reply within {self.timeout:g} s", request=body) from exc
        except OSError as exc:
            raise InferenceError(f"POST {url} failed: {exc}", request=body) from exc
        if reply.status >= 400:
            detail = reply.body[:500].decode("utf-8", "replace")
            raise InferenceError(f"POST {url} failed with HTTP {reply.status}: {detail}", request=body, response=detail)
        return reply

    def close(self) -> None:
        """Close every thread's connection (a later request opens a new one)."""
        with self._lock:
            connections, self._open = self._open, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    def __del__(self) -> None:
        if hasattr(self, "_open"):  # __init__ may have raised before
            self.close()
