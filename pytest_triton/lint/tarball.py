"""Read a SageMaker model.tar.gz as a stream and lint the repository inside it.

Members are read in one pass, never all at once, through the shared guarded reader
(:mod:`pytest_triton.archive.guarded`), and checked before anything is written: absolute paths, ``..``
components, links and device files are refused with a finding (D606). Only what rules open as files is
written into a temporary folder the caller owns: config.pbtxt and python models, each up to
``max_member_bytes`` and up to ``max_written_bytes`` in all (past it, D611). An ONNX model's graph inputs and
outputs are read from the stream as it passes (its weights are read past, never written or held). Every
other member becomes an empty sparse file of its size, so the layout is what SageMaker would see. Member
count, total bytes and a pax or GNU long-name header over ``max_archive_header_bytes`` stop the read with a
finding (D608). Hidden members (``.git/``, ``.env``) are uploaded and unpacked by SageMaker like any other,
and are reported (D610)."""

from __future__ import annotations

import tarfile
from pathlib import Path
from pathlib import PurePosixPath
from typing import IO

from pytest_triton.archive.guarded import ArchiveLimitError
from pytest_triton.archive.guarded import is_hidden
from pytest_triton.archive.guarded import open_guarded
from pytest_triton.archive.guarded import unsafe_reason
from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.errors import OnnxReadError
from pytest_triton.lint.context import Reporter
from pytest_triton.lint.context import RepositoryContext
from pytest_triton.lint.limits import describe
from pytest_triton.onnx_io import OnnxIO
from pytest_triton.onnx_io import read_onnx_io_stream

_CHUNK = 1 << 20


def _written_out(member: tarfile.TarInfo) -> bool:
    """The members rules open as files: configs, and python models (searched for auto_complete_config)."""
    name = PurePosixPath(member.name).name
    return name == CONFIG_FILENAME or name.endswith(".py")


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


def _onnx_io(tar: tarfile.TarFile, member: tarfile.TarInfo) -> OnnxIO | OnnxReadError:
    source = tar.extractfile(member)
    if source is None:
        return OnnxReadError("the archive member is not a regular file")
    with source:
        try:
            return read_onnx_io_stream(source, member.size)
        except OnnxReadError as exc:
            return exc


def _extract(
    archive: Path, dest: Path, reporter: Reporter, unextracted: set[Path], onnx_read: dict[Path, OnnxIO | OnnxReadError]
) -> bool:
    limits = reporter.limits
    members = 0
    total = 0
    written = 0
    hidden: list[str] = []
    try:
        with open_guarded(str(archive), limits.archive_limits()) as tar:  # one pass, headers checked first
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
                if is_hidden(member.name):
                    hidden.append(member.name)
                reason = unsafe_reason(member)
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
                if member.name.endswith(".onnx"):  # its graph I/O, read from the stream; the weights never written
                    onnx_read[target] = _onnx_io(tar, member)
                if not _written_out(member) or member.size > limits.max_member_bytes:
                    _placeholder(target, member.size)
                    unextracted.add(target)
                    if member.size > limits.max_member_bytes and _written_out(member):
                        reporter.add(
                            "D609",
                            archive,
                            f"member {member.name!r} is {member.size:,} bytes, over "
                            f"{describe('max_member_bytes', limits.max_member_bytes)}; it is checked by name "
                            "and size only",
                        )
                    continue
                if written + member.size > limits.max_written_bytes:
                    _placeholder(target, member.size)
                    unextracted.add(target)
                    if written <= limits.max_written_bytes:  # one finding, at the first member past the budget
                        written = limits.max_written_bytes + 1
                        reporter.add(
                            "D611",
                            archive,
                            f"writing member {member.name!r} ({member.size:,} bytes) would pass "
                            f"{describe('max_written_bytes', limits.max_written_bytes)}; it and the members after "
                            "it are checked by name and size only",
                        )
                    continue
                source = tar.extractfile(member)
                if source is not None:
                    with source:
                        _copy(source, target, member.size)
                    written += member.size
    except ArchiveLimitError as exc:
        reporter.add(
            "D608",
            archive,
            f"{exc.reason}; linting stopped at the limit {describe(_LINT_NAME[exc.limit], exc.value)}",
            "a real model.tar.gz's headers hold a file name: this archive was built to exhaust memory, or is damaged",
        )
        return False
    except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
        reporter.add(
            "D607",
            archive,
            f"cannot read archive: {exc}",
            "check that the file is a complete gzip'ed tar (tar -tzf model.tar.gz)",
        )
        return False
    finally:
        _report_hidden(archive, hidden, reporter)
    return True


def _report_hidden(archive: Path, hidden: list[str], reporter: Reporter) -> None:
    if not hidden:
        return
    shown = ", ".join(repr(name) for name in hidden[:5]) + (f" and {len(hidden) - 5} more" if len(hidden) > 5 else "")
    reporter.add(
        "D610",
        archive,
        f"archive holds {len(hidden)} hidden file(s) or folder(s): {shown}; SageMaker unpacks them into "
        "/opt/ml/model like any other",
        "hidden files are where secrets (.env) and history (.git/) live: rebuild the archive without them "
        "(pytest-triton's packaging leaves them out)",
    )


# the linter's names of the shared reader's limits (the flag a finding names)
_LINT_NAME = {
    "max_members": "max_archive_members",
    "max_total_bytes": "max_archive_bytes",
    "max_header_bytes": "max_archive_header_bytes",
    "max_written_bytes": "max_written_bytes",
}


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
    onnx_read: dict[Path, OnnxIO | OnnxReadError] = {}
    if not _extract(archive, root, reporter, unextracted, onnx_read):
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
        root,
        reporter,
        tarball=archive,
        sagemaker_default_model=sagemaker_default_model,
        unextracted=unextracted,
        onnx_read=onnx_read,
    )
