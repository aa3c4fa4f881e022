"""The exceptions pytest-triton raises.

Every error derives from :class:`PytestTritonError`, so callers can catch the
whole family at once::

    PytestTritonError
     ├── ConfigError (ValueError)          a config.pbtxt or option value is wrong
     │    ├── ConfigSyntaxError            protobuf could not read the text
     │    ├── ConfigLimitExceeded          a config (or a literal in it) beyond the linter's limits
     │    └── OnnxReadError                an ONNX file that cannot be read as a model
     ├── LintFailed                        a repository has lint errors
     ├── ContractFailure (AssertionError)  a declared contract does not hold (variant, output, worst element)
     ├── VariantUnavailable                a declared variant cannot run here (the item is skipped)
     ├── MissingDependency (ImportError)   an optional extra is not installed
     ├── ServerError
     │    ├── ServerStartError             the server exited or never got ready
     │    ├── ModelLoadError               a model failed to load (Triton's text)
     │    ├── ServerTimeout (TimeoutError) readiness not reached in time
     │    └── DeploymentError              a SageMaker endpoint could not be deployed or removed
     ├── InferenceError                    a request failed (keeps request/response)
     │    ├── InferenceTimeout (TimeoutError) no reply in time
     │    └── EndpointModelError           a SageMaker container answered an error (ModelError, 424)
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
        # positions are 1-based; 0 means not known and is left out (``file: ...``, ``file:3: ...``)
        where = f"{path}{f':{line}' if line else ''}{f':{col}' if line and col else ''}: " if path else ""
        super().__init__(f"{where}{message}")
        self.reason = message


class ConfigSyntaxError(ConfigError):
    """protobuf's text_format parser rejected the text; keeps its line and column."""


class ConfigLimitExceeded(ConfigError):
    """A config.pbtxt, or a token in it, is larger than the linter's limits (``max_config_bytes``...)."""


class OnnxReadError(ConfigError):
    """An ONNX file that cannot be read as a model (missing, a Git LFS pointer, not ONNX, truncated)."""

    def __init__(self, reason: str, *, path: str | None = None) -> None:
        super().__init__(reason, path=path)


class LintFailed(PytestTritonError):
    """Linting found errors; ``findings`` holds every finding, not only the first."""

    def __init__(self, message: str, findings: list[Any]) -> None:
        super().__init__(message)
        self.findings = findings


class ContractFailure(PytestTritonError, AssertionError):
    """A contract item failed; the message is the whole report (variant, output, worst element)."""


class VariantUnavailable(PytestTritonError):
    """A variant cannot run on this machine or in this session; ``reason`` says why."""

    def __init__(self, variant: str, reason: str) -> None:
        super().__init__(f"variant {variant!r}: {reason}")
        self.variant = variant
        self.reason = reason


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


class DeploymentError(ServerError):
    """A SageMaker endpoint did not reach InService, or its resources could not all be removed.

    ``failure_reason`` is SageMaker's FailureReason; the log tail is CloudWatch's
    ``/aws/sagemaker/Endpoints/NAME``; ``left`` lists resources still there, as aws CLI commands that delete them.
    """

    def __init__(
        self, message: str, *, failure_reason: str = "", log_tail: str = "", left: tuple[str, ...] = ()
    ) -> None:
        self.failure_reason = failure_reason
        self.left = left
        text = message
        if failure_reason:
            text += f"\nFailureReason: {failure_reason}"
        if left:
            text += "\nstill there; delete by hand with:\n  " + "\n  ".join(left)
        super().__init__(text, log_tail=log_tail)


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


class EndpointModelError(InferenceError):
    """InvokeEndpoint answered ModelError (HTTP 424): the container itself returned an error.

    Keeps SageMaker's ``OriginalStatusCode``, ``OriginalMessage`` (the container's body) and ``LogStreamArn``.
    """

    def __init__(
        self,
        message: str,
        *,
        original_status: int | None,
        original_message: str,
        log_stream_arn: str = "",
        request: Any = None,
        response: Any = None,
    ) -> None:
        self.original_status = original_status
        self.original_message = original_message
        self.log_stream_arn = log_stream_arn
        text = f"{message}\ncontainer answered {original_status}: {original_message}"
        if log_stream_arn:
            text += f"\ncontainer log stream: {log_stream_arn}"
        super().__init__(text, request=request, response=response)


class TritonInconclusiveWarning(UserWarning):
    """A relative budget or PR verdict whose interval still straddles its limit after the extra rounds: neither
    a pass nor a fail (``--triton-inconclusive fail`` makes it a failure)."""
