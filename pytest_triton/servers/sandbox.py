"""A ``tritonserver`` process in namespaces of its own: a private ``/tmp``, and a network only we can reach.

Two things Triton 2.51 does that no flag changes:

- its python backend makes ``/tmp/python_env_XXXXXX`` (the path is compiled into ``libtriton_python.so``: it
  ignores ``TMPDIR``) and removes it only on a clean exit, so every server killed by a signal leaves one;
- its SageMaker frontend binds 0.0.0.0 (there is no ``--sagemaker-address``), and that frontend's
  ``POST /models`` loads a model from any folder the caller names.

So each server starts through ``unshare``: a mount namespace where ``/tmp`` is a folder of the launcher's work
folder (removed with it) and ``/dev/shm`` a tmpfs of its own, mode 0700 (Boost, under the python backend,
``fchmod`` makes every region 0644 whatever the umask; the kernel frees the tmpfs once the server and its
stubs are gone, SIGKILL included: no region outlives them), and, where the SageMaker
frontend is on, a network namespace whose ports the host reaches only through
:class:`~pytest_triton.servers.relay.LoopbackRelay` on 127.0.0.1. The first process
inside (:mod:`pytest_triton.servers.sandbox_inner`) also sets ``umask 077``, then starts the server and stays as
its supervisor: when pytest dies, however, it takes the server's whole process group with it (python stubs that
stopped watching their parent included).

``unshare --mount --net`` needs root (``CAP_SYS_ADMIN``); elsewhere ``unshare --user --map-root-user`` makes
both where unprivileged user namespaces are allowed. Where neither works: a server without the SageMaker
frontend runs as before, in the shared ``/tmp`` (its ``python_env`` folder is left there: nothing else there
can be proven ours); one with the SageMaker frontend is refused with the reason.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

from pytest_triton.errors import ServerStartError
from pytest_triton.servers import sandbox_inner

# the variables whose folders the server reads (its libraries, the stub's interpreter and packages)
PATH_VARIABLES = ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONHOME")


@functools.cache
def namespace_prefix() -> tuple[tuple[str, ...], str]:
    """The ``unshare`` command that makes a mount and a network namespace on this machine, or () and why none
    can be made (checked once per process by running ``true`` in them)."""
    tool = shutil.which("unshare")
    if tool is None:
        return (), "the unshare command (util-linux) is not on PATH"
    reasons = []
    for prefix in ((tool, "--mount", "--net"), (tool, "--user", "--map-root-user", "--mount", "--net")):
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired) as err:
            reasons.append(f"{' '.join(prefix[1:])}: {err}")
            continue
        if done.returncode == 0:
            return prefix, ""
        reasons.append(f"{' '.join(prefix[1:])}: {done.stderr.strip() or f'exit code {done.returncode}'}")
    return (), "; ".join(reasons)


def refuse_without_namespaces(what: str) -> None:
    """Raise ServerStartError where :func:`namespace_prefix` finds no namespaces and ``what`` needs them."""
    prefix, why = namespace_prefix()
    if not prefix:
        raise ServerStartError(
            f"{what} is refused here: Triton 2.51's SageMaker frontend binds every interface (it has no address "
            f"flag), and this machine cannot give the server a network namespace of its own to keep it on "
            f"127.0.0.1 ({why}). Run as root, allow unprivileged user namespaces (sysctl "
            "kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0), or serve without the SageMaker "
            "frontend"
        )


def kept_paths(command: Sequence[str], env: Mapping[str, str], workdir: Path) -> list[str]:
    """The paths a server started with ``command`` and ``env`` reads: the work folder, the folder above the
    binary's (a tritonserver install keeps its backends, stubs and libraries beside ``bin/``, and the backend
    folder links into them), every absolute path on the command line (``--flag=/path`` too) and in the path
    variables, every other variable's value that is an absolute path (or its folder, where it does not exist yet),
    and this interpreter's import path (the python backend's stub imports the same packages, which a
    ``pip install --target`` or a ``.pth`` file may keep outside ``sys.prefix``); those under ``/tmp`` stay
    visible in its private ``/tmp``."""
    found = {str(workdir), os.path.dirname(os.path.dirname(os.path.abspath(command[0])))}
    found.update(os.path.normpath(p) for p in sys.path if p.startswith("/"))
    for arg in command:
        value = arg.partition("=")[2] if arg.startswith("--") else arg
        if value.startswith("/"):
            found.add(os.path.normpath(value))
    for name in PATH_VARIABLES:
        found.update(os.path.normpath(p) for p in env.get(name, "").split(os.pathsep) if p.startswith("/"))
    for value in env.values():  # a path the caller hands a model (a file it will write: its folder)
        if value.startswith("/") and os.pathsep not in value:
            path = os.path.normpath(value)
            found.add(path if os.path.exists(path) else os.path.dirname(path))
    found.add(os.path.normpath(sys.prefix))
    return sorted(found)


def server_pid_file(workdir: Path) -> Path:
    """Where the supervisor writes the server's pid (its own is the one the launcher started)."""
    return workdir / "server.pid"


def sandboxed(
    command: Sequence[str], env: Mapping[str, str], workdir: Path, relay: Mapping[int, Path] | None = None
) -> list[str] | None:
    """``command`` started in its own namespaces (see the module docstring) with ``workdir/tmp`` as its
    ``/tmp`` and a tmpfs of its own as its ``/dev/shm``; with ``relay`` (port -> Unix socket) in its own network
    too. None where no namespace can be made (then ``relay`` must be None: :func:`refuse_without_namespaces`
    first)."""
    prefix, _ = namespace_prefix()
    if not prefix:
        return None
    private = workdir / "tmp"
    private.mkdir(mode=0o700, exist_ok=True)
    spec = {
        "tmp": str(private),
        "keep": kept_paths(command, env, workdir),
        "relay": [[port, str(path)] for port, path in (relay or {}).items()],
        "parent": os.getpid(),  # the supervisor inside kills the server's group once this process is gone
        "pid_file": str(server_pid_file(workdir)),
    }
    wanted = [arg for arg in prefix if relay or arg != "--net"]
    return [*wanted, sys.executable, "-I", sandbox_inner.__file__, json.dumps(spec), "--", *command]
