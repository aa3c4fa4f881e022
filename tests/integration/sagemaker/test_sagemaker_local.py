"""sagemaker-local: a model.tar.gz served as the SageMaker Triton container's serve script serves it."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pytriton", reason="the embedded tritonserver comes from nvidia-pytriton (pip install '.[serve]')")

from pytest_triton.client.rest import fetch_text
from pytest_triton.errors import ConfigError
from pytest_triton.errors import InferenceError
from pytest_triton.errors import ModelLoadError
from pytest_triton.errors import ServerError
from pytest_triton.repository.sagemaker import package_model_tar
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.sagemaker.local import SageMakerLocalLauncher

from .repos import FAILING_INIT
from .repos import REFUSES_NEGATIVE
from .repos import add_repository

pytestmark = pytest.mark.xdist_group("embedded-triton")

A = np.arange(8, dtype=np.float32).reshape(2, 4)
B = np.ones((2, 4), dtype=np.float32)


def _archive(tmp_path: Path, *, model_py: str | None = None, default: str | None = None) -> Path:
    repo = add_repository(tmp_path / "repo", model_py=model_py)
    return package_model_tar(repo, tmp_path / "model.tar.gz", default_model=default)


@pytest.mark.parametrize("binary", [True, False], ids=["binary+json", "json"])
def test_archive_is_served_on_invocations_only(tmp_path: Path, binary: bool) -> None:
    launcher = SageMakerLocalLauncher.from_options(_archive(tmp_path), ServeOptions(staging=tmp_path / "work"))
    with launcher:
        urls = launcher.urls
        assert urls.http is None
        assert urls.grpc is None
        assert urls.metrics is None
        assert urls.sagemaker is not None
        assert launcher.control is None
        assert launcher.command[1:4] == [
            "--allow-sagemaker=true",
            "--allow-http=false",
            "--model-control-mode=explicit",
        ]
        assert "--load-model=python_add" in launcher.command
        prepared = launcher.prepared
        assert prepared is not None
        assert prepared.models == ("python_add",)
        assert any("No SAGEMAKER_TRITON_DEFAULT_MODEL_NAME provided" in note for note in prepared.notes)
        fetch_text(f"{urls.sagemaker}/ping", timeout=5)  # raises unless 200
        out = launcher.transport("sagemaker", binary=binary).infer("python_add", {"A": A, "B": B}, ["SUM"])
        np.testing.assert_array_equal(out["SUM"], A + B)
    assert launcher.exit_status() is None  # stopped by us, not ended on its own
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())


def test_sidecar_default_model_and_grpc_from_variables(tmp_path: Path) -> None:
    archive = _archive(tmp_path, default="python_add")
    launcher = SageMakerLocalLauncher(archive, env={"SAGEMAKER_TRITON_ALLOW_GRPC": "true"}, progress=None)
    with launcher:
        assert launcher.plan is not None
        assert launcher.plan.warnings == ()
        assert launcher.urls.grpc is not None  # the variable turned gRPC on, on a port chosen here
        assert launcher.urls.http is None


def test_container_error_reaches_the_client(tmp_path: Path) -> None:
    with SageMakerLocalLauncher(_archive(tmp_path, model_py=REFUSES_NEGATIVE), progress=None) as launcher:
        transport = launcher.transport()
        with pytest.raises(InferenceError, match="A must not be negative"):
            transport.infer("python_add", {"A": -A - 1, "B": B}, ["SUM"])
        np.testing.assert_array_equal(transport.infer("python_add", {"A": A, "B": B}, ["SUM"])["SUM"], A + B)


def test_model_that_cannot_load_is_a_load_error_with_triton_s_reason(tmp_path: Path) -> None:
    launcher = SageMakerLocalLauncher(_archive(tmp_path, model_py=FAILING_INIT), progress=None)
    with pytest.raises(ModelLoadError, match="weights not found") as info:
        launcher.start()
    assert "python_add" in str(info.value)
    assert launcher.log_tail()  # the container's log is kept for the report


def test_several_models_without_a_default_are_refused_as_the_container_does(tmp_path: Path) -> None:
    repo = add_repository(tmp_path / "repo")
    add_repository(repo, name="python_add_too")
    archive = package_model_tar(repo, tmp_path / "model.tar.gz")
    with pytest.raises(ConfigError, match="More than 1 model directory found"):
        SageMakerLocalLauncher(archive, progress=None).start()


def test_config_at_the_archive_root_is_refused(tmp_path: Path) -> None:
    model = add_repository(tmp_path / "repo") / "python_add"
    archive = tmp_path / "flat.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(model, arcname=".")
    with pytest.raises(ConfigError, match="Incorrect directory structure"):
        SageMakerLocalLauncher(archive, progress=None).start()


def test_archive_with_a_link_escaping_it_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("python_add/1/model.py")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(ConfigError, match="cannot unpack"):
        SageMakerLocalLauncher(archive, progress=None).start()


def test_urls_before_start_and_stop_twice(tmp_path: Path) -> None:
    launcher = SageMakerLocalLauncher(_archive(tmp_path), progress=None)
    with pytest.raises(ServerError, match="not started"):
        _ = launcher.urls
    launcher.stop()
    launcher.stop()


def test_ping_fails_once_stopped(tmp_path: Path) -> None:
    with SageMakerLocalLauncher(_archive(tmp_path), progress=None) as launcher:
        ping = f"{launcher.urls.sagemaker}/ping"
    with pytest.raises(ServerError, match="failed"):
        fetch_text(ping, timeout=2)
