"""What a server in its private ``/tmp`` still sees: everything a tritonserver install and the python stub read."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_triton.servers.sandbox import kept_paths


def test_the_whole_install_of_the_binary_stays_visible(tmp_path: Path) -> None:
    # the backend folder links into tritonserver/backends and python_backend_stubs, beside bin/: a package
    # installed under /tmp (pip install --target /tmp/site, a venv in a mktemp -d folder) must keep them
    binary = "/tmp/site/pytriton/tritonserver/bin/tritonserver"
    kept = kept_paths([binary, "--model-repository=/srv/repo"], {}, tmp_path)
    assert "/tmp/site/pytriton/tritonserver" in kept
    assert "/srv/repo" in kept


def test_the_interpreters_import_path_stays_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the stub imports what the test process imports (numpy, onnxruntime): a .pth entry outside sys.prefix too
    monkeypatch.setattr(sys, "path", [*sys.path, "/tmp/site-from-a-pth"])
    kept = kept_paths(["/opt/tritonserver/bin/tritonserver"], {}, tmp_path)
    assert "/tmp/site-from-a-pth" in kept


def test_a_path_the_caller_hands_the_models_in_a_variable_stays_visible(tmp_path: Path) -> None:
    # a file a model will write (PYTEST_TRITON_ADAPTER_TIMINGS=/tmp/.../timings.txt): its folder stays visible
    existing = tmp_path / "samples.npz"
    existing.write_bytes(b"")
    env = {"WRITE_HERE": str(tmp_path / "later" / "timings.txt"), "READ_THIS": str(existing), "NAME": "not/a/path"}
    kept = kept_paths(["/opt/tritonserver/bin/tritonserver"], env, tmp_path / "work")
    assert str(tmp_path / "later") in kept
    assert str(existing) in kept
    assert "not/a/path" not in kept
