"""The offline AWS of the SageMaker tests: moto in server mode on 127.0.0.1, plus the hosting and front-door
doubles of :mod:`.front_door` (the parts of AWS moto does not emulate)."""

from __future__ import annotations

import logging
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("moto.server", reason="the offline SageMaker tests need moto[server] (pip install '.[test]')")
pytest.importorskip("pytriton", reason="the hosting double runs the embedded tritonserver (pip install '.[serve]')")

from moto.server import ThreadedMotoServer

from .front_door import FakeHosting
from .front_door import FrontDoor

REGION = "us-east-1"
ROLE = "arn:aws:iam::123456789012:role/pytest-triton-sagemaker"
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="session")
def moto_url() -> Iterator[str]:
    """moto's server on 127.0.0.1 and a free port (its default binds 0.0.0.0:5000)."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@dataclass
class OfflineAws:
    """moto plus the doubles; ``env`` is what a pytest subprocess needs to use them."""

    moto_url: str
    hosting: FakeHosting
    front_door: FrontDoor
    env: dict[str, str]


@pytest.fixture
def offline_aws(moto_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[OfflineAws]:
    """A clean moto, boto3 pointed at it (runtime at the front door), fake credentials, no proxy."""
    _NO_PROXY.open(urllib.request.Request(f"{moto_url}/moto-api/reset", data=b"", method="POST")).close()
    hosting = FakeHosting(moto_url, REGION, tmp_path / "hosting")
    (tmp_path / "hosting").mkdir()
    hosting.install(monkeypatch)
    door = FrontDoor(hosting).start()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
        "AWS_ENDPOINT_URL": moto_url,
        "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME": door.url,
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
        "PYTEST_TRITON_SAGEMAKER_ROLE": ROLE,
        "PYTEST_TRITON_STATE_DIR": str(tmp_path / "state"),  # the --cloud ledger files, not the user's home
    }
    for name in ("AWS_PROFILE", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        yield OfflineAws(moto_url, hosting, door, env)
    finally:
        door.stop()
        hosting.stop_all()
