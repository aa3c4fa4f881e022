"""Read a SageMaker model.tar.gz safely and lint the repository inside it.

Members are checked before anything is written: absolute paths, ``..`` components, links and
device files are refused with a finding (D606) and never extracted; everything else lands
inside a temporary folder the caller owns.
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from pathlib import PurePosixPath

from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.lint.context import Reporter
from pytest_triton.lint.context import RepositoryContext

# a model.tar.gz bigger than this is not a lint target (ONNX weights are skipped anyway)
_MAX_MEMBERS = 100_000


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


def _extract(archive: Path, dest: Path, reporter: Reporter) -> bool:
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            if len(members) > _MAX_MEMBERS:
                reporter.add("D607", archive, f"archive has {len(members)} members (limit {_MAX_MEMBERS})")
                return False
            for member in members:
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
                source = tar.extractfile(member)
                if source is not None:
                    with source, target.open("wb") as out:
                        while chunk := source.read(1 << 20):
                            out.write(chunk)
    except (tarfile.TarError, OSError, EOFError) as exc:
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
    """Extract ``archive`` under ``workdir`` and lint it as the repository SageMaker would see."""
    from pytest_triton.lint.runner import lint_repository

    root = workdir / "repository"
    root.mkdir()
    reporter.display_root = root
    reporter.display_prefix = f"{archive}!/"
    if not _extract(archive, root, reporter):
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
    return lint_repository(root, reporter, tarball=archive, sagemaker_default_model=sagemaker_default_model)
