"""Decoupled (streaming) models over Triton's gRPC bidirectional stream: every response of a request, timed.

A decoupled model (``model_transaction_policy { decoupled: true }``) answers one request with zero or more
responses, then a final flag. Triton's HTTP endpoint refuses such models; its gRPC stream carries them. A
:class:`TritonStreamTransport` sends one request at a time on one stream and collects its responses until
Triton's final flag (``triton_final_response``), each stamped with the time it arrived, so that contracts can
compare sequences (how many responses, each one's outputs) and time them (time to first response, the gaps
between responses, the whole stream).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import final

from numpy.typing import NDArray

from pytest_triton.client.kserve import kserve_dtype
from pytest_triton.errors import InferenceError
from pytest_triton.errors import InferenceTimeout

FINAL_FLAG = "triton_final_response"


@dataclass(frozen=True)
class StreamResponse:
    """One response of a stream: its outputs and when it arrived (seconds after the request was sent)."""

    outputs: dict[str, NDArray[Any]]
    at_s: float


@dataclass(frozen=True)
class StreamResult:
    """Every response of one request, in arrival order, and when the final flag came."""

    model: str
    responses: tuple[StreamResponse, ...]
    total_s: float

    @property
    def first_response_s(self) -> float | None:
        """Time to first response (None when the model sent none)."""
        return self.responses[0].at_s if self.responses else None

    @property
    def gaps_s(self) -> list[float]:
        """The time between each response and the one before it."""
        times = [r.at_s for r in self.responses]
        return [later - earlier for earlier, later in itertools.pairwise(times)]


@final
class TritonStreamTransport:
    """Triton's gRPC stream through tritonclient: one request at a time, every response until the final flag.

    ``deadline_s`` bounds one request from send to final flag; a request past it raises
    :class:`InferenceTimeout` saying how many responses had come, and the stream is restarted so that late
    responses never reach the next request.
    """

    def __init__(self, url: str, *, deadline_s: float = 60.0) -> None:
        from pytest_triton.client.transports import grpc_client

        self.url = url
        self.deadline_s = deadline_s
        self.client: Any = grpc_client(url)
        self._events: queue.Queue[tuple[Any, Any, float]] = queue.Queue()
        self._streaming = False
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def close(self) -> None:
        """End the stream (cancelling what is in flight) and close the channel."""
        self._stop(cancel=True)
        self.client.close()

    def stream(
        self,
        model: str,
        inputs: Mapping[str, NDArray[Any]],
        outputs: Sequence[str] = (),
        *,
        deadline_s: float | None = None,
    ) -> StreamResult:
        """Send one request to ``model`` and return all its responses; raises :class:`InferenceError`."""
        import tritonclient.grpc as grpcclient

        tensors = []
        for name, array in inputs.items():
            tensor = grpcclient.InferInput(name, list(array.shape), kserve_dtype(array))
            tensor.set_data_from_numpy(array)
            tensors.append(tensor)
        requested = [grpcclient.InferRequestedOutput(name) for name in outputs] or None
        limit = self.deadline_s if deadline_s is None else deadline_s
        with self._lock:
            self._start()
            request_id = str(next(self._ids))
            sent = time.perf_counter()
            self.client.async_stream_infer(
                model, tensors, outputs=requested, request_id=request_id, enable_empty_final_response=True
            )
            return self._collect(model, request_id, sent, limit)

    def _collect(self, model: str, request_id: str, sent: float, limit: float) -> StreamResult:
        responses: list[StreamResponse] = []
        while True:
            remaining = sent + limit - time.perf_counter()
            try:
                result, error, arrived = self._events.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                self._stop(cancel=True)
                raise InferenceTimeout(
                    f"stream of {model!r} on {self.url}: no final response within {limit:g} s "
                    f"({len(responses)} response(s) came); raise the variant's deadline if the model is this slow"
                ) from None
            if error is not None:
                self._stop(cancel=True)
                raise InferenceError(
                    f"stream of {model!r} on {self.url} failed after {len(responses)} response(s): {_message(error)}",
                    response=responses,
                )
            reply = result.get_response()
            if reply.id and reply.id != request_id:
                continue  # a response of a request this transport gave up on
            names = [output.name for output in reply.outputs]
            if names:
                outputs = {name: result.as_numpy(name) for name in names}
                responses.append(StreamResponse(outputs, arrived - sent))
            if _is_final(reply):
                return StreamResult(model, tuple(responses), arrived - sent)

    def _on_event(self, result: Any, error: Any) -> None:
        self._events.put((result, error, time.perf_counter()))

    def _start(self) -> None:
        if not self._streaming:
            self._events = queue.Queue()
            self.client.start_stream(callback=self._on_event)
            self._streaming = True

    def _stop(self, *, cancel: bool) -> None:
        if self._streaming:
            self._streaming = False
            self.client.stop_stream(cancel_requests=cancel)


def _is_final(reply: Any) -> bool:
    flag = reply.parameters.get(FINAL_FLAG)
    return bool(flag is not None and flag.bool_param)


def _message(error: Any) -> str:
    text = error.message() if hasattr(error, "message") else None
    return str(text or error)
