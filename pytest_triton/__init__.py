"""pytest-triton: lint, serve and contract-test NVIDIA Triton model repositories.

The types of the fixtures, for annotations (``def test_add(triton_server: pytest_triton.TritonServer)``)::

    triton_repository      RepositoryBuilder
    triton_server          TritonServer         (what triton_server_factory.start() returns too)
    triton_server_factory  TritonServerFactory
    triton_client          TritonClients
    triton_bench           TritonBench

Importing the package imports none of them (nor pytest): each is imported when it is first named.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from pytest_triton.bench.session import TritonBench as TritonBench
    from pytest_triton.client.triton import TritonClients as TritonClients
    from pytest_triton.plugin.server_factory import TritonServerFactory as TritonServerFactory
    from pytest_triton.repository.builder import RepositoryBuilder as RepositoryBuilder
    from pytest_triton.servers.protocol import TritonServer as TritonServer

__version__ = "0.1.0"

_WHERE = {
    "RepositoryBuilder": "pytest_triton.repository.builder",
    "TritonBench": "pytest_triton.bench.session",
    "TritonClients": "pytest_triton.client.triton",
    "TritonServer": "pytest_triton.servers.protocol",
    "TritonServerFactory": "pytest_triton.plugin.server_factory",
}

__all__ = ["RepositoryBuilder", "TritonBench", "TritonClients", "TritonServer", "TritonServerFactory", "__version__"]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_triton' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
