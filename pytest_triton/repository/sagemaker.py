"""Package a model repository as SageMaker's model.tar.gz (model folders at the archive root).

The Triton SageMaker container unpacks the archive into /opt/ml/model and serves it as the model
repository; with several models it needs SAGEMAKER_TRITON_DEFAULT_MODEL_NAME, which is recorded beside
the archive as ``<archive>.env`` (the linter reads it from there).

What goes in: every plain file and folder under the repository, streamed straight into the gzip file
(memory stays flat whatever the weights weigh), written under a temporary name and renamed once complete.
What stays out: anything hidden (a name starting with ``.``: ``.git/``, ``.env``, editor and notebook
folders), ``__pycache__``, and the folder sidecar ``sagemaker.env``; a link anywhere is refused.
"""

from __future__ import annotations

import gzip
import os
import tarfile
from pathlib import Path

from pytest_triton.archive.model_tar import DEFAULT_MODEL_ENV
from pytest_triton.archive.model_tar import FOLDER_SIDECAR
from pytest_triton.archive.model_tar import sidecar_env
from pytest_triton.errors import ConfigError
from pytest_triton.repository.layout import model_folders


def _reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # reproducible archives: no owner, no time stamps
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def packaged_paths(root: Path) -> list[Path]:
    """The paths of ``root`` that go into its model.tar.gz, sorted (see the module docstring)."""
    chosen: list[Path] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for name in dirs + sorted(files):
            path = here / name
            if name.startswith(".") or (here == root and name == FOLDER_SIDECAR):
                continue
            if path.is_symlink():
                raise ConfigError(f"{path} is a link; SageMaker archives must hold plain files")
            chosen.append(path)
    return sorted(chosen)


def package_model_tar(repository: str | Path, archive: str | Path, *, default_model: str | None = None) -> Path:
    """Write ``archive`` from ``repository``; record the default model beside it when given."""
    root = Path(repository)
    target = Path(archive)
    models = model_folders(root)
    if not models:
        raise ConfigError(f"repository {str(root)!r} has no model folders to package")
    if default_model is not None and default_model not in models:
        raise ConfigError(f"default_model={default_model!r} is not a model folder of {root} (models: {models})")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    try:
        with (
            partial.open("wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz,
            tarfile.open(fileobj=gz, mode="w") as tar,
        ):
            for path in packaged_paths(root):
                tar.add(path, arcname=path.relative_to(root).as_posix(), recursive=False, filter=_reset)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    env = sidecar_env(target)
    if default_model is not None:
        env.write_text(f"{DEFAULT_MODEL_ENV}={default_model}\n", encoding="utf-8")
    elif env.exists():
        env.unlink()
    return target
