"""The exceptions pytest-triton raises.

Every error derives from :class:`PytestTritonError`, so callers can catch the
whole family at once::

    PytestTritonError
     ├── ConfigError (ValueError)          a config.pbtxt or option value is wrong
     │    └── ConfigSyntaxError            protobuf could not read the text
     ├── LintFailed                        a repository has lint errors
     ├── MissingDependency (ImportError)   an optional extra is not installed
     ├── ServerError
     │    ├── ServerStartError             the server exited or never got ready
     │    ├── ModelLoadError               a model failed to load (Triton's text)
     │    └── ServerTimeout (TimeoutError) readiness not reached in time
     ├── InferenceError                    a request failed (keeps request/response)
     │    └── InferenceTimeout (TimeoutError) no reply in time
     └── PlacementError (AssertionError)   ONNX Runtime left nodes off the wanted provider
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class PytestTritonError(Exception):
    """Base class of every error raised by pytest-triton."""


class ConfigError(PytestTritonError, ValueError):
    """A configuration (config.pbtxt, an option, a budget file) is invalid."""

    def __init__(self, message: str, *, path: str | None = None, line: int = 0, col: int = 0) -> None:
        self.path = path
        self.line = line
        self.col = col
        where = f"{path}:{line}:{col}: " if path else ""
        super().__init__(f"{where}{message}")
        self.reason = message


class ConfigSyntaxError(ConfigError):
    """protobuf's text_format parser rejected the text; keeps its line and column."""


class LintFailed(PytestTritonError):
    """Linting found errors; ``findings`` holds every finding, not only the first."""

    def __init__(self, message: str, findings: list[Any]) -> None:
        super().__init__(message)
        self.findings = findings


class MissingDependency(PytestTritonError, ImportError):
    """An optional dependency is missing; the message carries the install command."""

    def __init__(self, package: str, extra: str) -> None:
        self.package = package
        self.extra = extra
        super().__init__(f"{package!r} is not installed; install it with: pip install 'pytest-triton[{extra}]'")


class ServerError(PytestTritonError):
    """A Triton server could not be started, reached or used."""

    def __init__(self, message: str, *, log_tail: str = "", exit_code: int | None = None) -> None:
        self.log_tail = log_tail
        self.exit_code = exit_code
        text = message
        if exit_code is not None:
            text += f" (exit code {exit_code})"
        if log_tail:
            text += "\n--- server log (last lines) ---\n" + log_tail.rstrip("\n")
        super().__init__(text)


class ServerStartError(ServerError):
    """The server process exited, or its binary could not be found or run."""


class ModelLoadError(ServerError):
    """Triton refused to load a model; the message quotes Triton's own error."""

    def __init__(
        self, model: str, reason: str, *, log_tail: str = "", failures: Mapping[str, str] | None = None
    ) -> None:
        self.model = model
        self.reason = reason
        self.failures: dict[str, str] = dict(failures) if failures else {model: reason}  # every model that failed
        text = f"model {model!r} failed to load: {reason}"
        for other, why in self.failures.items():
            if other != model:
                text += f"\nmodel {other!r} failed to load too: {why}"
        super().__init__(text, log_tail=log_tail)


class ServerTimeout(ServerError, TimeoutError):
    """The server (or a model) did not become ready within the allowed time."""


class InferenceError(PytestTritonError):
    """An inference request failed; keeps what was sent and what came back."""

    def __init__(self, message: str, *, request: Any = None, response: Any = None) -> None:
        self.request = request
        self.response = response
        super().__init__(message)


class InferenceTimeout(InferenceError, TimeoutError):
    """An inference request got no reply within its timeout (it is never resent)."""


class PlacementError(PytestTritonError, AssertionError):
    """ONNX Runtime ran more nodes off the wanted provider than a contract allows; keeps the report."""

    def __init__(self, message: str, *, report: Any = None) -> None:
        self.report = report
        super().__init__(message)
