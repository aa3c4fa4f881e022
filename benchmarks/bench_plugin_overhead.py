"""What installing the plugin costs a foreign suite: wall time and peak memory of a one-test pytest run.

Run: ``python -m benchmarks.bench_plugin_overhead [--rounds 20] [--write]``. A suite of one trivial test, in a
temporary folder of its own (its own ``pytest.ini``: no conftest or pyproject of this checkout), runs in a fresh
``python -m pytest`` with the plugin (as installed, through its ``pytest11`` entry point) and without it
(``-p no:triton``), paired and interleaved: each round runs both arms, the order alternating between rounds, so
that a drift of the machine's load reaches both. Every other installed plugin loads in both arms.

Printed: the median wall time, CPU time (user + system) and peak RSS (``wait4``'s rusage of the child) of each
arm, the median of the paired differences, and the goal (issue 34: at most 50 ms and 5 MB). ``--write`` also appends the
table with the machine and its load to ``benchmarks/results/plugin-overhead-DATE.md``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS
from benchmarks.common import cpu_model
from pytest_triton.bench.decision import median_interval

GOAL_MS = 50.0
GOAL_MB = 5.0
ALPHA = 0.025
"""Each side of the interval on a median paired difference is wrong with probability at most this (a 95% interval)."""
ARMS = {"with the plugin": (), "without (-p no:triton)": ("-p", "no:triton")}
SUITE = {
    "pytest.ini": "[pytest]\n",
    "test_one.py": "def test_one():\n    assert 1 + 1 == 2\n",
}


def foreign_suite(folder: Path) -> Path:
    """A suite that knows nothing of Triton: one test, its own ini file (the rootdir)."""
    for name, text in SUITE.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def run_once(suite: Path, extra: tuple[str, ...]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one ``python -m pytest`` of ``suite``; exits on a failed
    run. The CPU time (user + system of the child) hardly depends on what else the machine runs: on a shared
    machine it resolves a difference the wall time cannot."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=suite, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert child.stdout is not None
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}:\n{output.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def measure(rounds: int) -> dict[str, list[tuple[float, float, float]]]:
    """Each arm's (wall s, CPU s, peak MB) per round; the arms alternate which runs first."""
    runs: dict[str, list[tuple[float, float, float]]] = {arm: [] for arm in ARMS}
    with tempfile.TemporaryDirectory(prefix="bench-plugin-overhead-") as folder:
        suite = foreign_suite(Path(folder))
        for extra in ARMS.values():  # one unmeasured run each: the bytecode caches are written
            run_once(suite, extra)
        for index in range(rounds):
            order = list(ARMS.items()) if index % 2 == 0 else list(ARMS.items())[::-1]
            for arm, extra in order:
                runs[arm].append(run_once(suite, extra))
    return runs


def cell(median: float, interval: tuple[float, float] | None, digits: int) -> str:
    if interval is None:
        return f"{median:+.{digits}f}"
    low, high = interval
    return f"{median:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def table(runs: dict[str, list[tuple[float, float, float]]]) -> list[str]:
    with_runs, without_runs = runs.values()
    lines = [
        "| arm | median wall (ms) | median CPU (ms) | median peak RSS (MB) |",
        "|---|---:|---:|---:|",
    ]
    for arm, samples in runs.items():
        wall, cpu = (statistics.median(s[i] for s in samples) * 1000 for i in (0, 1))
        peak = statistics.median(s[2] for s in samples)
        lines.append(f"| {arm} | {wall:.0f} | {cpu:.0f} | {peak:.1f} |")
    differences = [
        [(a[i] - b[i]) * scale for a, b in zip(with_runs, without_runs)] for i, scale in ((0, 1000), (1, 1000), (2, 1))
    ]
    medians = [statistics.median(values) for values in differences]
    intervals = [median_interval(values, ALPHA) for values in differences]
    cells = [cell(m, interval, digits) for m, interval, digits in zip(medians, intervals, (0, 0, 1))]
    lines.append(f"| difference (median of {len(with_runs)} pairs, 95% interval) | {' | '.join(cells)} |")
    lines.append("")
    for name, value, interval, goal, unit in (
        ("wall", medians[0], intervals[0], GOAL_MS, "ms"),
        ("CPU", medians[1], intervals[1], GOAL_MS, "ms"),
        ("peak RSS", medians[2], intervals[2], GOAL_MB, "MB"),
    ):
        if interval is None:
            verdict = "too few pairs for an interval"
        elif interval[1] <= goal:
            verdict = "met (the whole interval is within it)"
        elif value <= goal:
            verdict = "not shown (the median is within it, the interval's upper end is not)"
        else:
            verdict = "missed"
        lines.append(f"goal: at most {goal:g} {unit} of {name} added by the plugin: {verdict}")
    return lines


def conditions() -> list[str]:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"machine: {cpu_model()}, {os.cpu_count()} CPUs; load average at the end (1/5/15 min): {load}",
        f"python {sys.version.split()[0]}; pytest run as `python -m pytest -q -p no:cacheprovider` in a fresh process",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="Paired rounds (default: 20)")
    parser.add_argument("--write", action="store_true", help="Write the table to benchmarks/results/")
    args = parser.parse_args(argv)
    lines = [*table(measure(args.rounds)), "", *conditions()]
    print("\n".join(lines))
    if args.write:
        path = RESULTS / f"plugin-overhead-{dt.date.today().isoformat()}.md"
        heading = "# Plugin overhead in a foreign one-test suite (python -m benchmarks.bench_plugin_overhead)"
        earlier = path.read_text(encoding="utf-8") if path.exists() else f"{heading}\n"
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%H:%M UTC")
        section = f"\n## {args.rounds} pairs, {stamp}\n\n" + "\n".join(lines) + "\n"
        path.write_text(earlier.rstrip("\n") + "\n" + section, encoding="utf-8")  # appended: earlier runs stay
        print(f"written: {path}")


if __name__ == "__main__":
    main()
