"""SageMaker's model.tar.gz, as every reader of it meets it: the default-model variable, its sidecar, unpacking.

The Triton SageMaker container unpacks the archive into /opt/ml/model and serves it as the model repository;
with several models it needs SAGEMAKER_TRITON_DEFAULT_MODEL_NAME, recorded beside the archive as
``<archive>.env``. The linter, the packager, sagemaker-local and ``--endpoint`` all read these facts from here.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from pytest_triton.errors import ConfigError

DEFAULT_MODEL_ENV = "SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"


def sidecar_env(archive: Path) -> Path:
    """Where the container environment of a model.tar.gz is recorded: ``<archive>.env``."""
    return archive.with_name(archive.name + ".env")


def read_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines (``#`` comments, optional quotes, ``export``), as written beside a model.tar.gz."""
    values: dict[str, str] = {}
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        values[key.strip().removeprefix("export ").strip()] = value.strip().strip("'\"")
    return values


def unpack_model_archive(archive: Path, dest: Path) -> Path:
    """Unpack a model.tar.gz into ``dest`` as SageMaker does into /opt/ml/model (links and escapes refused)."""
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ConfigError(
            f"cannot unpack {str(archive)!r}: {exc}; check it with `tar -tzf {archive}`", path=str(archive)
        ) from exc
    return dest
