"""The hot-path HTTP/1.1 client against a scripted server: framing, keep-alive, reconnects, errors."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from collections.abc import Iterator

import pytest

from pytest_triton.client.http11 import KeepAliveHttp
from pytest_triton.errors import ConfigError
from pytest_triton.errors import InferenceError

Handler = Callable[[bytes], bytes | None]  # request bytes -> reply bytes (None: close without replying)


class ScriptedServer:
    """Answers each request on 127.0.0.1 with the next reply of ``handler``; records connections and requests."""

    def __init__(self, handler: Handler, *, close_after_each: bool = False) -> None:
        self.handler = handler
        self.close_after_each = close_after_each
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.requests: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _read_request(self, conn: socket.socket, buffer: bytearray) -> bytes | None:
        while b"\r\n\r\n" not in buffer:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            buffer += chunk
        head_end = buffer.index(b"\r\n\r\n") + 4
        head = bytes(buffer[:head_end]).decode("latin-1")
        length = next(
            int(line.split(":")[1]) for line in head.split("\r\n") if line.lower().startswith("content-length")
        )
        while len(buffer) < head_end + length:
            buffer += conn.recv(65536)
        request = bytes(buffer[: head_end + length])
        del buffer[: head_end + length]
        return request

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            buffer = bytearray()
            # a client that gave up on a reply (too large) resets the connection: that is its right
            with conn, contextlib.suppress(ConnectionError):
                while (request := self._read_request(conn, buffer)) is not None:
                    self.requests.append(request)
                    reply = self.handler(request)
                    if reply is None:
                        break
                    conn.sendall(reply)
                    if self.close_after_each:
                        break

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., ScriptedServer]]:
    servers: list[ScriptedServer] = []

    def start(handler: Handler, **kwargs: bool) -> ScriptedServer:
        servers.append(ScriptedServer(handler, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def ok(body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\nX-Thing: a:b\r\n{extra}\r\n".encode() + body


def test_one_write_keep_alive_and_headers(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: ok(b"payload" * 1000))
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}/prefix", timeout=5)
    for _ in range(3):
        reply = client.post("/v2/models/m/infer", b"\x00\x01body", {"Content-Type": "application/octet-stream"})
        assert reply.status == 200
        assert reply.body == b"payload" * 1000
        assert reply.headers["x-thing"] == "a:b"  # names lower-cased, values split at the first colon only
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"POST /prefix/v2/models/m/infer HTTP/1.1"
    assert b"Content-Length: 6" in head
    assert body == b"\x00\x01body"
    client.close()


def test_prepared_bytes_are_sent_as_they_are(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: ok(b"{}"))
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5)
    raw = client.encode("/x", b"abc", {"A": "1"})
    assert client.post("/x", b"abc", {"A": "1"}, raw=raw).body == b"{}"
    assert server.requests == [raw]


def test_chunked_reply_with_trailers(serve: Callable[..., ScriptedServer]) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nT: 1\r\n\r\n"
    )
    server = serve(lambda request: chunked)
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5)
    assert client.post("/x", b"", {}).body == b"hello world"
    assert client.post("/x", b"", {}).body == b"hello world"
    assert server.connections == 1


def test_reply_without_framing_runs_until_the_server_closes(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(
        lambda request: b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end", close_after_each=True
    )
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5)
    assert [client.post("/x", b"", {}).body for _ in range(2)] == [b"to the end"] * 2
    assert server.connections == 2  # never reused after such a reply


def test_connection_close_reply_opens_a_new_connection(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: ok(b"x", "Connection: close\r\n"), close_after_each=True)
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5)
    for _ in range(3):
        assert client.post("/x", b"", {}).body == b"x"
    assert server.connections == 3


def test_idle_connection_closed_by_the_server_is_reopened_once(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: ok(b"x"), close_after_each=True)  # closes without saying so
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5)
    assert [client.post("/x", b"", {}).body for _ in range(3)] == [b"x"] * 3
    assert server.connections == 3


def test_http_error_carries_the_servers_text(serve: Callable[..., ScriptedServer]) -> None:
    body = b'{"error":"unexpected shape for input \'X\'"}'
    server = serve(lambda request: f"HTTP/1.1 400 Bad Request\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5)
    with pytest.raises(InferenceError, match=r"failed with HTTP 400: .*unexpected shape for input 'X'"):
        client.post("/v2/models/m/infer", b"", {})


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (b"SPDY/3 200 OK\r\n\r\n", "not an HTTP/1.x status line"),
        (None, "the server closed the connection"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "the server closed the connection"),
    ],
)
def test_broken_replies_fail_after_one_retry(
    serve: Callable[..., ScriptedServer], reply: bytes | None, words: str
) -> None:
    server = serve(lambda request: reply, close_after_each=True)
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5)
    with pytest.raises(InferenceError, match=words):
        client.post("/x", b"", {})
    assert server.connections == 2


def test_nothing_listening_fails_with_the_url() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    client = KeepAliveHttp(f"http://127.0.0.1:{port}", timeout=2)
    with pytest.raises(InferenceError, match=rf"POST http://127.0.0.1:{port}/x failed"):
        client.post("/x", b"", {})


def test_rejects_non_http_urls() -> None:
    with pytest.raises(ConfigError, match="is not an http://HOST:PORT URL"):
        KeepAliveHttp("https://example.invalid", timeout=1)


class DrippingServer:
    """A real listener on 127.0.0.1 that answers with a valid status line, then one body byte every ``gap``
    seconds, forever (until closed): a per-read timeout never fires on it."""

    def __init__(self, head: bytes, gap: float) -> None:
        self.head, self.gap = head, gap
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sent = 0
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self.listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(self.head)
                while not self.stop.wait(self.gap):
                    conn.sendall(b"x")
                    self.sent += 1

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


@pytest.mark.parametrize(
    "head",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n",  # a body that never completes
        b"HTTP/1.1 200 OK\r\n\r\n",  # no framing: a body until the server closes, which it never does
        b"HTTP/1.1 200 OK\r\nX-Drip: ",  # a header line that never ends
    ],
    ids=["content-length", "until-closed", "header"],
)
def test_a_dripping_server_is_bounded_by_the_whole_reply_deadline(head: bytes) -> None:
    # one byte every 50 ms: each read returns long before the 0.5 s timeout, so only a deadline on the
    # whole reply ends the request; the byte count shows the client stopped at about timeout / gap reads
    server = DrippingServer(head, gap=0.05)
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=0.5)
    try:
        with pytest.raises(InferenceError, match=r"got no reply within 0.5 s"):
            client.post("/x", b"", {})
        sent_at_timeout = server.sent
    finally:
        server.close()
        client.close()
    assert 1 <= sent_at_timeout < 100  # a per-read timeout would have read on (and never raised)


def test_a_reply_larger_than_the_limit_is_refused_before_it_is_read(serve: Callable[..., ScriptedServer]) -> None:
    server = serve(lambda request: b"HTTP/1.1 200 OK\r\nContent-Length: 1000001\r\n\r\n" + b"x" * 1000001)
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5, max_reply_bytes=1_000_000)
    with pytest.raises(InferenceError, match=r"reply body of 1000001 bytes is larger than max_reply_bytes=1000000"):
        client.post("/x", b"", {})
    assert server.connections == 1  # never sent twice


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 3000,
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"400\r\n" + b"x" * 1024 + b"\r\n0\r\n\r\n",
    ],
    ids=["until-closed", "chunked"],
)
def test_unframed_and_chunked_bodies_are_bounded_too(serve: Callable[..., ScriptedServer], reply: bytes) -> None:
    server = serve(lambda request: reply, close_after_each=True)
    client = KeepAliveHttp(f"http://127.0.0.1:{server.port}", timeout=5, max_reply_bytes=1000)
    with pytest.raises(InferenceError, match="larger than max_reply_bytes=1000"):
        client.post("/x", b"", {})
