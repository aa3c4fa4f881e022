"""Reading a file the plugin did not write (contracts, budgets, samples, ledgers, sidecars) within limits.

A path a user gives may name anything: a FIFO (``open()`` waits for a writer forever), ``/dev/zero`` or a link to
it (``read()`` never ends), a socket, a 3 GB log. Every reader goes through :func:`read_file_bytes`,
:func:`read_file_text` or :func:`open_regular`, which

- refuse what is not a regular file, before reading a byte: the path is opened with ``O_NONBLOCK`` (a FIFO
  opens at once instead of waiting) and judged by ``fstat`` of the open descriptor, so a file swapped between
  the check and the read is judged as what was opened;
- refuse a file over its kind's size (:class:`FileLimits`), and read at most that many bytes plus one (a file
  that grows while read, or a ``/proc`` file that says it holds 0 bytes, is still bounded);
- with a ``root``, refuse a path whose links lead outside it;
- refuse text that is not UTF-8, naming the line and column of the first bad byte.

Each refusal is a :class:`RefusedFile` (a :class:`~pytest_triton.errors.ConfigError`) that names the file, what
was wrong and what to do; its ``refusal`` and ``fact`` let a caller that reports in its own words (the linter's
findings) tell the cases apart.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from typing import Literal

from pytest_triton.archive.guarded import MiB
from pytest_triton.archive.guarded import parse_size
from pytest_triton.errors import ConfigError

__all__ = [
    "FILE_LIMITS_ENV",
    "FileKind",
    "FileLimits",
    "RefusedFile",
    "leaves_root",
    "open_regular",
    "read_file_bytes",
    "read_file_text",
    "special_kind",
]

FILE_LIMITS_ENV = "PYTEST_TRITON_FILE_LIMITS"
FileKind = Literal["contracts", "budgets", "samples", "ledger", "sidecar", "pyproject", "report", "source", "config"]
Refusal = Literal["unreadable", "not regular", "outside root", "too large"]
_WHAT: dict[FileKind, str] = {
    "config": "config.pbtxt",  # its limit is the linter's max_config_bytes, given per call
    "source": "model source",
    "contracts": "contracts file",
    "budgets": "budgets file",
    "samples": "samples file",
    "ledger": "ledger file",
    "sidecar": "environment sidecar",
    "pyproject": "pyproject.toml",
    "report": "report",
}


@dataclass(frozen=True)
class FileLimits:
    """The largest file of each kind that is read (bytes); a hand-written file is small, data may be larger."""

    contracts: int = 1 * MiB
    budgets: int = 1 * MiB
    pyproject: int = 1 * MiB
    sidecar: int = 64 << 10  # KEY=VALUE lines
    ledger: int = 16 * MiB  # one JSON line per cloud resource
    samples: int = 256 * MiB  # JSON lines or an .npz: its arrays unpacked count too
    report: int = 64 * MiB  # a --triton-report JSON read back by `report merge`: it keeps every latency sample
    source: int = 8 * MiB  # a model.py the linter searches for auto_complete_config

    @classmethod
    def from_env(cls, name: str = FILE_LIMITS_ENV) -> FileLimits:
        """The defaults, with ``KIND=SIZE`` settings from ``$PYTEST_TRITON_FILE_LIMITS`` (comma-separated)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        changes: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in os.environ.get(name, "").split(","))):
            key, sep, size = item.partition("=")
            if not sep or key.strip() not in fields:
                raise ConfigError(f"${name}: {item!r} is not KIND=SIZE; KIND is one of {', '.join(sorted(fields))}")
            changes[key.strip()] = parse_size(size, what=f"${name} {key.strip()}")
        return dataclasses.replace(cls(), **changes)

    def of(self, kind: FileKind) -> int:
        return int(getattr(self, kind))


_DEFAULT_LIMITED = frozenset(field.name for field in dataclasses.fields(FileLimits))


class RefusedFile(ConfigError):
    """A file that was not read. ``refusal`` says why; ``fact`` says what the file is, without advice
    (``"is a FIFO (named pipe), not a regular file; it was not read"``); ``os_error`` is the file system's error
    when it could not be read at all."""

    def __init__(
        self, message: str, *, path: Path, refusal: Refusal, fact: str, os_error: OSError | None = None
    ) -> None:
        super().__init__(message, path=str(path))
        self.refusal, self.fact, self.os_error = refusal, fact, os_error


def special_kind(mode: int) -> str | None:
    """What a file that is neither regular nor a folder is (``"a FIFO (named pipe)"``), else None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def leaves_root(path: Path, root: Path) -> str | None:
    """Where ``path`` really leads when that is outside ``root`` (through a link), else None.

    ``path`` is usually ``root`` joined with a relative path; when no component below ``root`` is a link it
    stays inside, which a few lstat calls tell without resolving the whole absolute path (the linter asks
    this for every config of a large repository: the components are cut from the strings, not pathlib)."""
    relative = _parts_below(os.fspath(path), os.fspath(root))
    if relative is not None and ".." not in relative:
        below = os.fspath(root)
        for part in relative:
            below = os.path.join(below, part)
            if stat.S_ISLNK(os.lstat(below).st_mode):
                break
        else:
            return None
    real, base = os.path.realpath(path), os.path.realpath(root)
    if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return real


def _parts_below(path: str, root: str) -> list[str] | None:
    """The components of ``path`` below ``root`` (both as pathlib writes a path), or None when it is not below."""
    if path == root:
        return []
    if root == ".":
        return None if os.path.isabs(path) else path.split(os.sep)
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path[len(prefix) :].split(os.sep) if path.startswith(prefix) else None


def _limit_of(kind: FileKind, limits: FileLimits | None, limit: int | None) -> int:
    if limit is not None:
        return limit
    if kind not in _DEFAULT_LIMITED:
        raise TypeError(f"a {_WHAT[kind]} has no limit of its own: pass limit= (kind={kind!r})")
    return (limits or FileLimits.from_env()).of(kind)


@contextlib.contextmanager
def open_regular(
    path: Path,
    kind: FileKind,
    *,
    root: Path | None = None,
    limits: FileLimits | None = None,
    limit: int | None = None,
) -> Iterator[BinaryIO]:
    """``path`` opened for reading once it is known to be a regular file within its size limit (see the
    module); ``limit`` replaces the kind's limit for this call (a caller with its own setting)."""
    fd, _ = _open_checked(path, kind, root, _limit_of(kind, limits, limit))
    try:
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def _open_checked(path: Path, kind: FileKind, root: Path | None, limit: int) -> tuple[int, int]:
    """The open descriptor (non-blocking) and its size as ``fstat`` gave it, once every check of the module
    passed."""
    what = _WHAT[kind]
    try:
        before = os.stat(path)  # no open() at all of a socket or a device: opening one can have effects
        if (special := special_kind(before.st_mode)) is not None:
            raise _not_regular(path, what, special)
        if root is not None and (outside := leaves_root(path, root)) is not None:
            raise _outside(path, root, what, outside)
        if not stat.S_ISREG(before.st_mode):
            raise _not_regular(path, what, "a folder")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _unreadable(path, what, exc) from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped since the stat above
            raise _not_regular(path, what, special_kind(opened.st_mode) or "a folder")
        if opened.st_size > limit:
            raise _too_large(path, kind, limit, size=opened.st_size)
        return fd, opened.st_size
    except BaseException:
        os.close(fd)
        raise


def read_file_bytes(
    path: Path,
    kind: FileKind,
    *,
    root: Path | None = None,
    limits: FileLimits | None = None,
    limit: int | None = None,
) -> bytes:
    """The bytes of a regular file of ``kind``, at most its limit (see the module and :func:`open_regular`)."""
    limit = _limit_of(kind, limits, limit)
    fd, size = _open_checked(path, kind, root, limit)
    try:  # a regular file's reads ignore O_NONBLOCK: the descriptor is read as it was opened
        data = _read_up_to(fd, min(size, limit) + 1)  # a read of n allocates n bytes: ask for what is there
        if len(data) > size:  # grew while read, or a /proc file that says it holds 0 bytes: read on to the limit
            data += _read_up_to(fd, limit + 1 - len(data))
    finally:
        os.close(fd)
    if len(data) > limit:
        raise _too_large(path, kind, limit)
    return data


def _read_up_to(fd: int, count: int) -> bytes:
    """``count`` bytes from ``fd``, fewer at the end of the file."""
    data = os.read(fd, count)
    if len(data) == count or not data:
        return data
    chunks = [data]
    count -= len(data)
    while count > 0 and (data := os.read(fd, count)):
        chunks.append(data)
        count -= len(data)
    return b"".join(chunks)


def read_file_text(
    path: Path,
    kind: FileKind,
    *,
    root: Path | None = None,
    limits: FileLimits | None = None,
    limit: int | None = None,
) -> str:
    """The UTF-8 text of a regular file of ``kind``; a byte that is not UTF-8 is a ConfigError at its line:col."""
    data = read_file_bytes(path, kind, root=root, limits=limits, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        col = len(before) - (before.rfind(b"\n") + 1) + 1
        raise ConfigError(
            f"byte {data[exc.start : exc.start + 1]!r} is not UTF-8; save the {_WHAT[kind]} as UTF-8",
            path=str(path),
            line=line,
            col=col,
        ) from None


def _unreadable(path: Path, what: str, exc: OSError) -> RefusedFile:
    strerror = exc.strerror or str(exc)
    return RefusedFile(
        f"cannot read the {what}: {strerror}",
        path=path,
        refusal="unreadable",
        fact=f"cannot be read: {strerror}",
        os_error=exc,
    )


def _not_regular(path: Path, what: str, kind_of_file: str) -> RefusedFile:
    link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
    return RefusedFile(
        f"the {what}{link} is {kind_of_file}, not a regular file; not read (a pipe would wait for a writer, "
        "a device never ends): give the path of a regular file",
        path=path,
        refusal="not regular",
        fact=f"is {kind_of_file}, not a regular file; it was not read",
    )


def _outside(path: Path, root: Path, what: str, real: str) -> RefusedFile:
    return RefusedFile(
        f"the {what} leads outside {os.path.realpath(root)!r} (to {real!r}); a link may only point inside it: "
        "copy the file in instead",
        path=path,
        refusal="outside root",
        fact=f"is a link that leads out of {str(root)!r} (to {real!r}); it was not read",
    )


def _too_large(path: Path, kind: FileKind, limit: int, *, size: int | None = None) -> RefusedFile:
    how = "grew past" if size is None else f"holds {size:,} bytes, over"
    raise_it = f", or raise the limit with {FILE_LIMITS_ENV}={kind}=SIZE (K, M, G suffixes)"
    return RefusedFile(
        f"the {_WHAT[kind]} {how} the {limit:,} bytes a {_WHAT[kind]} may hold; check that the path names the "
        f"right file{raise_it if kind in _DEFAULT_LIMITED else ''}",
        path=path,
        refusal="too large",
        fact=f"holds more than {limit:,} bytes" if size is None else f"is {size:,} bytes",
    )


def write_private(path: Path, text: str, *, append: bool = False, sync: bool = False) -> Path:
    """Write (or append) ``text`` to ``path`` readable and writable by its owner only (0600), whatever the umask
    and whatever mode an older file had: reports and ledgers hold outputs, timings and the names of paid
    resources. What is at ``path`` must be a regular file or nothing: a link is refused (``O_NOFOLLOW``: in a
    shared folder another user could point it at a file of ours), a FIFO too (``O_NONBLOCK``: opening one for
    writing would wait for a reader). ``sync`` waits for the disk (a ledger line must survive a SIGKILL)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | (os.O_APPEND if append else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        why = "it is a link" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise ConfigError(f"cannot write it: {why}; name a new file in a folder of your own", path=str(path)) from None
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        kind = special_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise ConfigError(f"not written: it is {kind}, not a regular file; name a regular file", path=str(path))
        os.fchmod(fd, 0o600)
        if not append:
            os.ftruncate(fd, 0)
        out.write(text)
        out.flush()
        if sync:
            os.fsync(fd)
    return path
