"""The base of a baseline run: a git ref read with ``git archive`` into a work folder of ours, or a folder.

Nothing is written to the user's checkout or its ``.git``: ``git archive`` only reads objects, and what it
writes goes into a folder the plugin made (and removes at the end). Only what a contracts file needs is
extracted: the file itself and the paths it names (repositories, the reference, samples, budgets).
"""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from typing import final

from pytest_triton.errors import ConfigError

__all__ = ["BaseTree", "open_base", "tree_digest"]

_GIT_TIMEOUT_S = 120
_IGNORED = ("__pycache__", ".pytest_cache")  # what serving a folder may leave in it, not part of the model


def _git(root: Path, *args: str, stdin: bytes | None = None) -> bytes:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], input=stdin, capture_output=True, timeout=_GIT_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        raise ConfigError("--triton-baseline with a git ref needs git on PATH (or give a folder)") from None
    if done.returncode != 0:
        raise ConfigError(f"git {' '.join(args[:2])} failed in {root}: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def git_root(path: Path) -> Path | None:
    """The top of the git work tree ``path`` is in, or None outside one (or without git)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError:
        return None
    return Path(done.stdout.strip()).resolve() if done.returncode == 0 else None


@final
@dataclass(frozen=True)
class BaseTree:
    """Where the base of a run lives: ``root`` stands for the head's ``head_root`` (the git work tree)."""

    ref: str  # as given
    label: str  # what item names and the table call it (the ref, or the folder's name)
    head_root: Path
    root: Path
    commit: str | None = None  # the ref's commit, for a git ref
    work: Path | None = None  # our folder that holds ``root`` (None: a folder the user gave, read as it is)

    def base_path(self, head_path: Path) -> Path:
        """The base's counterpart of a path of the head (a path outside the head's root is itself)."""
        try:
            return self.root / head_path.resolve().relative_to(self.head_root)
        except ValueError:
            return head_path

    def describe(self) -> str:
        if self.commit is None:
            return f"the folder {str(self.root)!r}"
        return f"{self.ref} ({self.commit[:12]})"


def open_base(ref: str, anchor: Path, work: Path) -> BaseTree:
    """The base named by ``ref``: an existing folder (a checkout of the base), else a git ref of the work tree
    ``anchor`` is in, resolved to a commit; its files are extracted into ``work`` as they are needed
    (:func:`extract_for`). A ref git does not know is a ConfigError that says what to do."""
    folder = Path(ref).expanduser()
    root = git_root(anchor)
    if folder.is_dir():
        return BaseTree(ref, folder.resolve().name, (root or anchor).resolve(), folder.resolve())
    if root is None:
        raise ConfigError(
            f"--triton-baseline={ref!r}: not a folder, and {str(anchor)!r} is not in a git work tree: give a git "
            "ref of the repository that holds the contracts file, or a folder with the base's checkout"
        )
    try:
        commit = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except ConfigError:
        raise ConfigError(
            f"--triton-baseline={ref!r}: git knows no such commit in {root} (fetch it first: on GitHub Actions, "
            "actions/checkout with fetch-depth: 0, or git fetch origin main)"
        ) from None
    work.mkdir(parents=True, exist_ok=True)
    return BaseTree(ref, ref, root, work / "tree", commit=commit, work=work)


def _exists_at(base: BaseTree, relative: str) -> bool:
    assert base.commit is not None
    done = subprocess.run(
        ["git", "-C", str(base.head_root), "cat-file", "-e", f"{base.commit}:{relative}"],
        capture_output=True,
        timeout=_GIT_TIMEOUT_S,
        check=False,
    )
    return done.returncode == 0


def extract(base: BaseTree, paths: Iterable[Path]) -> list[Path]:
    """Extract ``paths`` (of the head) as they are at the base's commit into its work folder; returns the base
    paths that exist there. A folder base is read as it is."""
    wanted: list[str] = []
    for path in paths:
        target = base.base_path(path)
        if base.commit is None or target == path or target.exists():
            continue
        wanted.append(target.relative_to(base.root).as_posix())
    present = [w for w in dict.fromkeys(wanted) if _exists_at(base, w)]
    if present and base.commit is not None:
        archive = _git(base.head_root, "archive", "--format=tar", base.commit, "--", *present)
        base.root.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
            tar.extractall(base.root, filter="data")
    return [base.base_path(p) for p in paths if base.base_path(p).exists()]


def declared_paths(contracts: Path) -> list[Path]:
    """The paths a contracts file names (resolved against it), read without validating it: what its base
    needs extracted before it can be read."""
    from pytest_triton.config.toml import read_toml

    try:
        data: Any = read_toml(contracts, "pyproject" if contracts.name == "pyproject.toml" else "contracts").data
    except ConfigError:
        return []  # the base's file is validated when it is loaded, with the error naming it
    if contracts.name == "pyproject.toml":
        data = data.get("tool", {}).get("pytest-triton", {}).get("contracts", {})
    found: list[str] = []
    for variant in (data.get("variants") or {}).values():
        if isinstance(variant, dict):
            found.append(variant.get("repository", ""))
    for table, key in (("reference", "onnx"), ("inputs", "samples"), ("latency", "budgets")):
        section = data.get(table)
        if isinstance(section, dict):
            found.append(section.get(key, ""))
    return [(contracts.parent / text).resolve() for text in found if isinstance(text, str) and text]


def contracts_at_base(base: BaseTree, contracts: Path) -> Path | None:
    """The contracts file as it is at the base, with every path it names extracted beside it; None when the
    base has no such file (every variant of it is new)."""
    if not extract(base, [contracts]):
        return None
    at_base = base.base_path(contracts)
    extract(base, [base_to_head(base, p) for p in declared_paths(at_base)])
    return at_base


def base_to_head(base: BaseTree, path: Path) -> Path:
    """The head's counterpart of a base path (the inverse of :meth:`BaseTree.base_path`)."""
    try:
        return base.head_root / path.resolve().relative_to(base.root.resolve())
    except ValueError:
        return path


def tree_digest(path: Path) -> str:
    """A digest of a folder's files (relative names and bytes) or of one file; caches are left out."""
    digest = hashlib.sha256()
    if path.is_file():
        digest.update(path.read_bytes())
        return digest.hexdigest()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        relative = file.relative_to(path)
        if any(part in _IGNORED for part in relative.parts) or file.suffix == ".pyc":
            continue
        digest.update(relative.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(file.read_bytes()).digest())
    return digest.hexdigest()
