"""What ONNX Runtime runs where: the nodes a session places off the wanted provider, and its Memcpy nodes.

A model can be "on the GPU" (the session's first provider is CUDA) while part of its graph runs on the
CPU: ONNX Runtime puts nodes without a kernel on the wanted provider (or shape arithmetic it prefers on
the CPU) on the next provider, and inserts MemcpyToHost / MemcpyFromHost nodes at every crossing. Each
crossing is a device synchronisation. Nothing in Triton's statistics shows it; this module reads it from
the session itself: one profiled run, whose trace names the provider of every executed node of the
optimized graph (ONNX Runtime's node events carry ``provider`` and ``op_name``).

    report = placement("model.onnx", ["CUDAExecutionProvider", "CPUExecutionProvider"])
    report.assert_within(max_cpu_nodes=0)
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pytest_triton.errors import PlacementError

MEMCPY_OPS = frozenset({"MemcpyToHost", "MemcpyFromHost"})
_ONNX_TO_NUMPY = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


@dataclass(frozen=True)
class PlacedNode:
    """One node of the optimized graph and the provider that ran it."""

    name: str
    op_type: str
    provider: str


@dataclass(frozen=True)
class PlacementReport:
    """Where one session ran each node of its optimized graph (from one profiled run)."""

    model: str
    wanted: str
    session_providers: tuple[str, ...]
    nodes: tuple[PlacedNode, ...]

    @property
    def memcpy_nodes(self) -> tuple[PlacedNode, ...]:
        """The copies ONNX Runtime inserted between providers (each one a synchronisation)."""
        return tuple(n for n in self.nodes if n.op_type in MEMCPY_OPS)

    @property
    def off_wanted_nodes(self) -> tuple[PlacedNode, ...]:
        """Compute nodes (Memcpy excluded) that ran on another provider than ``wanted``."""
        return tuple(n for n in self.nodes if n.provider != self.wanted and n.op_type not in MEMCPY_OPS)

    @property
    def cpu_nodes(self) -> tuple[PlacedNode, ...]:
        """Compute nodes on the CPU provider while another provider was wanted (none when CPU is wanted)."""
        if self.wanted == "CPUExecutionProvider":
            return ()
        return tuple(n for n in self.off_wanted_nodes if n.provider == "CPUExecutionProvider")

    def by_provider(self) -> dict[str, int]:
        return dict(Counter(n.provider for n in self.nodes))

    def off_wanted_ops(self) -> dict[str, int]:
        """Operator types of the off-provider nodes, most frequent first."""
        return dict(Counter(n.op_type for n in self.off_wanted_nodes).most_common())

    def describe(self) -> str:
        head = (
            f"{self.model}: {len(self.nodes)} nodes run under {list(self.session_providers)}; "
            f"{len(self.off_wanted_nodes)} off {self.wanted}, {len(self.memcpy_nodes)} Memcpy"
        )
        ops = self.off_wanted_ops()
        return head + (f" (off-provider ops: {ops})" if ops else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "wanted": self.wanted,
            "session_providers": list(self.session_providers),
            "nodes": len(self.nodes),
            "by_provider": self.by_provider(),
            "cpu_nodes": len(self.cpu_nodes),
            "off_wanted_nodes": len(self.off_wanted_nodes),
            "off_wanted_ops": self.off_wanted_ops(),
            "memcpy_nodes": len(self.memcpy_nodes),
            "off_wanted_names": [n.name for n in self.off_wanted_nodes],
        }

    def assert_within(self, *, max_cpu_nodes: int | None = 0, max_memcpy_nodes: int | None = None) -> None:
        """Raise :class:`PlacementError` when more nodes left the wanted provider than allowed."""
        __tracebackhide__ = True
        problems: list[str] = []
        if max_cpu_nodes is not None and len(self.off_wanted_nodes) > max_cpu_nodes:
            listed = ", ".join(f"{n.name} ({n.op_type})" for n in self.off_wanted_nodes[:10])
            more = len(self.off_wanted_nodes) - 10
            problems.append(
                f"{len(self.off_wanted_nodes)} nodes ran off {self.wanted} (max_cpu_nodes={max_cpu_nodes}): "
                + listed
                + (f" and {more} more" if more > 0 else "")
            )
        if max_memcpy_nodes is not None and len(self.memcpy_nodes) > max_memcpy_nodes:
            problems.append(f"{len(self.memcpy_nodes)} Memcpy nodes (max_memcpy_nodes={max_memcpy_nodes})")
        if problems:
            raise PlacementError(
                f"{self.model}: " + "; ".join(problems) + ". Hint: export with static shapes or a newer opset so "
                "ONNX Runtime can fold the shape arithmetic, or find the operator/dtype the provider lacks a "
                "kernel for in the list above",
                report=self,
            )


def _feed_for(meta: Any, batch: int) -> np.ndarray[Any, Any]:
    dtype = _ONNX_TO_NUMPY.get(meta.type)
    if dtype is None:
        raise PlacementError(f"input {meta.name!r} has type {meta.type}; pass feeds= for it", report=None)
    shape = [dim if isinstance(dim, int) and dim > 0 else batch for dim in meta.shape]
    return np.zeros(shape, dtype=dtype)


def placement(
    model: str | Path | bytes,
    providers: Sequence[Any],
    *,
    feeds: Mapping[str, np.ndarray[Any, Any]] | None = None,
    batch: int = 1,
    session_options: Any = None,
    name: str | None = None,
) -> PlacementReport:
    """Run ``model`` once under ``providers`` with profiling on and read where each node ran.

    ``feeds`` default to zeros of each input's shape (symbolic dims = ``batch``). The wanted provider is
    the first of ``providers``; a session that did not start on it is reported as it is (every node then
    counts as off the wanted provider)."""
    import onnxruntime

    options = session_options if session_options is not None else onnxruntime.SessionOptions()
    with tempfile.TemporaryDirectory(prefix="ort-placement-") as tmp:
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(tmp, "placement")
        source = model if isinstance(model, bytes) else str(model)
        session = onnxruntime.InferenceSession(source, options, providers=list(providers))
        inputs = dict(feeds) if feeds is not None else {m.name: _feed_for(m, batch) for m in session.get_inputs()}
        session.run(None, inputs)
        trace = Path(session.end_profiling())
        events = json.loads(trace.read_text(encoding="utf-8"))
    wanted_entry = providers[0]
    wanted = wanted_entry if isinstance(wanted_entry, str) else str(wanted_entry[0])
    label = name or (Path(model).name if not isinstance(model, bytes) else "<in-memory model>")
    return PlacementReport(
        model=label,
        wanted=wanted,
        session_providers=tuple(session.get_providers()),
        nodes=nodes_from_trace(events),
    )


def nodes_from_trace(events: Sequence[Mapping[str, Any]]) -> tuple[PlacedNode, ...]:
    """The executed nodes of an ONNX Runtime profile trace, once each, in first-run order."""
    seen: dict[str, PlacedNode] = {}
    for event in events:
        args = event.get("args") or {}
        if event.get("cat") != "Node" or "provider" not in args or "op_name" not in args:
            continue
        node = str(event.get("name", "")).removesuffix("_kernel_time").removesuffix("_fence_before")
        node = node.removesuffix("_fence_after")
        if node and node not in seen:
            seen[node] = PlacedNode(name=node, op_type=str(args["op_name"]), provider=str(args["provider"]))
    return tuple(seen.values())
