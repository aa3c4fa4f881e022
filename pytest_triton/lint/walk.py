"""Reading folders for the linter: each folder listed once, unreadable ones and link loops reported.

Triton follows symbolic links in a repository, so the linter does too, but a search through a
folder of repositories visits each real folder (device and inode) once: a link back to a folder
already visited (``self -> .``, ``up -> ..``) is reported as a loop and not followed. A folder or
file the linter's user cannot read is a finding that names the path, its mode and owner, and the
user the linter ran as (as root every tree is readable, which hides what the server's user sees).
"""

from __future__ import annotations

import errno
import operator
import os
import stat
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_triton.archive.files import special_kind

if TYPE_CHECKING:
    from pytest_triton.lint.context import Reporter


class Entry:
    """One child of a folder; ``is_dir`` and ``is_file`` follow links, as Triton does (neither: a special
    file, a link loop or a link that leads nowhere). A plain class with slots: a listing of 10,000 model
    folders makes one per child, and its path is made once, when first asked."""

    __slots__ = ("_path", "folder", "is_dir", "is_file", "is_link", "name")

    def __init__(self, name: str, folder: Path, is_dir: bool, is_file: bool = True, is_link: bool = False) -> None:
        self.name, self.folder, self.is_dir, self.is_file, self.is_link = name, folder, is_dir, is_file, is_link
        self._path: Path | None = None

    def __repr__(self) -> str:
        return f"Entry({self.name!r}, {self.folder!r}, is_dir={self.is_dir}, is_file={self.is_file})"

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = self.folder / self.name
        return self._path


def describe_access(path: Path, exc: OSError) -> str:
    """What stopped the read: the error, the path's mode and owner, and who the linter runs as."""
    reason = exc.strerror or type(exc).__name__
    user = f"the linter runs as uid {os.geteuid()}" if hasattr(os, "geteuid") else "check the linter's user"
    try:
        info = path.stat()
    except OSError:
        return f"{reason} (a parent folder cannot be searched; {user})"
    return f"{reason} (mode {stat.filemode(info.st_mode)}, owner uid {info.st_uid} gid {info.st_gid}; {user})"


@dataclass
class FolderReader:
    """Cached folder listings for one lint run; reports each unreadable path once (rule L111)."""

    reporter: Reporter
    _listings: dict[Path, tuple[Entry, ...]] = field(default_factory=dict)
    _reported: set[Path] = field(default_factory=set)
    _subfolders: dict[Path, list[Path]] = field(default_factory=dict)
    _names: dict[Path, frozenset[str]] = field(default_factory=dict)

    def entries(self, folder: Path) -> tuple[Entry, ...]:
        """The children of ``folder`` sorted by name; none (and one finding) when it cannot be read."""
        cached = self._listings.get(folder)
        if cached is not None:
            return cached
        try:
            with os.scandir(folder) as scan:
                found = [Entry(item.name, folder, *_kind(item)) for item in scan]
        except OSError as exc:
            self.unreadable(folder, exc, what="folder")
            found = []
        listing = tuple(sorted(found, key=_by_name))
        self._listings[folder] = listing
        return listing

    def subfolders(self, folder: Path) -> list[Path]:
        found = self._subfolders.get(folder)
        if found is None:
            found = self._subfolders[folder] = [entry.path for entry in self.entries(folder) if entry.is_dir]
        return found

    def subfolder_names(self, folder: Path) -> frozenset[str]:
        return frozenset(path.name for path in self.subfolders(folder))

    def names(self, folder: Path) -> frozenset[str]:
        found = self._names.get(folder)
        if found is None:
            found = self._names[folder] = frozenset(entry.name for entry in self.entries(folder))
        return found

    def was_unreadable(self, path: Path) -> bool:
        return path in self._reported

    def unreadable(self, path: Path, exc: OSError, *, what: str = "path") -> None:
        if path in self._reported:
            return
        self._reported.add(path)
        self.reporter.add(
            "L111",
            path,
            f"cannot read {what} {str(path)!r}: {describe_access(path, exc)}",
            "Triton reads the repository as the server's user: give it read and search permission "
            "(chmod -R a+rX on the repository)",
        )


_by_name = operator.attrgetter("name")


def _kind(entry: os.DirEntry[str]) -> tuple[bool, bool, bool]:
    """(is a folder, is a regular file, is a link), following links; a dangling or looping link is neither."""
    try:
        link = entry.is_symlink()
        if entry.is_dir():
            return True, False, link
        return False, entry.is_file(), link
    except OSError:
        return False, False, True


def not_plain(entry: Entry) -> str | None:
    """What an entry that is neither a folder nor a regular file is, or None for a dangling link (harmless
    to Triton) and for what is plain."""
    if entry.is_dir or entry.is_file:
        return None
    try:
        info = os.stat(entry.path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a link loop (the link leads back to itself)"
        return None
    return special_kind(info.st_mode)


def folder_identity(folder: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder a path leads to, or None when it cannot be reached."""
    try:
        info = folder.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino)
