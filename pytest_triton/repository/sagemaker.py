"""Package a model repository as SageMaker's model.tar.gz (model folders at the archive root).

The Triton SageMaker container unpacks the archive into /opt/ml/model and serves it as the
model repository; with several models it needs SAGEMAKER_TRITON_DEFAULT_MODEL_NAME, which is
recorded beside the archive as ``<archive>.env`` (the linter reads it from there).
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

from pytest_triton.errors import ConfigError
from pytest_triton.model_archive import DEFAULT_MODEL_ENV
from pytest_triton.model_archive import sidecar_env
from pytest_triton.repository.layout import model_folders


def _reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # reproducible archives: no owner, no time stamps
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    return info


def package_model_tar(repository: str | Path, archive: str | Path, *, default_model: str | None = None) -> Path:
    """Write ``archive`` from ``repository``; record the default model beside it when given."""
    root = Path(repository)
    target = Path(archive)
    models = model_folders(root)
    if not models:
        raise ConfigError(f"repository {str(root)!r} has no model folders to package")
    if default_model is not None and default_model not in models:
        raise ConfigError(f"default_model={default_model!r} is not a model folder of {root} (models: {models})")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(root.rglob("*")):
            if path.is_symlink():
                raise ConfigError(f"{path} is a link; SageMaker archives must hold plain files")
            tar.add(path, arcname=path.relative_to(root).as_posix(), recursive=False, filter=_reset)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(buffer.getvalue())
    env = sidecar_env(target)
    if default_model is not None:
        env.write_text(f"{DEFAULT_MODEL_ENV}={default_model}\n", encoding="utf-8")
    elif env.exists():
        env.unlink()
    return target
