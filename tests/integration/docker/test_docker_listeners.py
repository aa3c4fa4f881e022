"""The docker launcher's listeners, read from the kernel's socket table: with host networking Triton binds
127.0.0.1 for HTTP, gRPC and metrics; on a bridge its ports are published on 127.0.0.1 only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_triton.servers.docker.container import TritonContainer
from pytest_triton.servers.docker.launcher import DockerLauncher
from pytest_triton.servers.ports import free_port
from tests.integration.local.local_triton_helpers import add_model
from tests.integration.local.test_listeners import _ports
from tests.integration.local.test_listeners import listeners

pytestmark = pytest.mark.xdist_group("docker")


def test_host_network_listeners_are_on_loopback(standin_image: str, tmp_path: Path) -> None:
    add_model(tmp_path)
    with DockerLauncher(tmp_path, image=standin_image, pull="never", startup_timeout=120, progress=None) as launcher:
        table = listeners()
        ports = _ports(launcher.urls)
        assert set(ports) == {"http", "grpc", "metrics"}
        assert {name: table.get(port) for name, port in ports.items()} == {name: {"127.0.0.1"} for name in ports}


def test_bridge_ports_are_published_on_loopback_only(standin_image: str, docker_client: Any) -> None:
    # what the daemon was asked for, read back from it (testcontainers 4.15's with_bind_ports took a port
    # alone, which binds 0.0.0.0, and failed on an address: every bridge start raised AttributeError)
    port = free_port()
    container = TritonContainer(standin_image, network="bridge", pull="never")
    try:
        container.run(["sleep", "60"], {}, mounts={}, published={8000: port})
        bindings = container.attrs()["HostConfig"]["PortBindings"]
    finally:
        container.stop(stop_timeout=1)
    assert bindings == {"8000/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}


def test_bridge_listeners_are_on_loopback(standin_image: str, tmp_path: Path, docker_client: Any) -> None:
    if not docker_client.networks.list(names=["bridge"]):
        pytest.skip("this Docker daemon has no bridge network (it runs with --bridge=none): nothing to publish")
    add_model(tmp_path)
    launcher = DockerLauncher(
        tmp_path, image=standin_image, pull="never", network="bridge", startup_timeout=120, progress=None
    )
    with launcher:
        table = listeners()
        seen = {name: table[port] for name, port in _ports(launcher.urls).items() if port in table}
        # docker-proxy listens where the daemon runs its userland proxy; with it off, iptables alone forwards
        assert all(addresses == {"127.0.0.1"} for addresses in seen.values()), seen
