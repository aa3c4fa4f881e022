"""Triton launchers: one protocol (:class:`TritonLauncher`), a local process and a running server's URL.

Importing this package loads only the standard library; launchers talk to Triton with urllib.
"""

from __future__ import annotations

from pytest_triton.servers.base import ServerUrls
from pytest_triton.servers.base import TritonLauncher
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import find_tritonserver
from pytest_triton.servers.binary import gpu_visible
from pytest_triton.servers.local import LocalLauncher
from pytest_triton.servers.ports import PortReservation
from pytest_triton.servers.ports import free_port
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.serve_cli import serve_main
from pytest_triton.servers.url import UrlLauncher
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import wait_until

__all__ = [
    "LocalLauncher",
    "Poll",
    "PortReservation",
    "ServerUrls",
    "TritonBinary",
    "TritonLauncher",
    "UrlLauncher",
    "find_tritonserver",
    "free_port",
    "gpu_visible",
    "reserve_ports",
    "serve_main",
    "wait_until",
]
