"""testcontainers' reaper (Ryuk) on, its image not to be had: the error names Ryuk's image and the way round it,
not the server's image (testcontainers starts Ryuk before any container it creates)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_triton.errors import ServerStartError
from pytest_triton.servers.docker.engine import start_ryuk

pytestmark = pytest.mark.xdist_group("docker")


def test_a_ryuk_image_that_cannot_be_had_is_named_as_ryuks(docker_client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from testcontainers.core.config import testcontainers_config
    from testcontainers.core.container import Reaper

    absent = "pytest-triton-absent/ryuk:0.0.0"
    monkeypatch.setattr(testcontainers_config, "ryuk_disabled", False)
    monkeypatch.setattr(testcontainers_config, "ryuk_image", absent)
    monkeypatch.setattr(Reaper, "_instance", None)  # a Ryuk another test started is not this one
    with pytest.raises(ServerStartError) as caught:
        start_ryuk()
    text = str(caught.value)
    assert text.startswith(f"testcontainers' reaper (Ryuk) could not start: its image {absent!r} could not be had")
    assert "TESTCONTAINERS_RYUK_DISABLED=true" in text
