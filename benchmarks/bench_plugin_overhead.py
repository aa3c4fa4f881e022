"""What installing the plugin costs a foreign suite: wall time and peak memory of a one-test pytest run.

Run: ``python -m benchmarks.bench_plugin_overhead [--rounds 20] [--write]``. A suite of one trivial test, in a
temporary folder of its own (its own ``pytest.ini``: no conftest or pyproject of this checkout), runs in a fresh
``python -m pytest`` with the plugin (as installed, through its ``pytest11`` entry point) and without it
(``-p no:triton``), paired and interleaved: each round runs both arms, the order alternating between rounds, so
that a drift of the machine's load reaches both. Every other installed plugin loads in both arms.

Printed: the median wall time and the median peak RSS (``wait4``'s ``ru_maxrss`` of the child) of each arm, the
median of the paired differences, and the goal (issue 34: at most 50 ms and 5 MB). ``--write`` also writes the
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

GOAL_MS = 50.0
GOAL_MB = 5.0
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


def run_once(suite: Path, extra: tuple[str, ...]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MB) of one ``python -m pytest`` of ``suite``; exits on a failed run."""
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
    return wall, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def measure(rounds: int) -> dict[str, list[tuple[float, float]]]:
    """Each arm's (wall s, peak MB) per round; the arms alternate which runs first."""
    runs: dict[str, list[tuple[float, float]]] = {arm: [] for arm in ARMS}
    with tempfile.TemporaryDirectory(prefix="bench-plugin-overhead-") as folder:
        suite = foreign_suite(Path(folder))
        for extra in ARMS.values():  # one unmeasured run each: the bytecode caches are written
            run_once(suite, extra)
        for index in range(rounds):
            order = list(ARMS.items()) if index % 2 == 0 else list(ARMS.items())[::-1]
            for arm, extra in order:
                runs[arm].append(run_once(suite, extra))
    return runs


def table(runs: dict[str, list[tuple[float, float]]]) -> list[str]:
    with_runs, without_runs = runs.values()
    lines = [
        "| arm | median wall (ms) | median peak RSS (MB) |",
        "|---|---:|---:|",
    ]
    for arm, samples in runs.items():
        wall = statistics.median(s[0] for s in samples) * 1000
        peak = statistics.median(s[1] for s in samples)
        lines.append(f"| {arm} | {wall:.0f} | {peak:.1f} |")
    wall_diff = statistics.median((a[0] - b[0]) * 1000 for a, b in zip(with_runs, without_runs))
    peak_diff = statistics.median(a[1] - b[1] for a, b in zip(with_runs, without_runs))
    verdict = "met" if wall_diff <= GOAL_MS and peak_diff <= GOAL_MB else "missed"
    lines.append(
        f"| difference (median of {len(with_runs)} pairs) | {wall_diff:+.0f} | {peak_diff:+.1f} |",
    )
    lines.append("")
    lines.append(f"goal: at most {GOAL_MS:g} ms and {GOAL_MB:g} MB added by the plugin: {verdict}")
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
        path.write_text(f"{heading}\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
        print(f"written: {path}")


if __name__ == "__main__":
    main()
