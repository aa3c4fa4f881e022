"""A known crash of tritonserver's own while it starts (Triton 2.51's gRPC aborting: "Epoll1Poller ... encountered
epoll_wait error: Bad file descriptor", SIGABRT) is started again once and said in the server's notes, never
reported as the model failing; a second one is reported as Triton's own crash.

The crash cannot be caused on demand, so the binary is a stand-in at that boundary: a shell script that prints
Triton's crash line and aborts (SIGABRT, as tritonserver did) on the starts it is told to crash, and otherwise runs
the real tritonserver of nvidia-pytriton."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_triton.errors import ServerStartError
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import resolve_binary
from pytest_triton.servers.local import LocalLauncher

from .local_triton_helpers import add_model

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")

pytestmark = pytest.mark.xdist_group("embedded-triton")

CRASH_LINE = (
    "E1202 11:02:03.456789 4242 ev_epoll1_linux.cc:359] (event_engine) Epoll1Poller:0x55d0c0ffee00 encountered "
    "epoll_wait error: Bad file descriptor"
)


def crashing_binary(folder: Path, crashes: int) -> TritonBinary:
    """The real tritonserver behind a script that crashes its first ``crashes`` starts (``--help`` passes)."""
    real = resolve_binary(None)
    count = folder / "starts"
    script = folder / "tritonserver"
    script.write_text(
        f"""#!/bin/sh
case "$*" in *--help*) exec "{real.path}" "$@" ;; esac
n=$(cat "{count}" 2>/dev/null || echo 0)
echo $((n + 1)) > "{count}"
if [ "$n" -lt {crashes} ]; then
  echo '{CRASH_LINE}'
  kill -ABRT $$
fi
exec "{real.path}" "$@"
""",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return dataclasses.replace(real, path=script)


def test_a_known_start_crash_is_started_again_once_and_noted(tmp_path: Path) -> None:
    add_model(tmp_path / "repo")
    with LocalLauncher(tmp_path / "repo", binary=crashing_binary(tmp_path, crashes=1), progress=None) as server:
        assert server.control.ready("add")
        [note] = server.start_notes
    assert note.startswith("tritonserver was killed by SIGABRT while starting with a known crash of its own (gRPC: ")
    assert "encountered epoll_wait error: Bad file descriptor" in note
    assert (tmp_path / "starts").read_text().strip() == "2"


def test_a_second_crash_is_reported_as_tritons_own(tmp_path: Path) -> None:
    add_model(tmp_path / "repo")
    launcher = LocalLauncher(tmp_path / "repo", binary=crashing_binary(tmp_path, crashes=2), progress=None)
    with pytest.raises(ServerStartError, match=r"while starting, twice, with a crash of its own \(not the models'\)"):
        launcher.start()
    assert (tmp_path / "starts").read_text().strip() == "2"
