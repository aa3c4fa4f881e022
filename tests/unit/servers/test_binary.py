"""Finding tritonserver: explicit path, PATH, nvidia-pytriton's bundled binary, and what each needs."""

from __future__ import annotations

import os
import shutil
import sys
import threading
from pathlib import Path

import pytest

from pytest_triton.errors import MissingDependency
from pytest_triton.errors import ServerStartError
from pytest_triton.hardware import gpu_visible
from pytest_triton.servers import binary as binary_mod
from pytest_triton.servers.binary import TritonBinary
from pytest_triton.servers.binary import find_tritonserver
from pytest_triton.servers.binary import list_backends
from pytest_triton.servers.binary import prepare_backend_dir


def _fake_install(root: Path) -> Path:
    """root/bin/tritonserver (executable) and root/backends/{onnxruntime,python,.hidden}."""
    (root / "bin").mkdir(parents=True)
    exe = root / "bin" / "tritonserver"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    for name in ("onnxruntime", "python", ".hidden"):
        (root / "backends" / name).mkdir(parents=True)
    return exe


def _fake_pytriton(root: Path, versions: tuple[str, ...]) -> Path:
    package = root / "pytriton"
    server = package / "tritonserver"
    (server / "backends" / "python").mkdir(parents=True)
    (server / "backends" / "python" / "libtriton_python.so").write_bytes(b"so")
    (server / "backends" / "python" / "triton_python_backend_utils.py").write_text("")
    for version in versions:
        (server / "python_backend_stubs" / version).mkdir(parents=True)
        (server / "python_backend_stubs" / version / "triton_python_backend_stub").write_bytes(
            b"stub" + version.encode()
        )
    return package


def test_explicit_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = _fake_install(tmp_path / "opt")
    found = find_tritonserver(exe)
    assert found.path == exe
    assert not found.bundled
    assert found.backend_directory == tmp_path / "opt" / "backends"
    assert found.backends == frozenset({"onnxruntime", "python"})
    assert found.env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)


def test_explicit_path_must_be_an_executable_file(tmp_path: Path) -> None:
    with pytest.raises(ServerStartError, match="is not an executable file"):
        find_tritonserver(tmp_path / "nope")
    plain = tmp_path / "tritonserver"
    plain.write_text("")
    with pytest.raises(
        ServerStartError,
        match=r"path=.*tritonserver. is not an executable file; fix --triton-setting tritonserver=PATH",
    ):
        find_tritonserver(plain)


def test_path_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = _fake_install(tmp_path / "opt")
    monkeypatch.setenv("PATH", str(exe.parent))
    assert find_tritonserver().path == exe


def test_nothing_found_is_a_missing_dependency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(binary_mod, "pytriton_dir", lambda: None)
    with pytest.raises(MissingDependency, match=r"pip install 'pytest-triton\[serve\]'") as info:
        find_tritonserver()
    assert info.value.package == "nvidia-pytriton"


def test_bundled_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = binary_mod.pytriton_dir()
    if package is None:
        pytest.skip("nvidia-pytriton is not installed")
    monkeypatch.setenv("PATH", str(tmp_path))  # no tritonserver on PATH
    found = find_tritonserver(cache_dir=tmp_path / "cache")
    assert found.bundled
    assert found.path == package / "tritonserver" / "bin" / "tritonserver"
    assert found.backends == frozenset({"python"})
    assert found.backend_directory is not None
    stub = found.backend_directory / "python" / "triton_python_backend_stub"
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert stub.resolve() == (package / "tritonserver" / "python_backend_stubs" / version / stub.name).resolve()
    assert (found.backend_directory / "python" / "libtriton_python.so").is_file()
    assert "nvidia_pytriton.libs" in found.env["LD_LIBRARY_PATH"]
    assert found.env["PATH"].startswith(os.path.dirname(sys.executable) + os.pathsep)
    assert found.environ({"HOME": "/h"})["HOME"] == "/h"
    again = find_tritonserver(cache_dir=tmp_path / "cache")
    assert again.backend_directory == found.backend_directory
    # the bundled binary named explicitly is still treated as bundled (needs the same preparation)
    assert find_tritonserver(found.path, cache_dir=tmp_path / "cache").bundled


def test_backend_dir_is_built_once_and_atomically(tmp_path: Path) -> None:
    package = _fake_pytriton(tmp_path, ("3.10", "3.11"))
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(prepare_backend_dir(package, "3.11", tmp_path / "cache")))
        for _ in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(results)) == 1
    target = results[0]
    assert (target / "python" / "triton_python_backend_stub").read_bytes() == b"stub3.11"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [target.name]  # no staging left


def test_backend_dir_rebuilt_when_stale(tmp_path: Path) -> None:
    package = _fake_pytriton(tmp_path, ("3.11",))
    target = prepare_backend_dir(package, "3.11", tmp_path / "cache")
    (target / "python" / "triton_python_backend_stub").unlink()
    assert prepare_backend_dir(package, "3.11", tmp_path / "cache") == target
    assert (target / "python" / "triton_python_backend_stub").read_bytes() == b"stub3.11"


def test_missing_stub_for_this_python(tmp_path: Path) -> None:
    package = _fake_pytriton(tmp_path, ("3.10", "3.12"))
    with pytest.raises(ServerStartError, match=r"no python backend stub for Python 3.11 \(it has: 3.10, 3.12\)"):
        prepare_backend_dir(package, "3.11", tmp_path / "cache")


def test_list_backends(tmp_path: Path) -> None:
    assert list_backends(None) == frozenset()
    assert list_backends(tmp_path / "missing") == frozenset()
    (tmp_path / "python").mkdir()
    (tmp_path / "notes.txt").write_text("")
    assert list_backends(tmp_path) == frozenset({"python"})


def test_triton_binary_is_frozen(tmp_path: Path) -> None:
    found = TritonBinary(path=tmp_path / "tritonserver", env={"A": "1"})
    with pytest.raises(AttributeError):
        found.path = tmp_path  # type: ignore[misc]
    assert found.environ({})["A"] == "1"


def test_gpu_hidden_by_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert not gpu_visible()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert not gpu_visible()


def test_require_gpu_says_what_it_saw(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_triton.errors import PytestTritonError
    from pytest_triton.hardware import require_gpu

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr("pytest_triton.hardware._listed_gpus", lambda: ())
    with pytest.raises(PytestTritonError, match=r"no GPU is visible .*CUDA_VISIBLE_DEVICES is unset\)"):
        require_gpu()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    with pytest.raises(PytestTritonError, match=r"CUDA_VISIBLE_DEVICES='-1'\)"):
        require_gpu()
    monkeypatch.setattr("pytest_triton.hardware._listed_gpus", lambda: ("NVIDIA H200",))
    with pytest.raises(PytestTritonError):
        require_gpu()  # hidden by the variable even where nvidia-smi lists one
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert require_gpu() == ("NVIDIA H200",)


def test_backend_dirs_of_removed_environments_are_pruned(tmp_path: Path) -> None:
    gone = _fake_pytriton(tmp_path / "gone-env", ("3.11",))
    kept = _fake_pytriton(tmp_path / "kept-env", ("3.11",))
    old = prepare_backend_dir(gone, "3.11", tmp_path / "cache")
    alive = prepare_backend_dir(kept, "3.11", tmp_path / "cache")
    shutil.rmtree(tmp_path / "gone-env")  # the virtual environment was deleted
    third = _fake_pytriton(tmp_path / "new-env", ("3.11",))
    new = prepare_backend_dir(third, "3.11", tmp_path / "cache")
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted([alive.name, new.name])
    assert not old.exists()
