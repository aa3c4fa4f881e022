"""Python-backend models written by the tests themselves, and /proc helpers for the local launcher tests."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from pathlib import Path

import pytest

ADD_MODEL = """
import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "B").as_numpy()
            out = pb_utils.Tensor("C", (a + b).astype(np.float32))
            responses.append(pb_utils.InferenceResponse(output_tensors=[out]))
        return responses
"""

ADD_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [
  {{ name: "A" data_type: TYPE_FP32 dims: [ -1 ] }},
  {{ name: "B" data_type: TYPE_FP32 dims: [ -1 ] }}
]
output [ {{ name: "C" data_type: TYPE_FP32 dims: [ -1 ] }} ]
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
"""

ECHO_MODEL = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        return [
            pb_utils.InferenceResponse(
                output_tensors=[pb_utils.Tensor("OUTPUT", pb_utils.get_input_tensor_by_name(r, "INPUT").as_numpy())]
            )
            for r in requests
        ]
"""

ECHO_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 8
input [ {{ name: "INPUT" data_type: TYPE_INT64 dims: [ 3 ] }} ]
output [ {{ name: "OUTPUT" data_type: TYPE_INT64 dims: [ 3 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 100 }}
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
"""

RAISING_MODEL = """
class TritonPythonModel:
    def initialize(self, args):
        raise ValueError("boom from initialize: the weights are missing")

    def execute(self, requests):
        return []
"""

# the comma between the two inputs is missing
MISSING_COMMA_CONFIG = """
name: "{name}"
backend: "python"
max_batch_size: 0
input [
  {{ name: "A" data_type: TYPE_FP32 dims: [ -1 ] }}
  {{ name: "B" data_type: TYPE_FP32 dims: [ -1 ] }}
]
output [ {{ name: "C" data_type: TYPE_FP32 dims: [ -1 ] }} ]
"""


def write_model(repository: Path, name: str, model_py: str, config: str) -> Path:
    """Write ``repository/name/config.pbtxt`` and ``repository/name/1/model.py``."""
    folder = repository / name
    (folder / "1").mkdir(parents=True, exist_ok=True)
    (folder / "config.pbtxt").write_text(textwrap.dedent(config).format(name=name).lstrip())
    (folder / "1" / "model.py").write_text(textwrap.dedent(model_py).lstrip())
    return folder


def add_model(repository: Path, name: str = "add") -> Path:
    return write_model(repository, name, ADD_MODEL, ADD_CONFIG)


def echo_model(repository: Path, name: str = "echo") -> Path:
    return write_model(repository, name, ECHO_MODEL, ECHO_CONFIG)


def skip_without_embedded_triton() -> None:
    """Skip the calling test module when nvidia-pytriton (the embedded tritonserver) is missing."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the local launcher tests need Linux (tritonserver, /proc)", allow_module_level=True)
    if importlib.util.find_spec("pytriton") is None:
        pytest.skip(
            "nvidia-pytriton is not installed (pip install 'pytest-triton[serve]'): no tritonserver to run",
            allow_module_level=True,
        )


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def alive(pid: int) -> bool:
    """Exists and is not a zombie."""
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def triton_processes() -> dict[int, str]:
    """Every live tritonserver or python backend stub process on the machine: pid -> comm."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            name = process_name(int(entry))
            if (name == "tritonserver" or name.startswith("triton_python")) and alive(int(entry)):
                found[int(entry)] = name
    return found


def parent_of(pid: int) -> int:
    fields = _stat(pid)
    return -1 if fields is None else int(fields[1])


def stubs_of(pid: int) -> list[int]:
    """Live python backend stubs whose parent is ``pid``."""
    found = []
    for child, name in triton_processes().items():
        fields = _stat(child)
        if name.startswith("triton_python") and fields is not None and int(fields[1]) == pid:
            found.append(child)
    return found


def started(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot): with the pid, it names one process, as pids are reused."""
    fields = _stat(pid)
    return None if fields is None else int(fields[19])


def group_of(pid: int) -> tuple[int, int | None]:
    """``pid``'s process group as seen now: its id and when its leader started (None: the leader is gone)."""
    pgid = os.getpgid(pid)
    return pgid, started(pgid)


def left_in(group: tuple[int, int | None]) -> list[int]:
    """The live members of ``group`` (from :func:`group_of`). Linux gives a group's id to a new process only
    once every member is gone, so where a newer process now holds the id (another test's server, on a busy
    machine whose pids wrap), nothing of the group seen is left."""
    pgid, leader_started = group
    now = started(pgid)
    if now is not None and leader_started is not None and now != leader_started:
        return []
    return in_group(pgid)


def described(pids: list[int]) -> str:
    """Each of ``pids`` with its parent and command line, for an assertion's message."""
    lines = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmdline = "(gone)"
        lines.append(f"pid {pid} (parent {parent_of(pid)}, started {started(pid)}): {cmdline[:200]}")
    return "\n".join(lines)


def in_group(pgid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
                found.append(int(entry))
    return found


def shm_regions(prefix: str, server: int | None = None) -> list[str]:
    """The shared-memory regions named ``prefix*``: in the host's /dev/shm, and where ``server`` (a pid) runs,
    in its own /dev/shm (a server in its namespaces has a tmpfs of its own there, seen through /proc)."""
    folders = [Path("/dev/shm")]
    if server is not None and alive(server):
        folders.append(Path(f"/proc/{server}/root/dev/shm"))
    found = []
    for folder in folders:
        try:
            found += [name for name in os.listdir(folder) if name.startswith(prefix)]
        except OSError:
            continue
    return found
