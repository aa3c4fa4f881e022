"""Model control behind Triton's restricted-API options, on the embedded tritonserver: a binary without those
options is started without them; sagemaker-local keys its gRPC model control. (The local launcher's key and the
url launcher's ``control_header``: test_local_serving.py.)"""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path

import pytest

from pytest_triton.client.rest import TritonRest
from pytest_triton.client.transports import grpc_client
from pytest_triton.servers import LocalLauncher
from pytest_triton.servers import find_tritonserver
from pytest_triton.servers.sagemaker.local import SageMakerLocalLauncher

from .local_triton_helpers import add_model
from .local_triton_helpers import skip_without_embedded_triton

skip_without_embedded_triton()


def _binary_without_restricted_api(folder: Path) -> Path:
    """A stand-in for an older tritonserver (none can be installed here): the real binary, whose ``--help``
    leaves out the restricted-API options."""
    real = find_tritonserver().path
    script = folder / "tritonserver"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --help ]; then "{real}" --help 2>&1 | grep -v restricted; exit 1; fi\n'
        f'exec "{real}" "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_a_binary_without_the_options_serves_with_open_model_control(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    add_model(repository)
    binary = dataclasses.replace(find_tritonserver(), path=_binary_without_restricted_api(tmp_path))
    with LocalLauncher(repository, binary=binary, startup_timeout=120, progress=None) as launcher:
        assert launcher.control_headers == {}
        assert not [arg for arg in launcher.command if "restricted" in arg]
        launcher.control.unload("add")
        launcher.control.load("add")
        assert launcher.control.ready("add")


def test_sagemaker_local_with_grpc_keeps_its_model_control_behind_the_key(tmp_path: Path) -> None:
    # the serve script runs Triton with explicit model control: SAGEMAKER_TRITON_ALLOW_GRPC opens it over gRPC
    from tritonclient.utils import InferenceServerException

    add_model(tmp_path / "repo")
    env = {"SAGEMAKER_TRITON_ALLOW_GRPC": "true"}
    with SageMakerLocalLauncher(tmp_path / "repo", env=env, staging=tmp_path, progress=None) as launcher:
        assert set(launcher.control_headers) == {"pytest-triton-control", "triton-grpc-protocol-pytest-triton-control"}
        client = grpc_client(launcher.urls.need("grpc"))
        try:
            with pytest.raises(InferenceServerException, match="restricted"):
                client.unload_model("add")
            assert client.is_model_ready("add")
            assert [m.name for m in client.get_model_repository_index(headers=launcher.control_headers).models] == [
                "add"
            ]
        finally:
            client.close()


def test_sagemaker_local_without_grpc_has_no_key(tmp_path: Path) -> None:
    add_model(tmp_path / "repo")
    with SageMakerLocalLauncher(tmp_path / "repo", staging=tmp_path, progress=None) as launcher:
        assert launcher.control_headers == {}
        assert not [arg for arg in launcher.command if "restricted" in arg]


def test_a_rule_the_user_gives_replaces_ours_and_its_key_opens_control(tmp_path: Path) -> None:
    # Triton rejects a second rule for the same API: the user's own stands, and the plugin sends its key
    repository = tmp_path / "repo"
    add_model(repository)
    own = ["--http-restricted-api=model-repository:admin=s3cret"]
    with LocalLauncher(repository, extra_args=own, startup_timeout=120, progress=None) as launcher:
        assert launcher.control_headers == {"admin": "s3cret", "triton-grpc-protocol-admin": "s3cret"}
        assert [arg for arg in launcher.command if "restricted" in arg] == own
        launcher.control.unload("add")
        launcher.control.load("add")
        status, _ = TritonRest(launcher.urls.need("http")).request("POST", "/v2/repository/index", {})
        assert status == 403
