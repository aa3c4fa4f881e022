"""The launcher registry: launcher name → launcher class, the one place a launcher is chosen.

Built-in launchers are named here by import path, so choosing one imports only it (the docker launcher needs
testcontainers, the SageMaker ones boto3). Other packages add launchers through the entry-point group
``pytest_triton.launchers``::

    # pyproject.toml of a package that ships a launcher
    [project.entry-points."pytest_triton.launchers"]
    my-cluster = "my_package.triton:ClusterLauncher"

or, for a launcher defined in a test suite's own conftest.py, by calling :func:`register_launcher`. A
launcher class follows :class:`~pytest_triton.servers.protocol.TritonServer`; ``--triton-launcher NAME``
(pytest) and ``--launcher NAME`` (``python -m pytest_triton serve``) pick it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from pytest_triton.errors import ConfigError

ENTRY_POINT_GROUP = "pytest_triton.launchers"
DEFAULT_LAUNCHER = "local"

_BUILTIN: dict[str, str] = {
    "local": "pytest_triton.servers.local.launcher:LocalLauncher",
    "url": "pytest_triton.servers.url:UrlLauncher",
    "docker": "pytest_triton.servers.docker.launcher:DockerLauncher",
    "sagemaker": "pytest_triton.servers.sagemaker.endpoint:SageMakerLauncher",
    "sagemaker-local": "pytest_triton.servers.sagemaker.local:SageMakerLocalLauncher",
}
_registered: dict[str, type[Any]] = {}


def register_launcher(name: str, launcher: type[Any], *, replace: bool = False) -> None:
    """Make ``launcher`` available as ``name``; registering another class under a taken name needs ``replace``."""
    taken = _registered.get(name)
    if taken is not None and taken is not launcher and not replace:
        raise ConfigError(
            f"launcher name={name!r} is registered already (by {taken.__module__}.{taken.__qualname__}); "
            "pick another name or pass replace=True"
        )
    _registered[name] = launcher


def unregister_launcher(name: str) -> None:
    """Forget a launcher registered with :func:`register_launcher` (built-in names stay)."""
    _registered.pop(name, None)


def _entry_points() -> dict[str, str]:
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def launcher_names() -> list[str]:
    """Every launcher name that can be chosen: built-in, from entry points, registered at run time."""
    return sorted({*_BUILTIN, *_entry_points(), *_registered})


def _load(target: str, name: str) -> type[Any]:
    module_name, _, attribute = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        found: type[Any] = getattr(module, attribute)
    except (ImportError, AttributeError) as err:
        raise ConfigError(f"launcher {name!r} points at {target!r}, which cannot be imported: {err}") from err
    return found


def launcher_class(name: str) -> type[Any]:
    """The launcher class registered as ``name``; ConfigError listing the known names otherwise."""
    if name in _registered:
        return _registered[name]
    target = _BUILTIN.get(name) or _entry_points().get(name)
    if target is None:
        known = ", ".join(launcher_names())
        raise ConfigError(
            f"launcher={name!r} is not a known launcher (known: {known}); a package adds one through the "
            f"{ENTRY_POINT_GROUP!r} entry-point group, a conftest.py with register_launcher()"
        )
    return _load(target, name)


# settings the session gives every launcher, for those that want them (the sagemaker launcher writes its ledger
# beside the report); never an error for a launcher that does not read them
SESSION_SETTINGS = frozenset({"report"})


def check_settings(name: str, settings: Mapping[str, object]) -> None:
    """ConfigError where ``settings`` (None values are not given) has a key launcher ``name`` does not read.

    A launcher lists its keys in a class attribute ``setting_keys`` (key → what it does); one without it (an
    older package's) is not checked. A built-in launcher given no settings is not imported: a session that
    never serves pays nothing for it.
    """
    if name in _BUILTIN and name not in _registered and all(value is None for value in settings.values()):
        return
    keys: Mapping[str, str] | None = getattr(launcher_class(name), "setting_keys", None)
    if keys is None:
        return
    unknown = sorted(
        key for key, value in settings.items() if value is not None and key not in keys and key not in SESSION_SETTINGS
    )
    if unknown:
        known = "; ".join(f"{key}: {what}" for key, what in sorted(keys.items())) or "none"
        raise ConfigError(
            f"setting {unknown[0]}={settings[unknown[0]]!r} is not one the {name!r} launcher reads "
            f"(--triton-setting, ini triton_settings); its settings: {known}"
        )


def end_session(name: str, run: str) -> None:
    """Let launcher ``name`` clean up what session run ``run`` left (its workers' too, even killed ones): its
    ``end_session(run)`` class method, where it has one. The pytest controller calls this once its session ends.
    """
    ending = getattr(launcher_class(name), "end_session", None)
    if ending is not None:
        ending(run)
