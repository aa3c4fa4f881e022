"""sagemaker-local in a container: the archive ``--cloud`` uploads, served in the image as SageMaker runs it.

SageMaker unpacks model.tar.gz into ``/opt/ml/model`` and starts the image with ``serve``. With ``image=``
the sagemaker-local launcher does the same in a real container of the stand-in image: the tests compare
its answers with the embedded sagemaker-local's on the same archive, and check the mount, the environment
and the command. The stand-in has no serve script, so it is started with the command the script would run;
an image that has one (NGC's ``/usr/bin/serve``) is started with ``serve``, shown with a derived image
whose script says it ran and then starts Triton.
"""

from __future__ import annotations

import io
import json
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray

from pytest_triton.client.rest import fetch_text
from pytest_triton.errors import ModelLoadError
from pytest_triton.repository.sagemaker import package_model_tar
from pytest_triton.servers.docker.container import TritonContainer
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.sagemaker.local import SageMakerLocalLauncher

from ..sagemaker.repos import FAILING_INIT
from ..sagemaker.repos import add_repository

pytestmark = [pytest.mark.xdist_group("docker"), pytest.mark.usefixtures("no_leftovers")]

ROOT = Path(__file__).resolve().parents[3]
ENSEMBLE_REPOSITORY = ROOT / "model_repos" / "scenario07" / "ensemble"  # committed; the main job checks it
SAMPLES = ROOT / "model_repos" / "samples" / "nli_samples.jsonl"

# a serve script of our own for the derived image: it says that it ran, then starts Triton on the port
# SageMaker gives (enough to show that the launcher hands over to the image's script)
SERVE_SCRIPT = """#!/bin/sh
echo "serve script of the test image: default model $SAGEMAKER_TRITON_DEFAULT_MODEL_NAME" >&2
exec tritonserver --allow-sagemaker=true --allow-http=false --model-control-mode=explicit \\
  --model-repository=/opt/ml/model/ --load-model="$SAGEMAKER_TRITON_DEFAULT_MODEL_NAME" \\
  --sagemaker-port="$SAGEMAKER_BIND_TO_PORT"
"""


def _pairs(count: int = 4) -> dict[str, NDArray[np.object_]]:
    rows = [json.loads(line) for line in SAMPLES.read_text().splitlines()[:count]]
    return {
        "PREMISE": np.array([[row["premise"].encode()] for row in rows], dtype=object),
        "HYPOTHESIS": np.array([[row["hypothesis"].encode()] for row in rows], dtype=object),
    }


@pytest.fixture(scope="module")
def ensemble_archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Scenario 07's ensemble packaged as ``--cloud`` uploads it (the main job's ``dist/ensemble.tar.gz``).

    Built here from the committed repository, so the test needs nothing run before it.
    """
    target = tmp_path_factory.mktemp("dist") / "ensemble.tar.gz"
    return package_model_tar(ENSEMBLE_REPOSITORY, target, default_model="ensemble_mdeberta")


def test_the_uploaded_ensemble_archive_answers_in_the_container_as_on_the_embedded_server(
    standin_image: str, ensemble_archive: Path, tmp_path: Path
) -> None:
    options = ServeOptions(settings={"image": standin_image, "pull": "never"}, progress=None)
    inputs = _pairs()
    with SageMakerLocalLauncher.from_options(ensemble_archive, options) as launcher:
        assert launcher.container is not None
        assert launcher.command[0] == "tritonserver"  # the stand-in has no serve script
        assert "--model-repository=/opt/ml/model/" in launcher.command
        assert "--load-model=ensemble_mdeberta" in launcher.command
        assert launcher.urls.http is None
        fetch_text(f"{launcher.urls.sagemaker}/ping", timeout=5)  # raises unless 200
        attrs = launcher.container.attrs()
        mounts = {m["Destination"]: m for m in attrs["Mounts"]}
        assert mounts["/opt/ml/model"]["RW"] is False
        assert "SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=ensemble_mdeberta" in attrs["Config"]["Env"]
        # Triton's SageMaker frontend binds every interface: where the daemon has a bridge network the container
        # gets one and its port reaches the host on 127.0.0.1 only; a daemon without one (dockerd --bridge=none)
        # leaves the host network, and the notes say what that exposes
        prepared = launcher.prepared
        assert prepared is not None
        if launcher.container.client().networks.list(names=["bridge"]):
            assert attrs["HostConfig"]["NetworkMode"] == "bridge"
            bound = attrs["NetworkSettings"]["Ports"]
            sagemaker_port = str(launcher.urls.sagemaker).rsplit(":", 1)[1]
            assert {b["HostIp"] for b in bound[f"{sagemaker_port}/tcp"]} == {"127.0.0.1"}
            assert all(b["HostIp"] == "127.0.0.1" for bindings in bound.values() for b in bindings or [])
        else:
            assert attrs["HostConfig"]["NetworkMode"] == "host"
            assert any("no bridge network" in note for note in launcher.notes), launcher.notes
        assert prepared is not None
        assert any("no serve script on its PATH" in note for note in prepared.notes)
        in_container = launcher.transport().infer("ensemble_mdeberta", inputs, ["LABEL", "LOGITS"])
    with SageMakerLocalLauncher(ensemble_archive, staging=tmp_path, progress=None) as embedded:
        here = embedded.transport().infer("ensemble_mdeberta", inputs, ["LABEL", "LOGITS"])
    print(f"labels in the container: {[label.decode() for label in in_container['LABEL'].ravel()]}")
    np.testing.assert_array_equal(in_container["LABEL"], here["LABEL"])
    # two builds of ONNX Runtime (the image's and this machine's) on the same fp32 model
    np.testing.assert_allclose(in_container["LOGITS"], here["LOGITS"], rtol=0, atol=1e-4)


@pytest.fixture
def image_with_serve_script(standin_image: str, docker_client: Any) -> Iterator[str]:
    """The stand-in image plus an executable /usr/bin/serve (removed after the test)."""
    data = SERVE_SCRIPT.encode()
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        info = tarfile.TarInfo("serve")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    container = docker_client.containers.create(standin_image, ["true"], network_mode="none")
    try:
        container.put_archive("/usr/bin", archive.getvalue())
        tag = f"pytest-triton-serve-test:{uuid.uuid4().hex[:8]}"
        container.commit(repository=tag.split(":")[0], tag=tag.split(":")[1])
    finally:
        container.remove(force=True)
    yield tag
    docker_client.images.remove(tag, force=True)


def test_an_image_with_a_serve_script_is_started_by_it(image_with_serve_script: str, tmp_path: Path) -> None:
    repo = add_repository(tmp_path / "repo")
    archive = package_model_tar(repo, tmp_path / "model.tar.gz")
    container = TritonContainer(image_with_serve_script, pull="never")
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    with SageMakerLocalLauncher(archive, image=container, progress=None) as launcher:
        assert launcher.command == ["serve"]
        out = launcher.transport().infer("python_add", {"A": a, "B": a}, ["SUM"])
        np.testing.assert_array_equal(out["SUM"], a + a)
        assert "serve script of the test image: default model python_add" in launcher.logs()
        prepared = launcher.prepared
        assert prepared is not None
        assert any("started by the image's own serve script (/usr/bin/serve)" in note for note in prepared.notes)


def test_a_model_that_cannot_load_in_the_container_is_a_load_error(standin_image: str, tmp_path: Path) -> None:
    repo = add_repository(tmp_path / "repo", model_py=FAILING_INIT)
    archive = package_model_tar(repo, tmp_path / "model.tar.gz")
    launcher = SageMakerLocalLauncher(archive, image=TritonContainer(standin_image, pull="never"), progress=None)
    with pytest.raises(ModelLoadError, match="weights not found") as info:
        launcher.start()
    assert info.value.model == "python_add"
    assert launcher.container is not None
    assert launcher.container.container_id is None  # removed after the failed start
    assert "weights not found" in launcher.logs()  # the container's log is kept for the report
