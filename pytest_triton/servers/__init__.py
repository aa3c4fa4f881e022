"""Serving: the server protocol and base, the launcher registry, one factory, model control and the launchers.

Nothing here imports pytest. Importing this package loads nothing but itself: each name below is imported when
it is first used (the pytest plugin reads the registry at every session start, and a foreign suite that never
serves should not pay for the launchers); a launcher's heavy dependencies are imported when it is chosen.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from pytest_triton.client.urls import ServerUrls as ServerUrls
    from pytest_triton.servers.base import Runner as Runner
    from pytest_triton.servers.base import ServerBase as ServerBase
    from pytest_triton.servers.binary import TritonBinary as TritonBinary
    from pytest_triton.servers.binary import find_tritonserver as find_tritonserver
    from pytest_triton.servers.control import ModelControl as ModelControl
    from pytest_triton.servers.factory import ServerFactory as ServerFactory
    from pytest_triton.servers.local.launcher import LocalLauncher as LocalLauncher
    from pytest_triton.servers.ports import PortReservation as PortReservation
    from pytest_triton.servers.ports import free_port as free_port
    from pytest_triton.servers.ports import reserve_ports as reserve_ports
    from pytest_triton.servers.protocol import DEFAULT_STARTUP_TIMEOUT as DEFAULT_STARTUP_TIMEOUT
    from pytest_triton.servers.protocol import Prepared as Prepared
    from pytest_triton.servers.protocol import ServeOptions as ServeOptions
    from pytest_triton.servers.protocol import TritonServer as TritonServer
    from pytest_triton.servers.registry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
    from pytest_triton.servers.registry import launcher_class as launcher_class
    from pytest_triton.servers.registry import launcher_names as launcher_names
    from pytest_triton.servers.registry import register_launcher as register_launcher
    from pytest_triton.servers.url import UrlLauncher as UrlLauncher
    from pytest_triton.servers.wait import Poll as Poll
    from pytest_triton.servers.wait import wait_until as wait_until

_WHERE = {
    "DEFAULT_STARTUP_TIMEOUT": "pytest_triton.servers.protocol",
    "ENTRY_POINT_GROUP": "pytest_triton.servers.registry",
    "LocalLauncher": "pytest_triton.servers.local.launcher",
    "ModelControl": "pytest_triton.servers.control",
    "Poll": "pytest_triton.servers.wait",
    "PortReservation": "pytest_triton.servers.ports",
    "Prepared": "pytest_triton.servers.protocol",
    "Runner": "pytest_triton.servers.base",
    "ServeOptions": "pytest_triton.servers.protocol",
    "ServerBase": "pytest_triton.servers.base",
    "ServerFactory": "pytest_triton.servers.factory",
    "ServerUrls": "pytest_triton.client.urls",
    "TritonBinary": "pytest_triton.servers.binary",
    "TritonServer": "pytest_triton.servers.protocol",
    "UrlLauncher": "pytest_triton.servers.url",
    "find_tritonserver": "pytest_triton.servers.binary",
    "free_port": "pytest_triton.servers.ports",
    "launcher_class": "pytest_triton.servers.registry",
    "launcher_names": "pytest_triton.servers.registry",
    "register_launcher": "pytest_triton.servers.registry",
    "reserve_ports": "pytest_triton.servers.ports",
    "wait_until": "pytest_triton.servers.wait",
}

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


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_triton.servers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
