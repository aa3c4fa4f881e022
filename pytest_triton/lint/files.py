"""Opening a file the linter reads: a regular file, within a size limit, inside the tree it belongs to.

Triton follows links, so the linter does too, but only to read what is the repository's own: a config.pbtxt
linked to ``/proc/self/environ`` would otherwise have its bytes quoted in a finding (and in a pull request's
annotations), a FIFO would block the read forever and ``/dev/zero`` would never end. Each refusal is a
:class:`RefusedFile` whose ``reason`` says what the path is; the caller turns it into a finding.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["RefusedFile", "leaves_root", "read_bounded", "special_kind"]


class RefusedFile(Exception):
    """The file was not read: ``reason`` says why (a special file, a link out of its root, over the limit)."""

    def __init__(self, path: Path, reason: str, *, rule: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path, self.reason, self.rule = path, reason, rule


def special_kind(mode: int) -> str | None:
    """What a non-regular, non-folder file is (``"a FIFO"``), or None for a regular file or a folder."""
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

    ``path`` is ``root`` joined with a relative path; when no component below ``root`` is a link it stays
    inside, which a few lstat calls tell without resolving the whole absolute path."""
    try:
        relative = path.relative_to(root)
    except ValueError:
        relative = None
    if relative is not None and ".." not in relative.parts:
        below = root
        for part in relative.parts:
            below = below / part
            if stat.S_ISLNK(os.lstat(below).st_mode):
                break
        else:
            return None
    real = os.path.realpath(path)
    base = os.path.realpath(root)
    if real == base or real.startswith(base.rstrip(os.sep) + os.sep):
        return None
    return real


def read_bounded(path: Path, *, root: Path | None, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit``; :class:`RefusedFile` otherwise.

    Refused: a path whose links lead outside ``root`` (not opened at all), anything but a regular file
    (opened non-blocking, so a FIFO without a writer cannot stall the run), a file over ``limit`` bytes
    (``st_size`` is checked first, and the read stops at ``limit + 1`` for files that report 0, as /proc's do).
    ``OSError`` from the file system (missing, no permission, a link loop) is raised as is."""
    kind = special_kind(os.stat(path).st_mode)  # stat opens nothing: safe on a FIFO or a device
    if kind is not None:
        raise RefusedFile(path, f"is {kind}, not a regular file; it was not read", rule="L113")
    if root is not None and (outside := leaves_root(path, root)) is not None:
        reason = f"is a link that leads out of {str(root)!r} (to {outside!r}); it was not read"
        raise RefusedFile(path, reason, rule="L114")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        kind = special_kind(info.st_mode)  # swapped since the stat above
        if kind is not None:
            raise RefusedFile(path, f"is {kind}, not a regular file; it was not read", rule="L113")
        if info.st_size > limit:
            raise RefusedFile(path, f"is {info.st_size:,} bytes", rule="size")
        data = handle.read(min(info.st_size, limit) + 1)  # read(n) allocates n bytes: ask for what is there
        if len(data) > info.st_size:  # grew while read, or a file that reports no size: read on to the limit
            data += handle.read(limit + 1 - len(data))
    if len(data) > limit:
        raise RefusedFile(path, f"holds more than {limit:,} bytes", rule="size")
    return data
