"""One way to serve a repository, for the pytest fixtures and the ``serve`` command alike.

:class:`ServerFactory` takes a launcher name (see :mod:`pytest_triton.servers.registry`) and the options,
builds that launcher for each repository it is given, starts it and remembers it so that everything it
started can be stopped at once.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import final

from pytest_triton.servers.base import ServeOptions
from pytest_triton.servers.base import TritonLauncher
from pytest_triton.servers.registry import DEFAULT_LAUNCHER
from pytest_triton.servers.registry import launcher_class


@final
class ServerFactory:
    """Builds and starts servers with one launcher; ``servers`` lists every one started, oldest first."""

    def __init__(self, launcher: str = DEFAULT_LAUNCHER, options: ServeOptions | None = None) -> None:
        self.launcher_name = launcher
        self.launcher_type = launcher_class(launcher)  # an unknown name fails here, before anything starts
        self.options = options or ServeOptions()
        self.servers: list[TritonLauncher] = []

    def create(
        self,
        repository: str | Path | None,
        *,
        models: Sequence[str] | None = None,
        sagemaker: bool | None = None,
        env: Mapping[str, str] | None = None,
    ) -> TritonLauncher:
        """A launcher for ``repository``, not started yet (``start()`` starts it)."""
        options = self.options
        if sagemaker is not None or env:
            options = dataclasses.replace(
                options,
                sagemaker=options.sagemaker if sagemaker is None else sagemaker,
                env={**options.env, **(env or {})},
            )
        source = None if repository is None else Path(repository)
        launcher: TritonLauncher = self.launcher_type.from_options(source, options, models=models)
        return launcher

    def start(
        self,
        repository: str | Path | None,
        *,
        models: Sequence[str] | None = None,
        sagemaker: bool | None = None,
        env: Mapping[str, str] | None = None,
    ) -> TritonLauncher:
        """Serve ``repository`` and return its launcher once the server and every model are ready.

        ``models`` (None: every model folder) are loaded at startup; ``sagemaker`` also serves Triton's
        SageMaker frontend (/ping, /invocations); ``env`` adds variables to the server's environment (e.g.
        SAGEMAKER_TRITON_DEFAULT_MODEL_NAME). A server that fails to start is stopped before the error is raised.
        """
        launcher = self.create(repository, models=models, sagemaker=sagemaker, env=env)
        self.servers.append(launcher)  # listed before it starts: its log belongs to the report even if it fails
        launcher.start()
        return launcher

    def stop_all(self) -> None:
        """Stop every server this factory started, newest first; the first error is raised after all stopped."""
        errors: list[BaseException] = []
        for server in reversed(self.servers):
            try:
                server.stop()
            except Exception as exc:  # stop the others before reporting
                errors.append(exc)
        self.servers.clear()
        if errors:
            raise errors[0]
