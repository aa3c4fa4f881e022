"""The relay's guard on the SageMaker port, over a real socket pair: every request of a kept-alive connection is
checked, and a refused one never reaches the server (a stand-in HTTP server on a Unix socket records what
arrives)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_triton.servers.control import ControlKey
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.relay import LoopbackRelay
from pytest_triton.servers.relay import SageMakerGuard

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
KEY = ControlKey("sesame")


class StandInServer:
    """Answers 200 to each request head it reads; ``received`` is every byte that reached it."""

    def __init__(self, path: Path) -> None:
        self.received = b""
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            while data := conn.recv(65536):
                self.received += data
                conn.sendall(OK * data.count(b"\r\n\r\n"))


@pytest.fixture
def relayed(tmp_path: Path) -> Iterator[tuple[int, StandInServer]]:
    with reserve_ports(1) as reservation:
        port = reservation.ports[0]
        server = StandInServer(tmp_path / "s.sock")
        relay = LoopbackRelay({port: (tmp_path / "s.sock", SageMakerGuard(KEY))})
        relay.open()
        try:
            yield port, server
        finally:
            relay.close()
            server.listener.close()


def _exchange(port: int, request: bytes, replies: int = 1) -> bytes:
    """Send ``request``, read until ``replies`` replies arrived or the relay closed the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        reply = b""
        while reply.count(b"HTTP/1.1 ") < replies and (chunk := sock.recv(65536)):
            reply += chunk
        return reply


def test_a_second_request_on_a_kept_alive_connection_is_checked_too(relayed: tuple[int, StandInServer]) -> None:
    port, server = relayed
    ping = b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n"
    load = b"POST /models HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
    reply = _exchange(port, ping + load, replies=2)
    assert reply.startswith(OK)
    assert b"403 Forbidden" in reply[len(OK) :]
    assert b"/models" not in server.received
    assert server.received == ping


def test_a_body_is_passed_by_its_length_and_never_read_as_a_request(relayed: tuple[int, StandInServer]) -> None:
    port, server = relayed
    hidden = b"POST /models HTTP/1.1\r\n\r\n"
    invoke = b"POST /invocations HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(hidden) + hidden
    assert _exchange(port, invoke).startswith(OK)
    assert server.received == invoke  # the body went through whole, as a body


def test_the_key_opens_the_other_paths(relayed: tuple[int, StandInServer]) -> None:
    port, server = relayed
    load = b"POST /models HTTP/1.1\r\n%s: sesame\r\nContent-Length: 0\r\n\r\n" % KEY.header.encode()
    assert _exchange(port, load).startswith(OK)
    wrong = b"POST /models HTTP/1.1\r\n%s: open\r\nContent-Length: 0\r\n\r\n" % KEY.header.encode()
    assert b"403 Forbidden" in _exchange(port, wrong)
    assert server.received == load
