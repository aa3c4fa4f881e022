"""Model control of a Triton server with ``--model-control-mode=explicit``: load, unload, readiness.

Implemented once over the REST client, for every launcher whose server allows it (a local process, a
container, a server at a URL); a SageMaker endpoint has none (its launcher's ``control`` is None).

A server this package starts keeps model control (Triton's ``model-repository`` API: index, load, unload)
behind Triton's restricted-API options where its binary has them (Triton 2.51 does:
``--http-restricted-api`` and ``--grpc-restricted-protocol``): a request without the server's own
:class:`ControlKey` header is refused with 403 (HTTP) or UNAVAILABLE "This protocol is restricted" (gRPC).
Another session that reaches the port by mistake (a stale client, a port reused) cannot unload our models.
The key is on the server's command line, so a local user who can read other users' processes (no
``hidepid``) can read it: it keeps other sessions' clients out, not a determined local user.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import final

from pytest_triton.client.rest import IndexEntry
from pytest_triton.client.rest import TritonRest
from pytest_triton.errors import ConfigError
from pytest_triton.errors import ModelLoadError
from pytest_triton.servers.wait import ProgressCallback
from pytest_triton.servers.wait import wait_models_ready
from pytest_triton.servers.wait import wait_models_unloaded

# lower case: gRPC metadata keys are (Triton 2.51 compares a mixed-case gRPC key as given, so none could match);
# its HTTP frontend matches the header case-insensitively (checked)
CONTROL_HEADER = "pytest-triton-control"
# Triton 2.51's gRPC frontend reads the key from metadata "triton-grpc-protocol-<key>" (its refusal names it)
GRPC_HEADER_PREFIX = "triton-grpc-protocol-"
RESTRICTED_APIS = "model-repository"  # Triton's name for index, load and unload, in both flags
# what ``tritonserver --help`` lists when the binary has the restricted-API options
RESTRICTED_API_FLAGS = ("--http-restricted-api", "--grpc-restricted-protocol")


@dataclass(frozen=True)
class ControlKey:
    """The header that opens model control of one server (a new random value unless given), and the flags
    that ask Triton for it."""

    value: str = field(default_factory=lambda: secrets.token_hex(16), repr=False)
    header: str = CONTROL_HEADER

    @classmethod
    def parse(cls, given: str) -> ControlKey:
        """``NAME=VALUE``, as in the server's ``--http-restricted-api=model-repository:NAME=VALUE``."""
        name, sep, value = given.partition("=")
        if not sep or not name.strip() or not value:
            raise ConfigError(
                f"control_header={given!r}: give NAME=VALUE, the header of the server's "
                "--http-restricted-api=model-repository:NAME=VALUE"
            )
        return cls(value, name.strip().lower())

    @property
    def headers(self) -> dict[str, str]:
        """The headers to send with index, load and unload requests, good for tritonclient's HTTP and gRPC
        clients alike (``headers=``): Triton's gRPC frontend looks for the key under its own prefix."""
        return {self.header: self.value, GRPC_HEADER_PREFIX + self.header: self.value}

    def flags(self) -> list[str]:
        """``tritonserver`` options that restrict model control, over HTTP and gRPC, to this key."""
        rule = f"{RESTRICTED_APIS}:{self.header}={self.value}"
        return [f"--http-restricted-api={rule}", f"--grpc-restricted-protocol={rule}"]


def has_restricted_api(help_text: str) -> bool:
    """Whether a ``tritonserver --help`` text lists both restricted-API options (Triton 2.51 does)."""
    return all(flag in help_text for flag in RESTRICTED_API_FLAGS)


def restricts_api(args: Sequence[str]) -> bool:
    """Whether the user's own ``tritonserver`` arguments restrict an API themselves: then no key of ours is
    added (Triton rejects a second rule for the same API)."""
    return any(arg.startswith(RESTRICTED_API_FLAGS) for arg in args)


def users_control_key(args: Sequence[str]) -> ControlKey | None:
    """The key of a ``model-repository`` rule among the user's own arguments (HTTP's first, then gRPC's), which the
    plugin's model control then sends; None where they restrict no model control."""
    for flag in RESTRICTED_API_FLAGS:
        for arg in args:
            given, _, rule = arg.partition("=")
            apis, _, header = rule.partition(":")
            name, _, value = header.partition("=")
            if given == flag and RESTRICTED_APIS in apis.split(",") and name and value:
                return ControlKey(value, name.lower())
    return None


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
    ``headers`` go with every request (the server's :class:`ControlKey` header where it has one).
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
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.rest = TritonRest(http_url, headers=headers)
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
