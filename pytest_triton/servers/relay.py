"""The host's side of a server in its own network namespace: listeners on 127.0.0.1 that relay to it.

Triton 2.51's SageMaker frontend has no address flag and binds 0.0.0.0, and its ``POST /models`` loads a
model from any folder the caller names (the model's ``initialize`` then runs as the server's user). A server
that opens it runs in a network namespace of its own (:mod:`pytest_triton.servers.sandbox`): nothing there is
reachable from outside. Its ports are reached through this relay: a listener per port on the host's
127.0.0.1, each connection passed to a Unix socket in the launcher's owner-only work folder, where a process
inside the namespace connects it to the server's own loopback port.

The SageMaker port's requests are read on the way (:class:`SageMakerGuard`): ``/ping`` and ``/invocations``
pass; any other path (``/models`` and below: list, load, unload, invoke by name) passes only with the server's
control key header (:class:`~pytest_triton.servers.control.ControlKey`), and is answered 403 without it. Every
request of a kept-alive connection is checked: the relay reads each request head, then passes exactly
``Content-Length`` body bytes before it reads the next head. A chunked body, several lengths or a head over
64 KiB are refused (400/411/431), so no second request can hide in a body. The other frontends (HTTP, gRPC,
metrics) are relayed byte for byte: model control on them is behind Triton's own restricted-API key.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import final

from pytest_triton.client.urls import LOCALHOST
from pytest_triton.servers.control import ControlKey
from pytest_triton.servers.sandbox_inner import unix_address

MAX_HEAD_BYTES = 64 * 1024
DRAIN_S = 10.0  # how long the replies to earlier requests may take once a connection's input ends
OPEN_PATHS = ("/ping", "/invocations")  # what SageMaker itself calls, and all the plugin calls


class Refused(Exception):
    """A request the relay answers itself: ``status`` and the reason, then it closes the connection."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True)
class SageMakerGuard:
    """Passes ``/ping`` and ``/invocations``; anything else only with ``key``'s header (never without a key)."""

    key: ControlKey | None = None

    def check(self, target: str, headers: Mapping[str, str]) -> None:
        """Raise :class:`Refused` for a request of ``target`` with ``headers`` (names in lower case)."""
        path = urllib.parse.urlsplit(target).path
        if path in OPEN_PATHS:
            return
        if self.key is not None and headers.get(self.key.header) == self.key.value:
            return
        how = (
            f"send the server's control header {self.key.header!r} (control_headers)"
            if self.key is not None
            else "this server has no model control"
        )
        raise Refused(
            "403 Forbidden",
            f"pytest-triton: path={path!r} is refused: this SageMaker frontend answers {' and '.join(OPEN_PATHS)} "
            f"to anyone on 127.0.0.1; for anything else {how}",
        )


def _head(data: bytes) -> tuple[str, dict[str, str], int]:
    """The target, the headers (lower-case names) and the body length of one request head."""
    lines = data.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise Refused("400 Bad Request", f"pytest-triton: request line {lines[0][:200]!r} is not HTTP/1.x")
    headers: dict[str, str] = {}
    lengths: set[str] = set()
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep or name != name.strip():
            raise Refused("400 Bad Request", f"pytest-triton: header line {line[:200]!r} is malformed")
        key = name.lower()
        if key == "transfer-encoding":
            raise Refused("411 Length Required", "pytest-triton: send the body with a Content-Length, not chunked")
        if key == "content-length":
            lengths.add(value.strip())
        headers[key] = value.strip()
    if len(lengths) > 1 or not all(v.isdigit() for v in lengths):
        raise Refused("400 Bad Request", f"pytest-triton: Content-Length {sorted(lengths)!r} is not one number")
    return parts[1], headers, int(next(iter(lengths), "0"))


def _refuse(client: socket.socket, refused: Refused) -> None:
    body = f"{refused}\n".encode()
    head = f"HTTP/1.1 {refused.status}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
    with contextlib.suppress(OSError):
        client.sendall(f"{head}Connection: close\r\n\r\n".encode() + body)


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()


def _pump(source: socket.socket, target: socket.socket, *, close: bool = True) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    if close:
        _close(source, target)


def _responses(upstream: socket.socket, client: socket.socket, refusing: threading.Event) -> None:
    """Replies from ``upstream`` to ``client``; once the server ends the connection, so does the client's side,
    unless a refusal is still to be sent."""
    _pump(upstream, client, close=False)
    if not refusing.is_set():
        with contextlib.suppress(OSError):
            client.shutdown(socket.SHUT_RDWR)


def _guarded_pump(
    client: socket.socket,
    upstream: socket.socket,
    guard: SageMakerGuard,
    responses: threading.Thread,
    refusing: threading.Event,
) -> None:
    """Requests from ``client`` to ``upstream``, each head checked by ``guard`` before any of it passes. Where
    one is refused, or the client stops sending, the server gets the end of its input and the replies to the
    requests before (``responses`` relays them) reach the client first, then the refusal."""
    buffer = b""
    refused: Refused | None = None
    try:
        while True:
            while b"\r\n\r\n" not in buffer:
                if len(buffer) > MAX_HEAD_BYTES:
                    raise Refused("431 Request Header Fields Too Large", "pytest-triton: request head over 64 KiB")
                data = client.recv(65536)
                if not data:
                    return
                buffer += data
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            target, headers, length = _head(head)
            guard.check(target, headers)
            upstream.sendall(head + b"\r\n\r\n")
            while length:
                if not buffer:
                    buffer = client.recv(min(length, 1 << 20))
                    if not buffer:
                        return
                chunk, buffer = buffer[:length], buffer[length:]
                upstream.sendall(chunk)
                length -= len(chunk)
    except Refused as found:
        refused = found
        refusing.set()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            upstream.shutdown(socket.SHUT_WR)
        responses.join(DRAIN_S)
        if refused is not None:
            _refuse(client, refused)
        _close(client, upstream)


@final
class LoopbackRelay:
    """Listeners on 127.0.0.1, one per port of ``routes`` (port -> the Unix socket inside, and a guard for the
    SageMaker port or None); :meth:`close` stops them and every connection they relay."""

    def __init__(self, routes: Mapping[int, tuple[Path, SageMakerGuard | None]]) -> None:
        self.routes = dict(routes)
        self._listeners: list[socket.socket] = []
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False

    def open(self) -> None:
        """Bind every port (OSError EADDRINUSE where one is taken) and start accepting."""
        for port, (path, guard) in self.routes.items():
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                listener.bind((LOCALHOST, port))
                listener.listen(128)
            except OSError:
                listener.close()
                self.close()
                raise
            self._listeners.append(listener)
            name = f"pytest-triton-relay-{port}"
            threading.Thread(target=self._accept, args=(listener, path, guard), name=name, daemon=True).start()

    def _accept(self, listener: socket.socket, path: Path, guard: SageMakerGuard | None) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._connect, args=(client, path, guard), daemon=True).start()

    def _connect(self, client: socket.socket, path: Path, guard: SageMakerGuard | None) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address, folder = unix_address(str(path))
        try:
            upstream.connect(address)
        except OSError:  # the server is not up (yet, or any more): the client sees a closed connection
            _close(client, upstream)
            return
        finally:
            if folder is not None:
                os.close(folder)
        with self._lock:
            if self._closed:
                _close(client, upstream)
                return
            self._open.update((client, upstream))
        if guard is None:
            threading.Thread(target=_pump, args=(client, upstream), daemon=True).start()
            _pump(upstream, client)
        else:
            refusing = threading.Event()
            responses = threading.Thread(target=_responses, args=(upstream, client, refusing), daemon=True)
            responses.start()
            _guarded_pump(client, upstream, guard, responses, refusing)
        with self._lock:
            self._open.difference_update((client, upstream))

    def close(self) -> None:
        """Stop listening and cut every relayed connection; calling it again does nothing."""
        with self._lock:
            self._closed = True
            listeners, self._listeners = self._listeners, []
            connections, self._open = list(self._open), set()
        for sock in [*listeners, *connections]:
            _close(sock)
