"""The first process inside a server's namespaces: it sets them up, then becomes ``tritonserver``.

Run as ``unshare --mount [--net] python -I sandbox_inner.py SPEC_JSON -- COMMAND...`` by
:mod:`pytest_triton.servers.sandbox` (standard library only: it runs isolated, ``-I``, so nothing of the
caller's environment or working folder is imported). In order:

1. ``umask 077``: every file the server and its python stubs create is the owner's alone; ``/dev/shm`` is a
   tmpfs of their own (mode 0700), as the python backend's regions are made 0644 whatever the umask (they
   hold request tensors); the kernel frees it with the namespace, once the server and its stubs are gone;
2. a private ``/tmp``: ``spec["tmp"]`` (a folder of the launcher's work folder) is bind-mounted over ``/tmp``,
   after the paths of ``spec["keep"]`` that lie under ``/tmp`` (the work folder, paths on the command line)
   were bound into it at their own paths. Triton's python backend makes ``/tmp/python_env_XXXXXX`` (a path
   compiled into ``libtriton_python.so`` 2.51: it ignores ``TMPDIR``) and removes it only on a clean exit;
   here it lands in the launcher's folder, which the launcher removes, and another user's ``/tmp`` folders
   are out of its reach;
3. with ``spec["relay"]`` (a network namespace: nothing in it is reachable from outside), loopback is brought
   up and a relay process is forked: for each ``[port, socket]`` it accepts on the Unix socket (in the
   owner-only work folder) and connects to ``127.0.0.1:port`` inside. The launcher's side listens on the
   host's 127.0.0.1 and connects to those sockets (:mod:`pytest_triton.servers.relay`);
4. the command runs in a child of this process, which stays as its supervisor in the same process group (the
   group the launcher stops as one). Triton's python stubs watch their parent and leave once it is gone, but a
   stub that is busy or stopped never looks (seen: an ONNX Runtime model's stub, still there 30 minutes after
   pytest was killed and took the server with it). So the supervisor's parent-death signal is one it handles
   (:data:`PARENT_GONE`, instead of the launcher's SIGKILL): when pytest dies, however, it kills the whole
   group, the server and every stub with it. It passes on SIGINT, SIGTERM, SIGHUP and SIGQUIT (Triton ignores
   a second shutdown signal) and ends as the server ended, with its exit code or by the same signal, so the
   launcher sees the server's own end.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import fcntl
import json
import os
import resource
import signal
import socket
import struct
import sys
import threading
from pathlib import Path

MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_BIND = 0x1000
MS_REC = 0x4000
PR_SET_PDEATHSIG = 1
PARENT_GONE = signal.SIGUSR2
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH22x"  # struct ifreq: the name, then the flags (the rest of its 40-byte union unused)
TMP = Path("/tmp")
SHM = Path("/dev/shm")

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mount(source: bytes, target: Path, kind: bytes | None, flags: int, options: bytes | None) -> None:
    if _libc.mount(source, str(target).encode(), kind, flags, options) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source.decode()} on {target}: {os.strerror(err)}")


def _mount_bind(source: Path, target: Path, *, recursive: bool) -> None:
    _mount(str(source).encode(), target, None, MS_BIND | (MS_REC if recursive else 0), None)


def private_tmp(tmp: Path, keep: list[str]) -> None:
    """Bind ``tmp`` over /tmp, with each path of ``keep`` under /tmp bound back at its own path."""
    bound: list[Path] = []
    for name in sorted(keep):
        path = Path(name)
        if path == TMP or TMP not in path.parents or any(b == path or b in path.parents for b in bound):
            continue
        if not path.exists():
            continue
        mountpoint = tmp / path.relative_to(TMP)
        if path.is_dir():
            mountpoint.mkdir(parents=True, exist_ok=True)
        else:
            mountpoint.parent.mkdir(parents=True, exist_ok=True)
            mountpoint.touch()
        _mount_bind(path, mountpoint, recursive=True)
        bound.append(path)
    _mount_bind(tmp, TMP, recursive=True)


def loopback_up() -> None:
    """Bring ``lo`` up: a new network namespace starts with it down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(IFREQ, b"lo", 0)
        flags = struct.unpack(IFREQ, fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _serve(listener: socket.socket, port: int) -> None:
    while True:
        conn, _ = listener.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", port), timeout=5.0)
        except OSError:  # the server has not opened this port yet: the client sees a closed connection
            conn.close()
            continue
        upstream.settimeout(None)
        threading.Thread(target=_pump, args=(conn, upstream), daemon=True).start()
        threading.Thread(target=_pump, args=(upstream, conn), daemon=True).start()


def unix_address(path: str) -> tuple[str, int | None]:
    """An address for ``path`` that fits ``sockaddr_un`` (108 bytes): the path, or where it is longer, the
    same socket through ``/proc/self/fd/N`` of its folder (close ``N`` once bound or connected)."""
    if len(path.encode()) < 100:
        return path, None
    folder = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{folder}/{os.path.basename(path)}", folder


def relay(listeners: list[tuple[socket.socket, int]], parent: int) -> None:
    """In a forked child, killed when its parent (the server's supervisor) ends: relay each Unix socket to its
    port."""
    if _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() != parent:
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's group gets SIGINT on stop; it leaves with it
    threads = [threading.Thread(target=_serve, args=pair, daemon=True) for pair in listeners]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    os._exit(0)


def main(argv: list[str]) -> None:
    spec, command = json.loads(argv[1]), argv[3:]
    if argv[2] != "--" or not command:
        raise SystemExit("usage: sandbox_inner.py SPEC_JSON -- COMMAND...")
    os.umask(0o077)
    _mount(b"tmpfs", SHM, b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0700")
    private_tmp(Path(spec["tmp"]), spec["keep"])
    relayed = spec.get("relay") or []
    if relayed:
        loopback_up()
        listeners = []
        for port, path in relayed:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            address, folder = unix_address(path)
            listener.bind(address)
            if folder is not None:
                os.close(folder)
            listener.listen(64)
            listeners.append((listener, int(port)))
        parent = os.getpid()
        if os.fork() == 0:
            relay(listeners, parent)
        for listener, _ in listeners:
            listener.close()
    sys.stdout.flush()
    supervise(command, int(spec["parent"]), Path(spec["pid_file"]))


def supervise(command: list[str], parent: int, pid_file: Path) -> None:
    """Run ``command`` in a child and end as it ends; the whole process group goes when ``parent`` (the
    launcher's process) dies (see the module docstring, step 4). The child's pid goes to ``pid_file``."""
    signal.signal(PARENT_GONE, lambda number, frame: os.killpg(0, signal.SIGKILL))
    if _libc.prctl(PR_SET_PDEATHSIG, PARENT_GONE, 0, 0, 0) != 0 or os.getppid() != parent:
        os._exit(1)  # the launcher is already gone (or the kernel refused): start nothing
    child = os.fork()
    if child == 0:
        signal.signal(PARENT_GONE, signal.SIG_DFL)
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the supervisor killed alone: the server goes too
        os.execvp(command[0], command)
    for number in FORWARDED:
        signal.signal(number, lambda number, frame: os.kill(child, number))
    written = pid_file.with_suffix(".tmp")
    written.write_text(str(child), encoding="ascii")
    written.rename(pid_file)  # whole or absent: the launcher reads it as soon as it is there
    _, status = os.waitpid(child, 0)  # retried across the handlers' interruptions (PEP 475)
    if os.WIFSIGNALED(status):
        ended_by = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the server dumped its own core where that is on
        if ended_by not in (signal.SIGKILL, signal.SIGSTOP):  # the two whose action cannot be set
            signal.signal(ended_by, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [ended_by])
        os.kill(os.getpid(), ended_by)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main(sys.argv)
