"""What a model repository holds, as the servers see it: its model folders, and a staged copy of it."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from pathlib import PurePosixPath
from pathlib import PureWindowsPath

from pytest_triton.errors import ConfigError

# FICLONE (linux/fs.h): a copy-on-write clone of a whole file on btrfs, XFS (reflink=1), bcachefs, overlayfs
# over those; elsewhere (ext4, tmpfs, across file systems) the ioctl fails and the file is copied
_FICLONE = 0x40049409


def check_name(value: object, what: str) -> str:
    """``value`` if it is one folder name; ConfigError naming ``what`` and the value otherwise.

    A model name becomes a folder that writers replace (rmtree) and fill: ``""`` would be the repository
    itself, ``".."`` its parent, ``"a/b"`` or ``"/x"`` a folder elsewhere."""
    text = value if isinstance(value, str) else ""
    problem = ""
    if not isinstance(value, str):
        problem = f"is a {type(value).__name__}, not a string"
    elif not text:
        problem = "is empty (a config.pbtxt without name:?)"
    elif text in (".", ".."):
        problem = "is a path component, not a name"
    elif any(sep in text for sep in ("/", "\\", "\0")):
        problem = "holds a path separator (or NUL)"
    if problem:
        raise ConfigError(f"{what}={value!r} {problem}; a model name must be one folder name such as 'classifier'")
    return text


def check_relative(value: object, what: str) -> str:
    """``value`` if it is a relative path that stays inside its folder (``1/model.onnx``, ``1/``); ConfigError
    naming ``what`` and the value otherwise (empty, ``.``, ``..`` anywhere, absolute, a drive, backslashes)."""
    text = value if isinstance(value, str) else ""
    parts = PurePosixPath(text).parts
    problem = ""
    if not isinstance(value, str):
        problem = f"is a {type(value).__name__}, not a string"
    elif not text.strip("/") or all(p == "." for p in parts):
        problem = "is empty or '.'"
    elif text.startswith("/") or PureWindowsPath(text).drive:
        problem = "is absolute"
    elif "\\" in text or "\0" in text:
        problem = "holds a backslash (or NUL); use '/'"
    elif ".." in parts:
        problem = "climbs out with '..'"
    if problem:
        raise ConfigError(f"{what}={value!r} {problem}; give a path inside the model folder such as '1/model.onnx'")
    return text


def inside(root: Path, target: Path, what: str) -> Path:
    """``target`` if, with links resolved, it lies inside ``root`` (a link in the tree may point out)."""
    resolved, base = target.resolve(), root.resolve()
    if resolved != base and base not in resolved.parents:
        raise ConfigError(f"{what}: {str(target)!r} resolves to {str(resolved)!r}, outside {str(root)!r}; not written")
    return target


def model_folders(repository: Path) -> list[str]:
    """The model folders a launcher loads from ``repository``: its sub-folders, sorted.

    Hidden folders and ``__pycache__`` are left out: Triton 2.51 polls a hidden folder as a model too (the
    linter reports it), but no one means it as one.
    """
    require_folder(repository, "model repository")
    return sorted(
        p.name for p in repository.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "__pycache__"
    )


def require_folder(path: Path, what: str) -> Path:
    """``path`` if it is a folder; ConfigError naming it and what it should be otherwise."""
    if not path.is_dir():
        state = "does not exist" if not path.exists() else "is not a folder"
        raise ConfigError(f"{what} {str(path)!r} {state}; give the folder that holds the model folders")
    return path


def clone_or_copy(src: str, dst: str) -> str:
    """Copy ``src`` to ``dst`` so that no write to ``dst`` can reach ``src``: a copy-on-write clone where the
    file system has them (no data copied, no space used until one side changes), a full copy otherwise.
    Never a symlink or a hard link: both write through to the user's file."""
    try:
        import fcntl

        with open(src, "rb") as source, open(dst, "wb") as target:
            fcntl.ioctl(target.fileno(), _FICLONE, source.fileno())
    except (ImportError, OSError):
        shutil.copyfile(src, dst)  # sendfile(2) on Linux: in the kernel, no copy through Python
    shutil.copystat(src, dst)
    return dst


def stage_copy(source: Path, dest: Path) -> Path:
    """Copy ``source`` to ``dest`` for a server to use: the server then writes only into the copy.

    The python backend imports each model.py where it lies and writes ``__pycache__`` beside it, so serving
    the user's folder in place would change it. Every file is a clone or a copy (:func:`clone_or_copy`), never
    a link: a write to the staged copy (a model that caches into its folder, a test that edits a staged
    file) must not change the user's original. ``__pycache__`` folders are left out.

    Only regular files and folders are copied, each exactly once per path: a link is followed when it
    resolves inside ``source`` (a link to a folder that holds it, a loop, is refused), and anything else (a
    link out of the repository, a dangling link, a FIFO, a socket, a device such as ``/dev/zero``) is a
    ConfigError naming the file, before the server starts: a FIFO would block the copy forever, a device
    fill the disk. A file larger than the free space where it is staged is refused too.
    """
    require_folder(source, "model repository")
    if dest.exists():
        shutil.rmtree(dest)
    root = source.resolve()
    _stage_folder(source, dest, root, {_identity(root)})
    return dest


def _identity(path: Path) -> tuple[int, int]:
    info = os.stat(path)
    return info.st_dev, info.st_ino


def _staged_target(path: Path, root: Path) -> Path:
    """Where ``path`` (an entry of the repository at ``root``) leads: itself, or a link's target inside ``root``."""
    if not path.is_symlink():
        return path
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError) as err:  # dangling, a loop of links (RuntimeError before Python 3.13)
        raise ConfigError(
            f"{path}: a link that leads nowhere ({err}); remove it, or replace it with the file it should be"
        ) from None
    if target != root and root not in target.parents:
        raise ConfigError(
            f"{path}: a link to {str(target)!r}, outside the repository {str(root)!r}; staging copies only what "
            "lies inside it: copy the file into the repository instead of linking it"
        )
    return target


def _stage_folder(source: Path, dest: Path, root: Path, ancestors: set[tuple[int, int]]) -> None:
    dest.mkdir()
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        if entry.name == "__pycache__":
            continue
        path = Path(entry.path)
        target = _staged_target(path, root)
        info = os.stat(target)
        if stat.S_ISDIR(info.st_mode):
            identity = (info.st_dev, info.st_ino)
            if identity in ancestors:
                raise ConfigError(
                    f"{path}: a link to {str(target)!r}, a folder that holds it (a loop); remove the link"
                )
            _stage_folder(path, dest / entry.name, root, ancestors | {identity})
        elif stat.S_ISREG(info.st_mode):
            _check_room(path, info.st_size, dest)
            clone_or_copy(str(target), str(dest / entry.name))
        else:
            raise ConfigError(
                f"{path}: {_kind(info.st_mode)} cannot be served; a model repository holds regular files and "
                "folders: remove it, or replace it with the file it stands for"
            )
    shutil.copystat(source, dest)


def _check_room(path: Path, size: int, dest: Path) -> None:
    """ConfigError where a copy of ``path`` (``size`` bytes: a sparse file is copied in full on file systems
    without clones) cannot fit where it is staged, before the copy fills that disk."""
    free = shutil.disk_usage(dest).free
    if size > free:
        raise ConfigError(
            f"{path}: {size} bytes do not fit in the staging folder {str(dest)!r} ({free} bytes free); free some "
            "space, or point TMPDIR (or the launcher's staging folder) at a larger disk"
        )


def _kind(mode: int) -> str:
    kinds = {stat.S_ISFIFO: "a FIFO", stat.S_ISSOCK: "a socket", stat.S_ISCHR: "a character device"}
    return next((kind for test, kind in kinds.items() if test(mode)), "a block device or other special file")
