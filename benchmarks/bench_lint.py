"""Lint speed and memory: a table of medians.

Run: ``python -m benchmarks.bench_lint [--quick]`` (one process, one core's work: the rates are
models per CPU-second of this process, with the wall-clock rate beside them).

Rows: repositories of 100 and 10,000 python/ONNX-config models with one ensemble (goal from
issue 14: >= 2,000 model configs per second); one config holding a 1 MB and a 10 MB string
literal, 1 MB / 10 MB of ``parameters`` entries, and an input with 1,000,000 dims (7 MB) (rate and
peak traced memory, which must grow linearly); a model.tar.gz of 1 GB of zeros (a tar bomb: time,
peak memory, bytes written).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import tarfile
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_triton.lint import lint_path
from pytest_triton.lint.context import Reporter
from pytest_triton.lint.limits import LintLimits
from pytest_triton.lint.tarball import lint_tarball

CONFIG = """name: "{name}"
backend: "python"
max_batch_size: 8
input [ {{ name: "INPUT" data_type: TYPE_FP32 dims: [ 16 ] }} ]
output [ {{ name: "OUTPUT" data_type: TYPE_FP32 dims: [ 16 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 100 }}
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
"""
ENSEMBLE = """name: "pipeline"
platform: "ensemble"
max_batch_size: 8
input [ { name: "INPUT" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 16 ] } ]
ensemble_scheduling { step [
  { model_name: "model_000" model_version: -1 input_map { key: "INPUT" value: "INPUT" }
    output_map { key: "OUTPUT" value: "mid" } },
  { model_name: "model_001" model_version: -1 input_map { key: "INPUT" value: "mid" }
    output_map { key: "OUTPUT" value: "OUTPUT" } }
] }
"""
BIG = LintLimits(max_config_bytes=64 << 20, max_literal_bytes=64 << 20)


def make_repository(root: Path, count: int = 99) -> Path:
    """``count`` python models and one two-step ensemble over the first two."""
    for index in range(count):
        name = f"model_{index:03d}"
        (root / name / "1").mkdir(parents=True)
        (root / name / "config.pbtxt").write_text(CONFIG.format(name=name))
        (root / name / "1" / "model.py").write_text("class TritonPythonModel:\n    pass\n")
    (root / "pipeline" / "1").mkdir(parents=True)
    (root / "pipeline" / "config.pbtxt").write_text(ENSEMBLE)
    return root


def _median_run(call: Callable[[], Any], rounds: int, *, warm: bool = True) -> tuple[float, float]:
    """Median CPU seconds and median wall seconds of ``rounds`` calls (after one warm-up)."""
    if warm:
        call()
    cpu, wall = [], []
    for _ in range(rounds):
        c0, w0 = time.process_time(), time.perf_counter()
        call()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def _peak(call: Callable[[], Any]) -> float:
    """Peak memory traced by Python while ``call`` runs, in MB."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def _one_model(root: Path, config: str) -> Path:
    (root / "m" / "1").mkdir(parents=True)
    (root / "m" / "1" / "model.py").write_text("")
    (root / "m" / "config.pbtxt").write_text(config)
    return root


def string_config(size: int) -> str:
    return f'name: "m"\nbackend: "python"\nparameters {{ key: "blob" value {{ string_value: "{"a" * size}" }} }}\n'


def parameters_config(size: int) -> str:
    entry = 'parameters {{ key: "k{0:07d}" value {{ string_value: "v" }} }}\n'
    count = size // len(entry.format(0))
    return 'name: "m"\nbackend: "python"\n' + "".join(entry.format(i) for i in range(count))


def dims_config(count: int) -> str:
    """One input whose dims list ``count`` sizes (1 to 99,999: ~7 bytes each, 7 MB for a million)."""
    dims = ", ".join(str(1 + index % 99_999) for index in range(count))
    return (
        f'name: "m"\nbackend: "python"\ninput [ {{ name: "INPUT" data_type: TYPE_FP32 dims: [ {dims} ] }} ]\n'
        'output [ { name: "OUTPUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
    )


def bomb(path: Path, size: int) -> Path:
    class Zeros:
        def __init__(self) -> None:
            self.left = size

        def read(self, count: int = -1) -> bytes:
            count = self.left if count < 0 else min(count, self.left)
            self.left -= count
            return bytes(count)

    with tarfile.open(path, "w:gz", compresslevel=1) as tar:
        data = _one_config()
        info = tarfile.TarInfo("m/config.pbtxt")
        info.size = len(data)
        tar.addfile(info, _Bytes(data))
        info = tarfile.TarInfo("m/1/model.onnx")
        info.size = size
        tar.addfile(info, Zeros())
    return path


class _Bytes:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, count: int = -1) -> bytes:
        head, self.data = (self.data, b"") if count < 0 else (self.data[:count], self.data[count:])
        return head


def _one_config() -> bytes:
    return b'name: "m"\nbackend: "onnxruntime"\nmax_batch_size: 0\n'


def _clean(repo: Path) -> None:
    findings = lint_path(repo, limits=BIG)
    assert findings == [], findings[:3]


def _written(folder: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Lint speed and memory table")
    parser.add_argument("--quick", action="store_true", help="1,000 models instead of 10,000; 100 MB bomb")
    args = parser.parse_args(argv)
    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory(prefix="bench-lint-") as tmp:
        base = Path(tmp)
        for count, rounds in ((100, 15), (1_000 if args.quick else 10_000, 3)):
            repo = make_repository(base / f"repo-{count}", count - 1)
            assert [f for f in lint_path(repo) if f.severity == "error"] == []
            cpu, wall = _median_run(functools.partial(lint_path, repo), rounds)
            rows.append((f"{count:,} models", f"{count / cpu:,.0f} models/s", f"{count / wall:,.0f} models/s", "-"))
        for label, make in (("string literal", string_config), ("parameters entries", parameters_config)):
            for megabytes in (1, 10):
                repo = _one_model(base / f"{label[:3]}-{megabytes}", make(megabytes * 1_000_000))
                cpu, wall = _median_run(functools.partial(_clean, repo), 1, warm=False)
                peak = _peak(functools.partial(lint_path, repo, limits=BIG))
                rows.append(
                    (f"{megabytes} MB config: {label}", f"{megabytes / cpu:,.1f} MB/s", f"{megabytes / wall:,.1f} MB/s",
                     f"{peak:,.0f} MB")
                )  # fmt: skip
        count = 100_000 if args.quick else 1_000_000
        text = dims_config(count)
        repo = _one_model(base / "dims", text)
        cpu, wall = _median_run(functools.partial(_clean, repo), 1, warm=False)
        peak = _peak(functools.partial(lint_path, repo, limits=BIG))
        size_mb = len(text) / 1e6
        rows.append(
            (f"{size_mb:.1f} MB config: {count:,} dims", f"{size_mb / cpu:,.1f} MB/s", f"{size_mb / wall:,.1f} MB/s",
             f"{peak:,.0f} MB")
        )  # fmt: skip
        size = (100 if args.quick else 1_000) * 1_000_000
        archive = bomb(base / "bomb.tar.gz", size)
        work = base / "bomb-work"
        work.mkdir()
        reporter = Reporter()
        started, wall0 = time.process_time(), time.perf_counter()
        peak = _peak(lambda: lint_tarball(archive, work, reporter, None))
        cpu, wall = time.process_time() - started, time.perf_counter() - wall0
        rows.append(
            (f"tar bomb: {archive.stat().st_size / 1e6:.1f} MB gz of {size / 1e9:g} GB zeros",
             f"{cpu:.1f} s CPU", f"{wall:.1f} s", f"{peak:,.0f} MB; {_written(work):,} bytes written")
        )  # fmt: skip
        rules = sorted({f.rule for f in reporter.findings})
        print(f"bomb findings: {rules}", file=sys.stderr)
    widths = [
        max(len(row[i]) for row in [*rows, ("case", "rate (CPU)", "rate (wall)", "peak memory")]) for i in range(4)
    ]
    header = ("case", "rate (CPU)", "rate (wall)", "peak memory")
    for row in (header, tuple("-" * w for w in widths), *rows):
        print(" | ".join(cell.ljust(width) for cell, width in zip(row, widths)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
