"""Serving: the server protocol and base, the launcher registry, one factory, model control and the launchers.

Nothing here imports pytest. Importing this package loads only the standard library and the package's own
light modules; a launcher's heavy dependencies are imported when it is chosen.
"""

from __future__ import annotations

from pytest_triton.client.urls import ServerUrls
from pytest_triton.servers.base import DEFAULT_STARTUP_TIMEOUT
from pytest_triton.servers.base import Prepared
from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.base import TritonServer
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import find_tritonserver
from pytest_triton.servers.control import ModelControl
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.local.launcher import LocalLauncher
from pytest_triton.servers.ports import PortReservation
from pytest_triton.servers.ports import free_port
from pytest_triton.servers.ports import reserve_ports
from pytest_triton.servers.registry import ENTRY_POINT_GROUP
from pytest_triton.servers.registry import launcher_class
from pytest_triton.servers.registry import launcher_names
from pytest_triton.servers.registry import register_launcher
from pytest_triton.servers.server import Runner
from pytest_triton.servers.server import ServerBase
from pytest_triton.servers.url import UrlLauncher
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import wait_until

__all__ = [
    "DEFAULT_STARTUP_TIMEOUT",
    "ENTRY_POINT_GROUP",
    "LocalLauncher",
    "ModelControl",
    "Poll",
    "PortReservation",
    "Prepared",
    "Runner",
    "ServeOptions",
    "ServerBase",
    "ServerFactory",
    "ServerUrls",
    "TritonBinary",
    "TritonServer",
    "UrlLauncher",
    "find_tritonserver",
    "free_port",
    "launcher_class",
    "launcher_names",
    "register_launcher",
    "reserve_ports",
    "wait_until",
]
