"""Model control of a Triton server with ``--model-control-mode=explicit``: load, unload, readiness.

Implemented once over the REST client, for every launcher whose server allows it (a local process, a
container, a server at a URL); a SageMaker endpoint has none (its launcher's ``control`` is None).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import final

from pytest_triton.client.rest import IndexEntry
from pytest_triton.client.rest import TritonRest
from pytest_triton.errors import ModelLoadError
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import wait_models_ready
from pytest_triton.servers.wait import wait_models_unloaded

LogTail = Callable[[], str]
# explains a load failure whose REST answer carries no reason: (model name) -> the reason from the server log
LoadReason = Callable[[str], str]


def _no_log() -> str:
    return ""


@final
class ModelControl:
    """Load, unload and readiness of the models of one server.

    ``log_tail`` adds the server's log to errors where the launcher can read it; ``load_reason`` finds the
    cause of a failed load in that log when Triton's answer only says "failed to poll from model repository".
    ``check_alive`` runs before each wait, so a server that died is named as such instead of timing out.
    """

    def __init__(
        self,
        http_url: str,
        *,
        log_tail: LogTail = _no_log,
        load_reason: LoadReason | None = None,
        check_alive: Callable[[], None] | None = None,
        progress: ProgressCallback | None = None,
        what: str = "Triton",
    ) -> None:
        self.rest = TritonRest(http_url)
        self._log_tail = log_tail
        self._load_reason = load_reason
        self._check_alive = check_alive
        self.progress = progress
        self.what = what

    def ready(self, name: str, version: str = "") -> bool:
        """Whether ``GET /v2/models/NAME[/versions/V]/ready`` answers 200."""
        return self.rest.model_ready(name, version)

    def index(self) -> list[IndexEntry]:
        """Every model of the repository with its state and reason."""
        return self.rest.index()

    def load(self, name: str) -> None:
        """Load (or reload) a model; raises ModelLoadError with Triton's text and the log tail."""
        try:
            self.rest.load(name)
        except ModelLoadError as err:
            reason = err.reason
            if self._load_reason is not None and reason.endswith("failed to poll from model repository"):
                detail = self._load_reason(name)  # the why is only in the log
                reason = f"{reason}: {detail.splitlines()[-1]}" if detail else reason
            raise ModelLoadError(name, reason, log_tail=self._log_tail()) from None

    def unload(self, name: str, *, wait: bool = True, timeout: float = 30.0) -> None:
        """Unload a model; with ``wait`` (the default) return once Triton has finished unloading it.

        Triton itself answers at once and unloads in the background; loading other models while unloads
        are still running crashed Triton 2.51 in our differential test, so waiting is the default.
        """
        self.rest.unload(name)
        if wait:
            self.wait_unloaded([name], timeout=timeout)

    def wait_unloaded(self, models: Sequence[str], *, timeout: float = 30.0) -> None:
        """Wait until none of ``models`` is held by the server any more."""
        if self._check_alive is not None:
            self._check_alive()
        wait_models_unloaded(self.rest, models, timeout=timeout, progress=self.progress, log_tail=self._log_tail)

    def wait_ready(self, models: Sequence[str], timeout: float) -> None:
        """Wait until the server and each of ``models`` are ready, at most ``timeout`` s."""
        if self._check_alive is not None:
            self._check_alive()
        wait_models_ready(
            self.rest, models, timeout=timeout, what=self.what, progress=self.progress, log_tail=self._log_tail
        )
