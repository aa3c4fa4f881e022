"""Read a SageMaker model.tar.gz as a stream and lint the repository inside it.

Members are read in one pass, never all at once, and checked before anything is written:
absolute paths, ``..`` components, links and device files are refused with a finding (D606).
What a config check needs (configs, python models, ONNX graphs up to ``max_member_bytes``, small
files) is written into a temporary folder the caller owns; any other member becomes an empty
sparse file of its size, so the layout is what SageMaker would see but the weights are never
written out. Member count and total bytes stop at their limits with a finding (D608).
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from pathlib import PurePosixPath
from typing import IO

from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.lint.context import Reporter
from pytest_triton.lint.context import RepositoryContext
from pytest_triton.lint.limits import describe

# members the rules open (besides config.pbtxt): python models, ONNX graphs, the env sidecar
_READ_SUFFIXES = (".py", ".onnx", ".env", ".txt", ".json")
# any member this small is written out whatever its name (cheap, and rules may look at it)
_SMALL = 64 << 10
_CHUNK = 1 << 20


def _unsafe_reason(member: tarfile.TarInfo) -> str | None:
    name = PurePosixPath(member.name)
    if name.is_absolute():
        return "has an absolute path"
    if ".." in name.parts:
        return "escapes the archive with '..'"
    if member.issym() or member.islnk():
        return f"is a link (to {member.linkname!r})"
    if not (member.isfile() or member.isdir()):
        return "is a device, FIFO or other special file"
    return None


def _wanted(member: tarfile.TarInfo, limit: int) -> bool:
    name = PurePosixPath(member.name).name
    if member.size > limit:
        return False
    return name == CONFIG_FILENAME or name.endswith(_READ_SUFFIXES) or member.size <= _SMALL


def _copy(source: IO[bytes], target: Path, size: int) -> None:
    remaining = size
    with target.open("wb") as out:
        while remaining > 0 and (chunk := source.read(min(_CHUNK, remaining))):
            out.write(chunk)
            remaining -= len(chunk)


def _placeholder(target: Path, size: int) -> None:
    """An empty file of ``size`` bytes that takes no space on disk (a hole)."""
    with target.open("wb") as out:
        out.truncate(size)


def _extract(archive: Path, dest: Path, reporter: Reporter, unextracted: set[Path]) -> bool:
    limits = reporter.limits
    members = 0
    total = 0
    try:
        with tarfile.open(archive, "r|*") as tar:  # a stream: one pass, no member table in memory
            for member in tar:
                members += 1
                total += max(member.size, 0)
                if members > limits.max_archive_members:
                    reporter.add(
                        "D608",
                        archive,
                        f"archive has more than {limits.max_archive_members:,} members; linting stopped at the "
                        f"limit {describe('max_archive_members', limits.max_archive_members)}",
                        "a SageMaker model.tar.gz holds a few model folders",
                    )
                    return False
                if total > limits.max_archive_bytes:
                    reporter.add(
                        "D608",
                        archive,
                        f"archive holds more than {limits.max_archive_bytes:,} bytes (uncompressed, at member "
                        f"{member.name!r}); linting stopped at the limit "
                        f"{describe('max_archive_bytes', limits.max_archive_bytes)}",
                        "check the archive's contents with tar -tvzf; SageMaker unpacks all of it",
                    )
                    return False
                reason = _unsafe_reason(member)
                if reason is not None:
                    reporter.add(
                        "D606",
                        archive,
                        f"member {member.name!r} {reason}; it was not extracted",
                        "build the archive from inside the repository folder with plain files only "
                        "(tar -czf model.tar.gz -C repo .)",
                    )
                    continue
                target = dest / PurePosixPath(member.name)
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                if not _wanted(member, limits.max_member_bytes):
                    _placeholder(target, member.size)
                    unextracted.add(target)
                    if member.size > limits.max_member_bytes:
                        reporter.add(
                            "D609",
                            archive,
                            f"member {member.name!r} is {member.size:,} bytes, over "
                            f"{describe('max_member_bytes', limits.max_member_bytes)}; it is checked by name "
                            "and size only",
                        )
                    continue
                source = tar.extractfile(member)
                if source is not None:
                    with source:
                        _copy(source, target, member.size)
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        reporter.add(
            "D607",
            archive,
            f"cannot read archive: {exc}",
            "check that the file is a complete gzip'ed tar (tar -tzf model.tar.gz)",
        )
        return False
    return True


def lint_tarball(
    archive: Path, workdir: Path, reporter: Reporter, sagemaker_default_model: str | None
) -> RepositoryContext | None:
    """Stream ``archive`` into ``workdir`` and lint it as the repository SageMaker would see."""
    from pytest_triton.lint.runner import lint_repository

    root = workdir / "repository"
    root.mkdir()
    reporter.display_root = root
    reporter.display_prefix = f"{archive}!/"
    unextracted: set[Path] = set()
    if not _extract(archive, root, reporter, unextracted):
        return None
    if (root / CONFIG_FILENAME).exists():
        reporter.add(
            "D601",
            root / CONFIG_FILENAME,
            "config.pbtxt is at the root of the archive: the SageMaker Triton container exits with "
            '"Incorrect directory structure"',
            "put each model in its own folder: model.tar.gz must hold <model>/config.pbtxt and <model>/1/",
            line=1,
            col=1,
        )
    return lint_repository(
        root, reporter, tarball=archive, sagemaker_default_model=sagemaker_default_model, unextracted=unextracted
    )
