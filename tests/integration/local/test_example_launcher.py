"""The launcher of docs/architecture.md, a page on the server base, runs: it serves, fails, retries and stops
like the built-in ones, through the registry and the factory too."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_triton.errors import ModelLoadError
from pytest_triton.servers import ServerFactory
from pytest_triton.servers import TritonServer
from pytest_triton.servers import base as server_base
from pytest_triton.servers import ports as ports_module
from pytest_triton.servers import register_launcher
from pytest_triton.servers.registry import unregister_launcher

from .example_launcher import PlainLauncher
from .local_triton_helpers import add_model
from .local_triton_helpers import alive
from .local_triton_helpers import skip_without_embedded_triton

DOC = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"
A = np.arange(4, dtype=np.float32)


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    skip_without_embedded_triton()
    add_model(tmp_path / "repo")
    return tmp_path / "repo"


def test_the_documented_example_is_this_file() -> None:
    code = Path(__file__).with_name("example_launcher.py").read_text(encoding="utf-8")
    body = code[code.index("class PlainLauncher") :]
    assert body in DOC.read_text(encoding="utf-8"), "docs/architecture.md no longer shows example_launcher.py"


def test_it_serves_hands_out_clients_and_stops(repository: Path) -> None:
    launcher = PlainLauncher(repository, progress=None)
    typed: TritonServer = launcher  # mypy checks the example against the protocol
    assert "not started" in repr(typed)
    with launcher as server:
        out = server.transport("http").infer("add", {"A": A, "B": A}, ["C"])
        assert out["C"].tolist() == [0.0, 2.0, 4.0, 6.0]
        assert server.clients().grpc.is_model_ready("add")
        assert server.control is not None
        assert server.control.ready("add")
        assert "running" in repr(server)
        pid = server.process.pid
        assert pid is not None
        assert alive(pid)
    assert not alive(pid)
    assert server.exit_status() is None  # the end was ours
    assert "stopped" in repr(server)
    assert "Started HTTPService" in server.logs()  # the log stays readable


def test_a_model_that_fails_is_a_load_error_and_nothing_is_left(repository: Path) -> None:
    (repository / "add" / "1" / "model.py").write_text("raise RuntimeError('broken on purpose')\n")
    launcher = PlainLauncher(repository, progress=None, startup_timeout=60)
    with pytest.raises(ModelLoadError, match="broken on purpose"):
        launcher.start()
    assert launcher.process.pid is not None
    assert not alive(launcher.process.pid)


def test_a_port_taken_is_retried_on_new_ports(repository: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    calls: list[tuple[int, ...]] = []

    def reserve(count: int, **kwargs: Any) -> ports_module.PortReservation:
        reservation = ports_module.reserve_ports(count, **kwargs)
        if not calls:  # the first attempt's HTTP port is one that another socket holds
            reservation.ports = (taken.getsockname()[1], *reservation.ports[1:])
        calls.append(reservation.ports)
        return reservation

    monkeypatch.setattr(server_base, "reserve_ports", reserve)
    try:
        with PlainLauncher(repository, progress=None) as server:
            assert len(calls) == 2
            assert server.urls.http == f"http://127.0.0.1:{calls[1][0]}"
            assert "already in use" in (server.process.workdir() / "tritonserver-0.log").read_text()
    finally:
        taken.close()


def test_registered_it_is_served_by_the_factory(repository: Path) -> None:
    register_launcher("plain", PlainLauncher)
    factory = ServerFactory("plain")
    try:
        server = factory.start(repository)
        assert isinstance(server, PlainLauncher)
        assert server.transport("grpc").infer("add", {"A": A, "B": A}, ["C"])["C"].tolist() == [0.0, 2.0, 4.0, 6.0]
    finally:
        factory.stop_all()
        unregister_launcher("plain")
