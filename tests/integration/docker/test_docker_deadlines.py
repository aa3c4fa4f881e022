"""Every wait on the Docker daemon has a deadline: an image pull from a registry that never answers, and a
probe container whose python3 never ends. Real parts: the real dockerd, a silent registry on 127.0.0.1 (the
daemon treats 127.0.0.0/8 as an insecure registry and dials it), an image built from the stand-in."""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_triton.errors import ServerStartError
from pytest_triton.servers.docker.engine import ensure_image
from pytest_triton.servers.docker.image import probe_image

pytestmark = pytest.mark.xdist_group("docker")


@contextlib.contextmanager
def silent_registry() -> Iterator[tuple[int, list[float]]]:
    """A listener on 127.0.0.1 that accepts connections and never says a word: (its port, accept times)."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[float] = []
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                conn, _ = listener.accept()
                held.append(conn)
                accepted.append(time.monotonic())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1]), accepted
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


def test_a_pull_from_a_registry_that_never_answers_ends_at_its_deadline(docker_client: Any) -> None:
    # the daemon's own limit for this case is about 25 s ("context deadline exceeded"); without a deadline of
    # ours the stream would wait as long as the daemon does, and forever on a daemon that stalls
    with silent_registry() as (port, accepted):
        image = f"127.0.0.1:{port}/pytest-triton-nothing:{uuid.uuid4().hex[:8]}"
        started = time.monotonic()
        with pytest.raises(ServerStartError, match=rf"pulling {image} did not finish within 2 s") as caught:
            ensure_image(docker_client, image, pull="always", timeout=2.0)
        waited = time.monotonic() - started
    assert accepted, "the daemon never dialled the registry: the pull did not really start"
    assert "context deadline exceeded" not in str(caught.value)  # our deadline, not the daemon's
    print(f"the pull ended {waited:.1f} s after it began (deadline 2 s)")


HANGING_PYTHON = """
FROM {base}
RUN printf '#!/bin/sh\\nexec sleep 600\\n' > /usr/local/bin/python3 && chmod +x /usr/local/bin/python3
"""


@pytest.fixture
def hanging_probe_image(docker_client: Any, standin_image: str) -> Iterator[str]:
    """The stand-in image with a python3 that never ends (built here, removed afterwards)."""
    tag = f"pytest-triton-hanging-probe:{uuid.uuid4().hex[:8]}"
    dockerfile = io.BytesIO(HANGING_PYTHON.format(base=standin_image).encode())
    docker_client.images.build(fileobj=dockerfile, tag=tag, rm=True, forcerm=True, network_mode="none")
    try:
        yield tag
    finally:
        with contextlib.suppress(Exception):
            docker_client.images.remove(tag, force=True)


def test_a_probe_that_never_ends_is_bounded_and_removed(docker_client: Any, hanging_probe_image: str) -> None:
    # this probe's containers only: another xdist worker's probe of another image may run at the same moment
    filters = {"label": "org.pytest-triton.probe=1", "ancestor": hanging_probe_image}
    with pytest.raises(ServerStartError, match=r"did not end within 3 s: its python3 gave no answer"):
        probe_image(docker_client, hanging_probe_image, timeout=3.0)
    assert docker_client.api.containers(all=True, filters=filters) == [], "the probe container was left behind"
