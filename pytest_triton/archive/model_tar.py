"""SageMaker's model.tar.gz, as every reader of it meets it: the default-model variable, its sidecars, unpacking.

The Triton SageMaker container unpacks the archive into /opt/ml/model and serves it as the model repository;
with several models it needs SAGEMAKER_TRITON_DEFAULT_MODEL_NAME. Beside an archive that is recorded as
``<archive>.env``; beside a repository folder, in the folder's ``sagemaker.env`` (:data:`FOLDER_SIDECAR`),
which is never packaged. A folder's ``.env`` is where people keep secrets: it is never packaged either, and only
its ``SAGEMAKER_TRITON_*`` lines are read, with a note to rename it (older releases used that name).
The linter, the packager, sagemaker-local and ``--endpoint`` all read these facts from here.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from pathlib import PurePosixPath

from pytest_triton.archive.files import read_file_bytes
from pytest_triton.archive.guarded import ArchiveLimitError
from pytest_triton.archive.guarded import ArchiveLimits
from pytest_triton.archive.guarded import open_guarded
from pytest_triton.archive.guarded import unsafe_reason
from pytest_triton.errors import ConfigError

DEFAULT_MODEL_ENV = "SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"
FOLDER_SIDECAR = "sagemaker.env"
LEGACY_FOLDER_SIDECAR = ".env"
_SERVE_SCRIPT_PREFIX = "SAGEMAKER_TRITON_"
_CHUNK = 1 << 20


def sidecar_env(archive: Path) -> Path:
    """Where the container environment of a model.tar.gz is recorded: ``<archive>.env``."""
    return archive.with_name(archive.name + ".env")


def read_env_file(path: Path, *, root: Path | None = None) -> dict[str, str]:
    """KEY=VALUE lines (``#`` comments, optional quotes, ``export``), as written beside a model.tar.gz; read
    through the guarded reader (a FIFO or ``/dev/zero`` is a ConfigError, ``root``: links stay inside it)."""
    return parse_env(read_file_bytes(path, "sidecar", root=root).decode("utf-8", errors="replace"))


def parse_env(text: str) -> dict[str, str]:
    """The values of an env file's text (see :func:`read_env_file`)."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip().removeprefix("export ").strip()] = value.strip().strip("'\"")
    return values


def folder_env(folder: Path) -> tuple[dict[str, str], list[str]]:
    """The container environment recorded in a repository folder, and notes about where it came from.

    ``sagemaker.env`` whole; else, for compatibility, only the ``SAGEMAKER_TRITON_*`` lines of ``.env``
    (nothing else of it: it may hold tokens, and the environment is visible in DescribeModel)."""
    sidecar = folder / FOLDER_SIDECAR
    if sidecar.is_file():
        return read_env_file(sidecar, root=folder), []
    legacy = folder / LEGACY_FOLDER_SIDECAR
    if not legacy.is_file():
        return {}, []
    values = {k: v for k, v in read_env_file(legacy, root=folder).items() if k.startswith(_SERVE_SCRIPT_PREFIX)}
    if not values:
        return {}, []
    note = (
        f"{legacy}: read {', '.join(sorted(values))} from it (only SAGEMAKER_TRITON_* lines; never uploaded); "
        f"rename it {FOLDER_SIDECAR}, since .env is where secrets live"
    )
    return values, [note]


def unpack_model_archive(archive: Path, dest: Path, limits: ArchiveLimits | None = None) -> Path:
    """Unpack a model.tar.gz into ``dest`` as SageMaker does into /opt/ml/model, within ``limits``
    (default: :meth:`ArchiveLimits.from_env`): links (hard or symbolic), devices, absolute paths and ``..``
    are refused, and the member count, bytes read, header sizes and bytes written are bounded."""
    limits = limits if limits is not None else ArchiveLimits.from_env()
    dest.mkdir(parents=True, exist_ok=True)
    base = dest.resolve()
    members = written = 0
    try:
        expansion_floor = max(64 << 20, limits.max_expansion * archive.stat().st_size)
        with open_guarded(str(archive), limits) as tar:
            for member in tar:
                members += 1
                if members > limits.max_members:
                    raise _over(archive, "max_members", limits.max_members, f"more than {limits.max_members:,} members")
                reason = unsafe_reason(member)
                if reason is not None:
                    raise ConfigError(
                        f"cannot unpack {str(archive)!r}: member {member.name!r} {reason}; SageMaker archives "
                        "hold plain files and folders only (tar -czf model.tar.gz -C repo .)",
                        path=str(archive),
                    )
                target = dest / PurePosixPath(member.name)
                if base not in target.resolve().parents and target.resolve() != base:
                    raise ConfigError(f"cannot unpack {str(archive)!r}: member {member.name!r} lands outside {dest}")
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                written += member.size
                if written > limits.max_written_bytes or written > limits.max_total_bytes:
                    name, value = min(
                        ("max_written_bytes", limits.max_written_bytes),
                        ("max_total_bytes", limits.max_total_bytes),
                        key=lambda limit: limit[1],  # the limit that was passed: the smaller one
                    )
                    raise _over(archive, name, value, f"more than {value:,} bytes at member {member.name!r}")
                if written > expansion_floor:
                    raise _over(
                        archive,
                        "max_expansion",
                        limits.max_expansion,
                        f"{written:,} bytes unpacked from {archive.stat().st_size:,} at member {member.name!r}",
                    )
                target.parent.mkdir(parents=True, exist_ok=True)
                _write_member(tar, member, target)
    except ArchiveLimitError as exc:
        if isinstance(exc, _Unpacking):
            raise  # already says which archive and which limit
        raise _over(archive, exc.limit, exc.value, exc.reason) from None
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ConfigError(
            f"cannot unpack {str(archive)!r}: {exc}; check it with `tar -tzf {archive}`", path=str(archive)
        ) from exc
    return dest


def _write_member(tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path) -> None:
    source = tar.extractfile(member)
    if source is None:
        return
    with source, target.open("wb") as out:
        while chunk := source.read(_CHUNK):
            out.write(chunk)


class _Unpacking(ArchiveLimitError):
    """A limit passed while unpacking, in the words of :func:`unpack_model_archive`."""


def _over(archive: Path, limit: str, value: int, what: str) -> ArchiveLimitError:
    return _Unpacking(
        f"cannot unpack {str(archive)!r}: {what}, over {limit}={value:,}; raise it with "
        f"PYTEST_TRITON_ARCHIVE_LIMITS={limit}=N (K, M, G suffixes; comma-separated)",
        limit=limit,
        value=value,
        path=str(archive),
    )
