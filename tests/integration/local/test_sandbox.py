"""A real tritonserver in namespaces of its own: the SageMaker frontend reached on 127.0.0.1 only and its
model loading behind the key, a private /tmp, owner-only shared memory (pytest_triton/servers/sandbox.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pytest_triton.servers.local.launcher import LocalLauncher
from pytest_triton.servers.local.triton_process import TritonProcess
from pytest_triton.servers.owner import owners_dir
from pytest_triton.servers.ports import default_lock_dir
from pytest_triton.servers.process import SHM_DIR
from pytest_triton.servers.process import sweep_stale_workdirs
from pytest_triton.servers.protocol import Prepared
from pytest_triton.servers.sagemaker.local import SageMakerLocalLauncher
from pytest_triton.servers.sandbox import namespace_prefix
from pytest_triton.servers.wait import Deadline

from .local_triton_helpers import add_model
from .test_listeners import _ports
from .test_listeners import listeners

NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"  # a python uid 65534 can run
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]

# a model whose initialize leaves a mark where the server's user can write: proof that it ran
MARKING_MODEL = """
import pathlib

class TritonPythonModel:
    def initialize(self, args):
        pathlib.Path({mark!r}).write_text("initialize ran")

    def execute(self, requests):
        return []
"""
MARKING_CONFIG = 'name: "intruder"\nbackend: "python"\nmax_batch_size: 0\n'
LOAD = """
import json, sys, urllib.request, urllib.error
url, folder = sys.argv[1], sys.argv[2]
body = json.dumps({"model_name": "intruder", "url": folder}).encode()
headers = {"Content-Type": "application/json", **json.loads(sys.argv[3])}
request = urllib.request.Request(url + "/models", data=body, method="POST", headers=headers)
try:
    with urllib.request.urlopen(request, timeout=60) as reply:
        print(reply.status)
except urllib.error.HTTPError as err:
    print(err.code, err.read().decode())
except OSError as err:
    print("refused", err)
"""


def _needs_namespaces() -> None:
    prefix, why = namespace_prefix()
    if not prefix:
        pytest.skip(f"this machine cannot make a mount and network namespace ({why})")


def _needs_nobody() -> None:
    if os.getuid() != 0 or not Path(SYSTEM_PYTHON).exists() or shutil.which("setpriv") is None:
        pytest.skip(f"needs root, setpriv and {SYSTEM_PYTHON} to run a second user (uid {NOBODY})")


def _ss_listeners() -> list[tuple[str, str]]:
    """(local address:port, process) of every listening TCP socket, as ``ss -ltnp`` prints them."""
    out = subprocess.run(["ss", "-H", "-ltnp"], capture_output=True, text=True, check=True).stdout
    return [(line.split()[3], " ".join(line.split()[5:])) for line in out.splitlines() if line.strip()]


def _intruder(tmp_path: Path) -> tuple[Path, Path]:
    """A repository uid 65534 wrote (the SageMaker frontend's ``url``: the folder holding the model folder),
    and where its model's initialize would leave a mark."""
    mark = tmp_path / "mark" / "initialize-ran"
    mark.parent.mkdir()
    folder = tmp_path / "nobody" / "intruder"
    (folder / "1").mkdir(parents=True)
    (folder / "1" / "model.py").write_text(MARKING_MODEL.format(mark=str(mark)))
    (folder / "config.pbtxt").write_text(MARKING_CONFIG)
    for path in [tmp_path / "nobody", *(tmp_path / "nobody").rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
    tmp_path.chmod(0o755)
    return folder.parent, mark


def _load_as_nobody(url: str, folder: Path, headers: dict[str, str] | None = None) -> str:
    env = {"PATH": os.environ["PATH"], "HOME": tempfile.gettempdir()}
    argv = [*AS_NOBODY, SYSTEM_PYTHON, "-c", LOAD, url, str(folder), json.dumps(headers or {})]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=90, check=True).stdout.strip()


@pytest.fixture
def sagemaker_local(tmp_path: Path) -> Iterator[SageMakerLocalLauncher]:
    _needs_namespaces()
    add_model(tmp_path / "repo")
    env = {"SAGEMAKER_TRITON_ALLOW_GRPC": "true", "SAGEMAKER_TRITON_ALLOW_METRICS": "true"}
    with SageMakerLocalLauncher(tmp_path / "repo", env=env, staging=tmp_path / "work", progress=None) as launcher:
        yield launcher


def test_sagemaker_local_listens_on_loopback_only(sagemaker_local: SageMakerLocalLauncher) -> None:
    # Triton 2.51's SageMaker frontend bound 0.0.0.0 (no address flag); the server now has a network of its own
    ports = _ports(sagemaker_local.urls)
    assert set(ports) == {"sagemaker", "grpc", "metrics"}
    table = listeners()
    assert {name: table.get(port) for name, port in ports.items()} == {name: {"127.0.0.1"} for name in ports}
    assert isinstance(sagemaker_local.runner, TritonProcess)
    pid = sagemaker_local.runner.pid
    assert pid is not None
    seen = _ss_listeners()
    assert not [line for line in seen if f"pid={pid}," in line[1]], seen  # the server listens on no host address
    for port in ports.values():
        assert [address for address, _ in seen if address.rsplit(":", 1)[1] == str(port)] == [f"127.0.0.1:{port}"]
    assert any("reached through a relay on 127.0.0.1" in note for note in sagemaker_local.notes)
    # and it serves through the relay, a kept-alive connection for several requests
    values = np.array([1.0, 2.0], dtype=np.float32)
    transport = sagemaker_local.transport()
    for _ in range(3):
        out = transport.infer("add", {"A": values, "B": values}, ["C"])
        assert out["C"].tolist() == [2.0, 4.0]


def test_a_model_load_from_another_user_is_refused(sagemaker_local: SageMakerLocalLauncher, tmp_path: Path) -> None:
    _needs_nobody()
    folder, mark = _intruder(tmp_path)
    url = sagemaker_local.urls.sagemaker
    assert url is not None
    answer = _load_as_nobody(url, folder)
    assert answer.startswith("403 pytest-triton: path='/models' is refused"), answer
    time.sleep(1.0)
    assert not mark.exists()
    # the same request with a crafted path or a chunked body does not slip through either
    parsed = urllib.parse.urlsplit(url)
    for target in ("/ping/../models", "//models", "/models?x=/ping"):
        assert _raw_status(parsed.hostname, parsed.port, f"POST {target} HTTP/1.1\r\nContent-Length: 0\r\n\r\n") == 403
    smuggled = "POST /invocations HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nPOST /models HTTP/1.1\r\n\r\n"
    assert _raw_status(parsed.hostname, parsed.port, smuggled) == 411
    assert not mark.exists()


def _raw_status(host: str | None, port: int | None, request: str) -> int:
    import socket

    with socket.create_connection((host or "127.0.0.1", port or 0), timeout=10) as sock:
        sock.sendall(request.encode())
        reply = sock.recv(65536).decode("latin-1")
    match = re.match(r"HTTP/1\.1 (\d+)", reply)
    assert match is not None, reply
    return int(match.group(1))


def test_serve_with_the_sagemaker_frontend_keeps_loading_behind_the_key(tmp_path: Path) -> None:
    # `serve --sagemaker`: the local launcher with the SageMaker frontend too; its key opens /models
    _needs_namespaces()
    _needs_nobody()
    add_model(tmp_path / "repo")
    folder, mark = _intruder(tmp_path)
    with LocalLauncher(tmp_path / "repo", sagemaker=True, progress=None) as launcher:
        ports = _ports(launcher.urls)
        table = listeners()
        assert {name: table.get(port) for name, port in ports.items()} == {name: {"127.0.0.1"} for name in ports}
        url = launcher.urls.sagemaker
        assert url is not None
        assert _load_as_nobody(url, folder).startswith("403 pytest-triton: path='/models' is refused")
        assert not mark.exists()
        # the key passes: Triton answers itself, and cannot see the folder in the server's private /tmp
        answer = _load_as_nobody(url, folder, launcher.control_headers)
        assert answer.startswith("400 {"), answer
        assert "repository not found" in answer, answer
        assert not mark.exists()
        # HTTP, gRPC and metrics still answer through the relay
        assert launcher.clients().http.is_model_ready("add")
        assert launcher.clients().grpc.is_model_ready("add")


def test_the_server_has_a_private_tmp_and_leaves_other_users_folders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Triton's python backend makes /tmp/python_env_XXXXXX (it ignores TMPDIR); the launcher used to remove
    # every empty python_env_* folder that appeared while its server started, another user's too
    _needs_namespaces()
    add_model(tmp_path / "repo")
    theirs = Path("/tmp") / f"python_env_{os.getpid()}_theirs"

    wait_ready = LocalLauncher._wait_ready

    def while_another_user_starts_one(self: LocalLauncher, prepared: Prepared, deadline: Deadline) -> None:
        theirs.mkdir()
        os.chown(theirs, NOBODY, NOBODY)
        wait_ready(self, prepared, deadline)

    monkeypatch.setattr(LocalLauncher, "_wait_ready", while_another_user_starts_one)
    try:
        launcher = LocalLauncher(tmp_path / "repo", progress=None).start()
        try:
            workdir = launcher.runner.workdir() if launcher.runner is not None else None
            assert workdir is not None
            ours = list((workdir / "tmp").glob("python_env_*"))
        finally:
            launcher.stop()
        assert theirs.is_dir()  # left alone
        assert ours, f"the python backend's folder is not in the server's own /tmp ({workdir / 'tmp'})"
        assert not workdir.exists()  # ours went with the work folder
    finally:
        if theirs.exists():
            theirs.rmdir()


OWNER_SCRIPT = """
import sys, time
from pytest_triton.servers.protocol import Prepared
from pytest_triton.servers.local.launcher import LocalLauncher
from pytest_triton.servers.local.triton_process import TritonProcess
launcher = LocalLauncher(sys.argv[1], progress=None).start()
print(launcher.runner.workdir(), flush=True)
time.sleep(600)
"""


def test_a_killed_owner_leaves_no_python_env_folder(tmp_path: Path) -> None:
    # SIGKILL of the process that started the server: the server dies with it, without removing its python_env
    # folder; that folder is in the work folder, which the next sweep removes
    _needs_namespaces()
    add_model(tmp_path / "repo")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, str(tmp_path / "repo")], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert owner.stdout is not None
        workdir = Path(owner.stdout.readline().strip())
        assert list((workdir / "tmp").glob("python_env_*"))
    finally:
        owner.kill()
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
    deadline = time.monotonic() + 10
    while workdir.exists() and time.monotonic() < deadline:
        sweep_stale_workdirs(workdir.parent)
        time.sleep(0.2)
    assert not workdir.exists()


def test_shared_memory_regions_are_owner_only(tmp_path: Path) -> None:
    # the python backend's regions hold request tensors; they were -rw-r--r-- in /dev/shm, readable by anyone
    # (Boost sets their mode whatever the umask): now they lie in the server's own tmpfs, 0700
    _needs_namespaces()
    _needs_nobody()
    add_model(tmp_path / "repo")
    with LocalLauncher(tmp_path / "repo", progress=None) as launcher:
        assert launcher.clients().http.is_model_ready("add")
        assert isinstance(launcher.runner, TritonProcess)
        prefix, pid = launcher.runner.shm_prefix, launcher.runner.pid
        assert sorted(SHM_DIR.glob(f"{prefix}*")) == []
        own = Path(f"/proc/{pid}/root/dev/shm")
        regions = sorted(own.glob(f"{prefix}*"))
        assert regions, "the python stub's regions are in the server's own /dev/shm"
        assert stat.filemode(own.stat().st_mode) == "drwx------"
        assert own.stat().st_uid == os.getuid()
        reads = [f"open({str(p)!r}, 'rb').read(1)" for p in regions]
        script = "\n".join(f"try:\n    {read}\n    print('read')\nexcept OSError:\n    pass" for read in reads)
        env = {"PATH": os.environ["PATH"]}
        done = subprocess.run([*AS_NOBODY, SYSTEM_PYTHON, "-c", script], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert done.stdout == "", f"uid {NOBODY} read {done.stdout.count('read')} of {len(regions)} regions"


def _modes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): stat.filemode(p.lstat().st_mode) for p in [root, *root.rglob("*")]}


def test_what_a_server_writes_is_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the staged repository, the unpacked model, the logs, the private /tmp, the lock folders and the cache:
    # folders 0700, files 0600 (copies kept the user's 0755/0644)
    monkeypatch.setenv("PYTEST_TRITON_CACHE_DIR", str(tmp_path / "cache"))
    add_model(tmp_path / "repo")
    for path in [tmp_path / "repo", *(tmp_path / "repo").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    modes = {}
    for launcher in (
        LocalLauncher(tmp_path / "repo", progress=None),
        SageMakerLocalLauncher(tmp_path / "repo", staging=tmp_path / "work", progress=None),
    ):
        with launcher:
            assert launcher.runner is not None
            modes[launcher.name] = _modes(launcher.runner.workdir())
            modes["port locks"] = _modes(default_lock_dir())
            modes["owner locks"] = _modes(owners_dir())
    modes["cache"] = _modes(tmp_path / "cache")
    assert len(modes["local"]) > 5, modes  # the repository, its model, the log
    assert len(modes["sagemaker-local"]) > 5, modes
    assert len(modes["cache"]) > 2, modes
    others = {f"{where}: {name}": mode for where, found in modes.items() for name, mode in found.items()}
    others = {name: mode for name, mode in others.items() if mode[4:] != "------" and not mode.startswith("l")}
    assert not others, textwrap.shorten(repr(others), 2000)


@pytest.mark.parametrize("variable", ["PYTEST_TRITON_PORT_LOCKS", "PYTEST_TRITON_CACHE_DIR", "PYTEST_TRITON_OWNERS"])
def test_a_folder_variable_naming_a_file_is_one_line(tmp_path: Path, variable: str) -> None:
    # it was a FileExistsError (NotADirectoryError) traceback
    add_model(tmp_path / "repo")
    (tmp_path / "file").write_text("not a folder")
    env = {**os.environ, variable: str(tmp_path / "file"), "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    argv = [sys.executable, "-m", "pytest_triton", "serve", str(tmp_path / "repo"), "--timeout", "60"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert f"={str(tmp_path / 'file')!r} cannot be a folder of pytest-triton (a file is there)" in done.stderr
