"""The launcher registry: built-in names, entry points of other packages, run-time registration."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.servers.factory import ServerFactory
from pytest_triton.servers.local.launcher import LocalLauncher
from pytest_triton.servers.registry import ENTRY_POINT_GROUP
from pytest_triton.servers.registry import launcher_class
from pytest_triton.servers.registry import launcher_names
from pytest_triton.servers.registry import register_launcher
from pytest_triton.servers.registry import unregister_launcher
from pytest_triton.servers.url import UrlLauncher


def test_builtin_launchers() -> None:
    assert {"local", "url"} <= set(launcher_names())
    assert launcher_class("local") is LocalLauncher
    assert launcher_class("url") is UrlLauncher
    assert LocalLauncher.name == "local"
    assert UrlLauncher.name == "url"


def test_unknown_launcher_lists_the_known_ones_and_how_to_add_one() -> None:
    with pytest.raises(
        ConfigError,
        match=r"launcher='nope' is not a known launcher \(known: docker, local, sagemaker, sagemaker-local, url.*\)",
    ) as info:
        launcher_class("nope")
    assert ENTRY_POINT_GROUP in str(info.value)
    with pytest.raises(ConfigError, match="launcher='nope'"):
        ServerFactory("nope")  # the factory refuses before anything starts


class _Toy:
    name = "toy"


def test_register_and_unregister() -> None:
    register_launcher("toy-unit", _Toy)
    try:
        assert launcher_class("toy-unit") is _Toy
        assert "toy-unit" in launcher_names()
        register_launcher("toy-unit", _Toy)  # the same class again is harmless (conftest re-import)
        with pytest.raises(ConfigError, match="registered already"):
            register_launcher("toy-unit", LocalLauncher)
    finally:
        unregister_launcher("toy-unit")
    assert "toy-unit" not in launcher_names()


def test_entry_point_of_another_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package that ships a launcher declares it in the entry-point group; nothing else is needed."""
    (tmp_path / "toy_pkg.py").write_text("class ToyLauncher:\n    name = 'from-entry-point'\n")
    dist = tmp_path / "toy_pkg-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-pkg\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nfrom-entry-point = toy_pkg:ToyLauncher\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "from-entry-point" in launcher_names()
    assert launcher_class("from-entry-point").__name__ == "ToyLauncher"
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nbroken = toy_pkg:Missing\n")
    with pytest.raises(ConfigError, match=r"launcher 'broken' points at 'toy_pkg:Missing', which cannot be imported"):
        launcher_class("broken")
    sys.modules.pop("toy_pkg", None)
