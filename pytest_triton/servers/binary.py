"""Find a ``tritonserver`` binary and what it needs to run: environment, backend folder, backends.

Order: an explicit path, else ``tritonserver`` on PATH (an NGC container has every backend), else the
binary bundled in the ``nvidia-pytriton`` wheel. The bundled binary needs (checked on Triton 2.51 from
nvidia-pytriton 0.7.0):

- ``LD_LIBRARY_PATH`` with the wheel's ``nvidia_pytriton.libs``;
- a backend folder whose ``python/`` holds ``libtriton_python.so``, ``triton_python_backend_utils.py``
  and the ``triton_python_backend_stub`` built for the running Python (the wheel keeps one stub per
  Python version); we build it once in a cache folder, from symlinks;
- the environment's ``bin`` first on PATH: the stub embeds Python and finds its prefix through the
  ``python3`` it sees on PATH;
- the running Python's own ``libpython`` first on ``LD_LIBRARY_PATH`` when it is a shared build: the stub
  links ``libpython3.X.so.1.0``, and if the loader finds another build (e.g. Debian's) with our prefix,
  that build's frozen ``site`` module looks for ``dist-packages`` and the env's ``site-packages``
  (numpy, onnxruntime, editable installs) are not on ``sys.path``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from types import MappingProxyType

from pytest_triton.errors import MissingDependency
from pytest_triton.errors import ServerStartError
from pytest_triton.servers.owner import own_folder

DEFAULT_BACKEND_DIR = Path("/opt/tritonserver/backends")
_PYTHON_BACKEND_FILES = ("libtriton_python.so", "triton_python_backend_utils.py")
_STUB = "triton_python_backend_stub"


@dataclass(frozen=True)
class TritonBinary:
    """A ``tritonserver`` binary and what it needs.

    ``env`` holds the variables to set on top of the current environment (see :meth:`environ`);
    ``backend_directory`` is passed as ``--backend-directory`` (None: Triton's default);
    ``backends`` lists the backend folders found there; ``bundled`` is True for nvidia-pytriton's binary.
    """

    path: Path
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    backend_directory: Path | None = None
    backends: frozenset[str] = frozenset()
    cache_directory: Path | None = None
    bundled: bool = False

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """The full environment for the server process: ``base`` (default os.environ) updated by ``env``."""
        out = dict(os.environ if base is None else base)
        out.update(self.env)
        return out


def _prepend(entries: list[str], current: str | None) -> str:
    parts = [e for e in entries if e]
    if current:
        parts.extend(p for p in current.split(os.pathsep) if p and p not in parts)
    return os.pathsep.join(parts)


def python_library_dir() -> str | None:
    """The folder of the running Python's shared ``libpython`` (None for a static build)."""
    libdir = sysconfig.get_config_var("LIBDIR")
    name = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
    if not libdir or not name or not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        return None
    return str(libdir) if (Path(libdir) / str(name)).exists() else None


def _server_env(extra_libs: list[str]) -> dict[str, str]:
    libs = [d for d in [python_library_dir(), *extra_libs] if d]
    env = {"PATH": _prepend([os.path.dirname(sys.executable)], os.environ.get("PATH"))}
    if libs or os.environ.get("LD_LIBRARY_PATH"):
        env["LD_LIBRARY_PATH"] = _prepend(libs, os.environ.get("LD_LIBRARY_PATH"))
    return env


def list_backends(directory: Path | None) -> frozenset[str]:
    """The backend folders under ``directory`` (names of its subfolders, hidden ones left out)."""
    if directory is None or not directory.is_dir():
        return frozenset()
    return frozenset(p.name for p in directory.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def pytriton_dir() -> Path | None:
    """The installed ``pytriton`` package folder, found without importing it (None if not installed)."""
    try:
        spec = importlib.util.find_spec("pytriton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def default_cache_dir() -> Path:
    """``$PYTEST_TRITON_CACHE_DIR``, else ``$XDG_CACHE_HOME/pytest-triton``, else ``~/.cache/pytest-triton``."""
    configured = os.environ.get("PYTEST_TRITON_CACHE_DIR")
    if configured:
        return Path(configured)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pytest-triton"


def prune_backend_dirs(cache_dir: Path) -> list[Path]:
    """Remove the backend folders whose nvidia-pytriton is gone (a deleted virtual environment: a link of the
    folder points nowhere); returns them. One folder is built per environment and Python version, so without this
    the cache would grow by one per environment ever used."""
    removed = []
    for folder in sorted(cache_dir.glob("backends-py*")) if cache_dir.is_dir() else []:
        links = list((folder / "python").glob("*")) if (folder / "python").is_dir() else []
        if links and all(link.is_symlink() for link in links) and not all(link.exists() for link in links):
            trash = Path(tempfile.mkdtemp(prefix=".stale-", dir=cache_dir))
            with contextlib.suppress(OSError):  # another process pruned or rebuilt it first
                os.rename(folder, trash / "old")
                removed.append(folder)
            shutil.rmtree(trash, ignore_errors=True)
    return removed


def _backend_dir_ok(directory: Path, sources: dict[str, Path]) -> bool:
    try:  # another builder may be moving the folder away right now
        return all((directory / "python" / name).resolve() == src.resolve() for name, src in sources.items())
    except OSError:
        return False


def prepare_backend_dir(package: Path, python_version: str, cache_dir: Path) -> Path:
    """Build (once) ``cache_dir/backends-pyX.Y-HASH/python/`` with the python backend and the stub for
    ``python_version``, as symlinks into the nvidia-pytriton ``package``; returns the backend folder."""
    server = package / "tritonserver"
    stubs = server / "python_backend_stubs"
    stub = stubs / python_version / _STUB
    if not stub.is_file():
        available = sorted(p.name for p in stubs.iterdir() if (p / _STUB).is_file()) if stubs.is_dir() else []
        raise ServerStartError(
            f"nvidia-pytriton at {str(package)!r} has no python backend stub for Python {python_version} "
            f"(it has: {', '.join(available) or 'none'}); use one of those Python versions, or point "
            "--triton-setting tritonserver=PATH at a tritonserver built for this Python"
        )
    sources = {name: server / "backends" / "python" / name for name in _PYTHON_BACKEND_FILES}
    sources[_STUB] = stub
    missing = [str(p) for p in sources.values() if not p.is_file()]
    if missing:
        raise ServerStartError(f"nvidia-pytriton install is incomplete, missing: {', '.join(missing)}")
    key = hashlib.sha1(f"{package.resolve()}|{python_version}".encode()).hexdigest()[:12]
    target = cache_dir / f"backends-py{python_version}-{key}"
    if _backend_dir_ok(target, sources):
        return target
    own_folder(cache_dir, "the cache folder (PYTEST_TRITON_CACHE_DIR, XDG_CACHE_HOME)")
    prune_backend_dirs(cache_dir)
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=cache_dir))
    try:
        (staging / "python").mkdir(mode=0o700)
        for name, src in sources.items():
            (staging / "python" / name).symlink_to(src.resolve())
        for _attempt in range(5):  # concurrent xdist workers (or threads) build the same folder
            if _backend_dir_ok(target, sources):
                return target  # another builder won
            if target.exists():  # stale (nvidia-pytriton moved or was reinstalled): move it aside atomically
                trash = Path(tempfile.mkdtemp(prefix=".stale-", dir=cache_dir))
                with contextlib.suppress(OSError):  # someone else moved or replaced it first
                    os.rename(target, trash / "old")
                shutil.rmtree(trash, ignore_errors=True)
            try:
                os.rename(staging, target)  # atomic
                return target
            except OSError:
                continue  # a complete folder appeared meanwhile: checked at the top of the loop
        if not _backend_dir_ok(target, sources):
            raise ServerStartError(f"could not build the backend folder {str(target)!r}: it keeps changing under us")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _bundled(package: Path, cache_dir: Path | None) -> TritonBinary:
    server = package / "tritonserver"
    libs = package.parent / "nvidia_pytriton.libs"
    if not libs.is_dir():  # editable install of pytriton
        libs = server / "external_libs"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    cache = default_cache_dir() if cache_dir is None else cache_dir
    try:
        backend_dir = prepare_backend_dir(package, version, cache)
    except PermissionError:
        backend_dir = prepare_backend_dir(package, version, Path(tempfile.gettempdir()) / "pytest-triton-cache")
    caches = server / "caches"
    return TritonBinary(
        path=server / "bin" / "tritonserver",
        env=MappingProxyType(_server_env([str(libs)])),
        backend_directory=backend_dir,
        backends=list_backends(backend_dir),
        cache_directory=caches if caches.is_dir() else None,
        bundled=True,
    )


def _external(path: Path) -> TritonBinary:
    backend_dir: Path | None = None
    for candidate in (path.resolve().parent.parent / "backends", DEFAULT_BACKEND_DIR):
        if candidate.is_dir():
            backend_dir = candidate
            break
    return TritonBinary(
        path=path,
        env=MappingProxyType(_server_env([])),
        backend_directory=backend_dir,
        backends=list_backends(backend_dir),
    )


def find_tritonserver(path: str | os.PathLike[str] | None = None, *, cache_dir: Path | None = None) -> TritonBinary:
    """Locate ``tritonserver``: ``path``, else PATH, else nvidia-pytriton's bundled binary.

    Raises :class:`ServerStartError` for a ``path`` that is not an executable file, and
    :class:`MissingDependency` (``pip install 'pytest-triton[serve]'``) when nothing is found.
    """
    package = pytriton_dir()
    bundled_path = package / "tritonserver" / "bin" / "tritonserver" if package is not None else None
    if path is not None:
        explicit = Path(path).expanduser()
        if not explicit.is_file() or not os.access(explicit, os.X_OK):
            raise ServerStartError(
                f"tritonserver path={str(path)!r} is not an executable file; fix --triton-setting tritonserver=PATH "
                "or leave it out to use tritonserver from PATH or from nvidia-pytriton"
            )
        found: Path | None = explicit.absolute()
    else:
        which = shutil.which("tritonserver")
        found = Path(which).absolute() if which else None
    if found is not None:
        if package is not None and bundled_path is not None and _same_file(found, bundled_path):
            return _bundled(package, cache_dir)
        return _external(found)
    if package is not None and bundled_path is not None and bundled_path.is_file():
        return _bundled(package, cache_dir)
    raise MissingDependency("nvidia-pytriton", "serve")


def _same_file(a: Path, b: Path) -> bool:
    with contextlib.suppress(OSError):
        return a.resolve() == b.resolve() or os.path.samefile(a, b)
    return False


def resolve_binary(binary: str | os.PathLike[str] | TritonBinary | None) -> TritonBinary:
    """``binary`` as a :class:`TritonBinary`: itself, or found by :func:`find_tritonserver` (None: PATH, then
    nvidia-pytriton's)."""
    return binary if isinstance(binary, TritonBinary) else find_tritonserver(binary)


def help_text(binary: TritonBinary) -> str:
    """What ``tritonserver --help`` prints (its options), read once per binary file; "" where it gives nothing
    within 10 s (Triton 2.51 answers in well under a second)."""
    try:
        stamp = binary.path.stat().st_mtime_ns
    except OSError:
        return ""
    return _help_text(str(binary.path), stamp, tuple(sorted(binary.env.items())))


@functools.cache
def _help_text(path: str, stamp: int, env: tuple[tuple[str, str], ...]) -> str:
    del stamp  # part of the cache key only: a binary replaced in place is read again
    try:
        done = subprocess.run(
            [path, "--help"], env={**os.environ, **dict(env)}, capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout + done.stderr
