"""Who owns what this plugin leaves on a machine, proven by a held lock rather than guessed from ``/proc``.

Each process that starts servers holds, for as long as it lives, an exclusive ``flock`` on a lock file of
its own, ``<tmp>/pytest-triton-<uid>/owners/<token>.lock`` (``token``: 128 random bits). What it creates
(containers, work folders, shared-memory regions) carries that token. A sweep judges an owner by its lock:

- the lock is held: the owner is alive, in whatever PID namespace it runs (a lock is a kernel object of the
  file, not of a pid: ``unshare --pid`` does not hide it), whatever ``/proc`` shows (``hidepid``, no ``/proc``);
- the lock can be taken: the owner is dead (a lock dies with its process, even by SIGKILL or the OOM killer);
- the file is missing or cannot be opened (another user's folder, another container's ``/tmp``, an older
  version of this plugin that wrote no token): liveness cannot be known, and **nothing is swept**.

A random token cannot name a file that another owner made, so a lock file found at a token's path is that
owner's. The folder is per user, created 0700, and refused when someone else owns it or can write to it.
The owner's pid and PID-namespace inode are recorded beside the token (container labels, ``owner`` files) to
help a person read them; they never decide liveness.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import tempfile
import threading
import time
from enum import Enum
from pathlib import Path

from pytest_triton.errors import ConfigError

TOKEN_HEX = 32
DEAD_LOCK_MAX_AGE_S = 7 * 24 * 3600  # a dead owner's lock file is kept this long, so that every sweep can judge it


class Liveness(Enum):
    ALIVE = "alive"
    DEAD = "dead"
    UNKNOWN = "unknown"


def user_dir(base: Path | None = None) -> Path:
    """This user's folder for lock files, ``<tmp>/pytest-triton-<uid>`` (0700), made on first use.

    Raises ConfigError when it exists but is not a folder of this user that only this user can write."""
    folder = (Path(tempfile.gettempdir()) if base is None else base) / f"pytest-triton-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        raise ConfigError(
            f"{folder} is not a folder of uid {os.getuid()} that only it can write "
            f"(owner uid {info.st_uid}, mode {stat.filemode(info.st_mode)}): pytest-triton keeps its lock files "
            "there; remove it, or point TMPDIR at a folder of your own"
        )
    return folder


def own_folder(path: Path, what: str) -> Path:
    """``path``, made (0700, parents too) where missing; ConfigError naming ``what`` (the variable that set
    it) where it cannot be a folder: a file there, a folder that cannot be made."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as err:
        found = "a file is there" if path.exists() and not path.is_dir() else err.strerror or str(err)
        raise ConfigError(
            f"{what}={str(path)!r} cannot be a folder of pytest-triton ({found}); point it at a folder of your "
            "own, or unset it"
        ) from None
    return path


def private_subdir(name: str, base: Path | None = None) -> Path:
    """``user_dir()/name``, made 0700 if needed."""
    folder = user_dir(base) / name
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def owners_dir() -> Path:
    """Where the owner lock files live: ``$PYTEST_TRITON_OWNERS`` or ``<tmp>/pytest-triton-<uid>/owners``."""
    configured = os.environ.get("PYTEST_TRITON_OWNERS")
    return own_folder(Path(configured), "PYTEST_TRITON_OWNERS") if configured else private_subdir("owners")


def pid_namespace() -> str:
    """This process's PID namespace (``pid:[inode]``; "" where ``/proc`` does not say)."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


class _Owner:
    """This process's lock: taken on first use, held until the process ends (a fork makes its own)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.token = secrets.token_hex(TOKEN_HEX // 2)
        folder = owners_dir()
        final = folder / f"{self.token}.lock"
        staging = folder / f".{self.token}.new"
        # locked before it has its name: a sweep never sees the final name unlocked while we live
        self.fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        os.write(self.fd, f"pid={self.pid} pidns={pid_namespace()}\n".encode())
        os.rename(staging, final)
        self.path = final


_owner: _Owner | None = None
_owner_lock = threading.Lock()


def owner_token() -> str:
    """This process's owner token (its lock is taken on the first call and held until the process ends)."""
    global _owner
    with _owner_lock:
        if _owner is None or _owner.pid != os.getpid():
            _owner = _Owner()
        return _owner.token


def liveness(token: str, *, folder: Path | None = None) -> Liveness:
    """Whether the owner ``token`` is alive, dead, or cannot be known from here (then: never sweep)."""
    if _owner is not None and _owner.pid == os.getpid() and token == _owner.token:
        return Liveness.ALIVE
    if len(token) != TOKEN_HEX or not all(c in "0123456789abcdef" for c in token):
        return Liveness.UNKNOWN
    try:
        path = (owners_dir() if folder is None else folder) / f"{token}.lock"
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (OSError, ConfigError):
        return Liveness.UNKNOWN
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return Liveness.ALIVE
    except OSError:
        return Liveness.UNKNOWN
    finally:
        os.close(fd)
    return Liveness.DEAD


def sweep_dead_owner_locks(*, folder: Path | None = None, max_age_s: float = DEAD_LOCK_MAX_AGE_S) -> list[str]:
    """Remove lock files of owners dead for longer than ``max_age_s`` (their things were swept long ago), and
    staging files (``.<token>.new``) of owners killed before they named theirs; returns the tokens."""
    base = owners_dir() if folder is None else folder
    removed = []
    try:
        names = os.listdir(base)
    except OSError:
        return []
    now = time.time()
    for name in names:
        staging = name.startswith(".") and name.endswith(".new")
        token = name[1:-4] if staging else name.removesuffix(".lock")
        path = base / name
        with contextlib.suppress(OSError):
            if not (staging or name.endswith(".lock")) or now - os.lstat(path).st_mtime < max_age_s:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: its owner is dead
                os.unlink(path)
                removed.append(token)
            except BlockingIOError:
                pass
            finally:
                os.close(fd)
    return removed
