"""What a model repository holds, as the servers see it: its model folders, and a staged copy of it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pytest_triton.errors import ConfigError

# files at least this large are linked into a staged copy instead of copied (weights, engines): a staged
# repository must not double the disk use of a 1 GB model
LINK_FILES_FROM_BYTES = 1 << 20


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


def _copy_or_link(src: str, dst: str) -> None:
    # configs and sources are always copied: staging rewrites configs, and a link would write through
    rewritten = src.endswith((".pbtxt", ".py"))
    if not rewritten and os.path.getsize(src) >= LINK_FILES_FROM_BYTES:
        os.symlink(os.path.realpath(src), dst)
    else:
        shutil.copy2(src, dst)


def stage_copy(source: Path, dest: Path, *, link_large_files: bool = True) -> Path:
    """Copy ``source`` to ``dest`` for a server to use: the server then writes only into the copy.

    The python backend imports each model.py where it lies and writes ``__pycache__`` beside it, so serving
    the user's folder in place would change it. Large files are symlinked (``link_large_files``) where the
    server reads this machine's files; a container needs real copies. ``__pycache__`` folders are left out.
    """
    require_folder(source, "model repository")
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(
        source,
        dest,
        symlinks=False,
        ignore=shutil.ignore_patterns("__pycache__"),
        copy_function=_copy_or_link if link_large_files else shutil.copy2,
    )
    return dest
