"""One way to serve a repository, for the pytest fixtures, the contracts and the ``serve`` command alike.

:class:`ServerFactory` takes a launcher name (see :mod:`pytest_triton.servers.registry`) and the options,
builds that launcher for each repository it is given, starts it and remembers it so that everything it
started can be stopped at once. The ``triton_server_factory`` fixture is one of these, with the session's
bookkeeping on top (:class:`pytest_triton.plugin.server_factory.TritonServerFactory`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.protocol import TritonServer
from pytest_triton.servers.registry import DEFAULT_LAUNCHER
from pytest_triton.servers.registry import launcher_class


class ServerFactory:
    """Builds and starts servers with one launcher; ``servers`` lists every one started, oldest first.

    ``launcher`` is the launcher's registry name, ``launcher_type`` its class (whose class attributes say
    what it serves: ``serves_one_model``, ``runs_here``, ``needs_repository``).
    """

    def __init__(self, launcher: str = DEFAULT_LAUNCHER, options: ServeOptions | None = None) -> None:
        self.launcher = launcher
        self.launcher_type: type[Any] = launcher_class(launcher)  # an unknown name fails here, before anything starts
        self.options = options or ServeOptions()
        self.servers: list[TritonServer] = []

    @property
    def serves_existing(self) -> bool:
        """Whether the launcher was pointed at a server that exists already (``--triton-url``, ``--cloud
        --endpoint NAME``): the session's server then needs no repository (an endpoint's comes from its model)."""
        needs_repository = getattr(self.launcher_type, "needs_repository", None)
        return needs_repository is not None and not needs_repository(self.options)

    @property
    def serves_one_model(self) -> bool:
        """Whether the launcher's server serves only a default model (a SageMaker endpoint): then a server is
        made per model, and that model is named when it starts."""
        return bool(getattr(self.launcher_type, "serves_one_model", False))

    def create(
        self,
        repository: str | Path | None,
        *,
        models: Sequence[str] | None = None,
        sagemaker: bool | None = None,
        env: Mapping[str, str] | None = None,
    ) -> TritonServer:
        """A server for ``repository``, not started yet (``start()`` starts it)."""
        options = self.options
        if sagemaker is not None or env:
            options = dataclasses.replace(
                options,
                sagemaker=options.sagemaker if sagemaker is None else sagemaker,
                env={**options.env, **(env or {})},
            )
        source = None if repository is None else Path(repository)
        server: TritonServer = self.launcher_type.from_options(source, options, models=models)
        return server

    def start(
        self,
        repository: str | Path | None,
        *,
        models: Sequence[str] | None = None,
        sagemaker: bool | None = None,
        env: Mapping[str, str] | None = None,
    ) -> TritonServer:
        """Serve ``repository`` and return its server once it and every model are ready.

        ``models`` (None: every model folder) are loaded at startup; ``sagemaker`` also serves Triton's
        SageMaker frontend (/ping, /invocations); ``env`` adds variables to the server's environment (e.g.
        SAGEMAKER_TRITON_DEFAULT_MODEL_NAME). A server that fails to start is stopped before the error is raised.
        """
        server = self.create(repository, models=models, sagemaker=sagemaker, env=env)
        self.servers.append(server)  # listed before it starts: its log belongs to the report even if it fails
        self._starting(server)
        try:
            server.start()
        finally:
            self._started(server)
        return server

    def _starting(self, server: TritonServer) -> None:
        """Called before ``server`` starts (a subclass keeps its own records)."""

    def _started(self, server: TritonServer) -> None:
        """Called once ``server`` is ready or has failed to start."""

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
