"""A launcher in a page: the example of docs/architecture.md, started on a real tritonserver by its test."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

from pytest_triton.client.rest import TritonRest
from pytest_triton.errors import ConfigError
from pytest_triton.repository.layout import model_folders
from pytest_triton.servers import Prepared
from pytest_triton.servers import ServeOptions
from pytest_triton.servers import find_tritonserver
from pytest_triton.servers.base import ServerBase
from pytest_triton.servers.base import tritonserver_args
from pytest_triton.servers.local import TritonProcess
from pytest_triton.servers.wait import Deadline
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import models_poll
from pytest_triton.servers.wait import wait_until

if TYPE_CHECKING:
    from typing import Self


class PlainLauncher(ServerBase):
    """tritonserver on a python-backend repository as it is: no staged copy, no ONNX adapter."""

    name: ClassVar[str] = "plain"

    def __init__(self, repository: Path, **settings: Any) -> None:
        self.process = TritonProcess("plain tritonserver")
        super().__init__(Path(repository).absolute(), self.process, port_retries=2, **settings)
        self.binary = find_tritonserver()

    @classmethod
    def from_options(cls, repository: Path | None, options: ServeOptions, *, models: Any = None) -> Self:
        if repository is None:
            raise ConfigError("the plain launcher serves a model repository: give its folder")
        return cls(repository, models=models, startup_timeout=options.startup_timeout, progress=options.progress)

    @property
    def backends(self) -> frozenset[str]:
        return self.binary.backends

    @property
    def has_gpu(self) -> bool:
        return False

    def prepare(self, source: Path) -> Prepared:
        self._prepared = Prepared(source, source, tuple(self.models or model_folders(source)))
        return self._prepared

    def _launch(self, prepared: Prepared, attempt: int) -> None:
        ports = self._local_ports()  # free ports on 127.0.0.1; self.urls points at them
        args = tritonserver_args(prepared.folder, prepared.models, ports)
        self.command = [str(self.binary.path), *args, *self.process.binary_flags(self.binary)]
        self.process.spawn(self.command, self.binary.environ(), f"tritonserver-{attempt}.log")

    def _wait_ready(self, prepared: Prepared, deadline: Deadline) -> None:
        rest = TritonRest(self.urls.need("http"), timeout=2.0)

        def check() -> Poll:
            self._check_running()  # ended: its error; a port taken: PortInUse, and start() launches again
            return models_poll(rest, prepared.models)

        wait_until(check, timeout=deadline, progress=self.progress, log_tail=self.log_tail)
