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

Each refusal is a :class:`~pytest_triton.errors.ConfigError` that names the file, what was wrong and what to do.
"""

from __future__ import annotations

import contextlib
import dataclasses
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
    "open_regular",
    "read_file_bytes",
    "read_file_text",
]

FILE_LIMITS_ENV = "PYTEST_TRITON_FILE_LIMITS"
FileKind = Literal["contracts", "budgets", "samples", "ledger", "sidecar", "pyproject", "report"]
_WHAT: dict[FileKind, str] = {
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


def _kind_of(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _inside(path: Path, root: Path, what: str) -> None:
    real, base = path.resolve(), root.resolve()
    if real != base and base not in real.parents:
        raise ConfigError(
            f"the {what} leads outside {str(base)!r} (to {str(real)!r}); a link may only point inside it: "
            "copy the file in instead",
            path=str(path),
        )


@contextlib.contextmanager
def open_regular(
    path: Path, kind: FileKind, *, root: Path | None = None, limits: FileLimits | None = None
) -> Iterator[BinaryIO]:
    """``path`` opened for reading once it is known to be a regular file within its kind's size (see the module)."""
    what = _WHAT[kind]
    limit = (limits or FileLimits.from_env()).of(kind)
    if root is not None:
        _inside(path, root, what)
    try:
        before = os.stat(path)  # no open() at all of a socket or a device: opening one can have effects
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror or exc}", path=str(path)) from None
    if not stat.S_ISREG(before.st_mode):
        raise _not_regular(path, what, before.st_mode)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise ConfigError(f"cannot read the {what}: {exc.strerror or exc}", path=str(path)) from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):
            raise _not_regular(path, what, opened.st_mode)
        if opened.st_size > limit:
            raise _too_large(path, kind, opened.st_size, limit)
        os.set_blocking(fd, True)
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle


def read_file_bytes(path: Path, kind: FileKind, *, root: Path | None = None, limits: FileLimits | None = None) -> bytes:
    """The bytes of a regular file of ``kind``, at most its limit (see the module)."""
    limits = limits or FileLimits.from_env()
    with open_regular(path, kind, root=root, limits=limits) as handle:
        data = handle.read(limits.of(kind) + 1)
    if len(data) > limits.of(kind):
        raise _too_large(path, kind, len(data), limits.of(kind), grew=True)
    return data


def read_file_text(path: Path, kind: FileKind, *, root: Path | None = None, limits: FileLimits | None = None) -> str:
    """The UTF-8 text of a regular file of ``kind``; a byte that is not UTF-8 is a ConfigError at its line:col."""
    data = read_file_bytes(path, kind, root=root, limits=limits)
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


def _not_regular(path: Path, what: str, mode: int) -> ConfigError:
    link = f" (a link to {os.path.realpath(path)})" if os.path.islink(path) else ""
    return ConfigError(
        f"the {what}{link} is {_kind_of(mode)}, not a regular file; not read (a pipe would wait for a writer, "
        "a device never ends): give the path of a regular file",
        path=str(path),
    )


def _too_large(path: Path, kind: FileKind, size: int, limit: int, *, grew: bool = False) -> ConfigError:
    how = "grew past" if grew else f"holds {size:,} bytes, over"
    return ConfigError(
        f"the {_WHAT[kind]} {how} the {limit:,} bytes a {_WHAT[kind]} may hold; check that the path names the "
        f"right file, or raise the limit with {FILE_LIMITS_ENV}={kind}=SIZE (K, M, G suffixes)",
        path=str(path),
    )
