"""Every listener of a server this plugin starts is on 127.0.0.1, read from the kernel's socket table
(/proc/net/tcp) of a real tritonserver, not from what the command line meant to say."""

from __future__ import annotations

import socket
import struct
import urllib.parse
from pathlib import Path

from pytest_triton.client.urls import ServerUrls
from pytest_triton.servers.local.launcher import LocalLauncher
from pytest_triton.servers.sagemaker.local import SageMakerLocalLauncher

from .local_triton_helpers import add_model

LISTEN = "0A"


def listeners() -> dict[int, set[str]]:
    """Port -> the addresses listening on it, as the kernel reports them now (``::`` is every interface)."""
    found: dict[int, set[str]] = {}
    for table, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != LISTEN:
                continue
            address_hex, port_hex = fields[1].split(":")
            raw = bytes.fromhex(address_hex)
            # the kernel prints each 32-bit word in host byte order
            words = struct.unpack(f"<{len(raw) // 4}I", raw)
            packed = struct.pack(f">{len(words)}I", *words)
            address = socket.inet_ntop(family, packed).removeprefix("::ffff:")  # gRPC's IPv4-mapped sockets
            found.setdefault(int(port_hex, 16), set()).add(address)
    return found


def _ports(urls: ServerUrls) -> dict[str, int]:
    ports = {}
    for name in ("http", "metrics", "sagemaker"):
        url = getattr(urls, name)
        if url is not None:
            ports[name] = int(urllib.parse.urlsplit(url).port or 0)
    if urls.grpc is not None:
        ports["grpc"] = int(urls.grpc.rsplit(":", 1)[1])
    return ports


def test_the_local_launcher_listens_on_loopback_only(tmp_path: Path) -> None:
    add_model(tmp_path / "repo")
    with LocalLauncher(tmp_path / "repo", progress=None) as launcher:
        table = listeners()
        ports = _ports(launcher.urls)
        assert set(ports) == {"http", "grpc", "metrics"}
        assert {name: table.get(port) for name, port in ports.items()} == {name: {"127.0.0.1"} for name in ports}


def test_sagemaker_local_grpc_and_metrics_listen_on_loopback(tmp_path: Path) -> None:
    # SAGEMAKER_TRITON_ALLOW_GRPC/METRICS used to start both frontends on 0.0.0.0 (no address was passed)
    add_model(tmp_path / "repo")
    env = {"SAGEMAKER_TRITON_ALLOW_GRPC": "true", "SAGEMAKER_TRITON_ALLOW_METRICS": "true"}
    with SageMakerLocalLauncher(tmp_path / "repo", env=env, staging=tmp_path, progress=None) as launcher:
        table = listeners()
        ports = _ports(launcher.urls)
        assert set(ports) == {"grpc", "metrics", "sagemaker"}
        assert table.get(ports["grpc"]) == {"127.0.0.1"}
        assert table.get(ports["metrics"]) == {"127.0.0.1"}
        # Triton 2.51's SageMaker frontend binds every interface (no address flag): in a network of its own,
        # reached through the relay on 127.0.0.1 (tests/integration/local/test_sandbox.py)
        assert table.get(ports["sagemaker"]) == {"127.0.0.1"}
        assert any("bound to 127.0.0.1" in note for note in launcher.notes)


def test_an_address_the_user_gives_is_kept(tmp_path: Path) -> None:
    add_model(tmp_path / "repo")
    env = {"SAGEMAKER_TRITON_ALLOW_METRICS": "true", "SAGEMAKER_TRITON_ADDITIONAL_ARGS": "--metrics-address=0.0.0.0"}
    with SageMakerLocalLauncher(tmp_path / "repo", env=env, staging=tmp_path, progress=None) as launcher:
        # kept inside the server's own network; the host reaches it on 127.0.0.1 only
        assert "--metrics-address=0.0.0.0" in launcher.command
        assert listeners().get(_ports(launcher.urls)["metrics"]) == {"127.0.0.1"}
