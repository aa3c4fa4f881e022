"""The local launcher and its runner: a ``tritonserver`` process on this machine."""

from __future__ import annotations

from pytest_triton.servers.local.launcher import LocalLauncher
from pytest_triton.servers.local.triton_process import TritonProcess

__all__ = ["LocalLauncher", "TritonProcess"]
