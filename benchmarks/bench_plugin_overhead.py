"""What installing the plugin costs a foreign suite: wall time and peak memory of a one-test pytest run.

Run: ``python -m benchmarks.bench_plugin_overhead [--rounds 20] [--against CHECKOUT] [--write]``. A suite of one
trivial test, in a temporary folder of its own (its own ``pytest.ini``: no conftest or pyproject of this
checkout), runs in a fresh ``python -m pytest`` with the plugin (as installed, through its ``pytest11`` entry
point) and without it (``-p no:triton``), paired and interleaved: each round runs every arm, the order turning
between rounds, so that a drift of the machine's load reaches all. Every other installed plugin loads in every
arm. ``--against CHECKOUT`` adds an arm whose ``pytest_triton`` is imported from another checkout (``PYTHONPATH``,
every arm gets one), to compare two versions of the plugin in one run.

The runs use bytecode caches, as an installed package does (pip compiles at install time), even where
``PYTHONDONTWRITEBYTECODE`` is set: the caches go to a folder of the run's own (``PYTHONPYCACHEPREFIX``), written
by one unmeasured run of each arm. ``--no-bytecode-cache`` leaves them to the environment (under
``PYTHONDONTWRITEBYTECODE=1`` an editable install compiles the plugin's modules in every run).

Printed: the median wall time, CPU time (user + system) and peak RSS (``wait4``'s rusage of the child) of each
arm, the median of each arm's paired differences to the arm without the plugin with a 95% interval, and the goal
(issue 34: at most 50 ms and 5 MB). ``--write`` also appends the table with the machine and its load to
``benchmarks/results/plugin-overhead-DATE.md``.
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
from benchmarks.common import ROOT
from benchmarks.common import cpu_model
from pytest_triton.bench.decision import median_interval

GOAL_MS = 50.0
GOAL_MB = 5.0
ALPHA = 0.025
"""Each side of the interval on a median paired difference is wrong with probability at most this (a 95% interval)."""
WITHOUT = "without (-p no:triton)"
WITH = "with the plugin"
SUITE = {
    "pytest.ini": "[pytest]\n",
    "test_one.py": "def test_one():\n    assert 1 + 1 == 2\n",
}
Sample = tuple[float, float, float]  # wall seconds, CPU seconds, peak RSS in MB


def foreign_suite(folder: Path) -> Path:
    """A suite that knows nothing of Triton: one test, its own ini file (the rootdir)."""
    for name, text in SUITE.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def arms(against: list[Path]) -> dict[str, tuple[tuple[str, ...], Path]]:
    """Each arm's extra pytest arguments and the checkout its ``pytest_triton`` comes from; the arm without the
    plugin first (every difference is to it)."""
    found = {WITHOUT: (("-p", "no:triton"), ROOT), WITH: ((), ROOT)}
    for checkout in against:
        found[f"with the plugin of {checkout}"] = ((), checkout.resolve())
    return found


def run_once(suite: Path, extra: tuple[str, ...], checkout: Path, pycache: Path | None) -> Sample:
    """(wall seconds, CPU seconds, peak RSS in MB) of one ``python -m pytest`` of ``suite``, its bytecode caches
    in ``pycache`` (None: as the environment says); exits on a failed run. The CPU time (user + system of the
    child) hardly depends on what else the machine runs: on a shared machine it resolves a difference the wall
    time cannot."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    env["PYTHONPATH"] = os.pathsep.join([str(checkout), *filter(None, [env.get("PYTHONPATH")])])
    if pycache is not None:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
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


def measure(rounds: int, against: list[Path], *, bytecode: bool = True) -> dict[str, list[Sample]]:
    """Each arm's samples per round; the order of the arms turns by one each round. ``bytecode``: the runs use
    caches of their own (False: the environment decides, e.g. ``PYTHONDONTWRITEBYTECODE`` compiles every run)."""
    chosen = arms(against)
    runs: dict[str, list[Sample]] = {arm: [] for arm in chosen}
    with tempfile.TemporaryDirectory(prefix="bench-plugin-overhead-") as folder:
        suite = Path(folder) / "suite"
        pycache = Path(folder) / "pycache" if bytecode else None
        suite.mkdir()
        foreign_suite(suite)
        for extra, checkout in chosen.values():  # one unmeasured run each: the bytecode caches are written
            run_once(suite, extra, checkout, pycache)
        order = list(chosen.items())
        for index in range(rounds):
            turn = index % len(order)
            for arm, (extra, checkout) in order[turn:] + order[:turn]:
                runs[arm].append(run_once(suite, extra, checkout, pycache))
    return runs


def cell(median: float, interval: tuple[float, float] | None, digits: int) -> str:
    if interval is None:
        return f"{median:+.{digits}f}"
    low, high = interval
    return f"{median:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def differences(runs: list[Sample], reference: list[Sample]) -> list[tuple[float, tuple[float, float] | None]]:
    """(median, 95% interval) of the paired differences ``runs`` - ``reference``: wall ms, CPU ms, peak MB."""
    found = []
    for index, scale in ((0, 1000), (1, 1000), (2, 1)):
        values = [(a[index] - b[index]) * scale for a, b in zip(runs, reference)]
        found.append((statistics.median(values), median_interval(values, ALPHA)))
    return found


def verdict(median: float, interval: tuple[float, float] | None, goal: float) -> str:
    if interval is None:
        return "too few pairs for an interval"
    if interval[1] <= goal:
        return "met (the whole interval is within it)"
    if median <= goal:
        return "not shown (the median is within it, the interval's upper end is not)"
    return "missed"


def table(runs: dict[str, list[Sample]]) -> list[str]:
    reference = runs[WITHOUT]
    lines = [
        "| arm | median wall (ms) | median CPU (ms) | median peak RSS (MB) |",
        "|---|---:|---:|---:|",
    ]
    for arm, samples in runs.items():
        wall, cpu = (statistics.median(s[i] for s in samples) * 1000 for i in (0, 1))
        peak = statistics.median(s[2] for s in samples)
        lines.append(f"| {arm} | {wall:.0f} | {cpu:.0f} | {peak:.1f} |")
    pairs = f"median of {len(reference)} pairs, 95% interval"
    found = {arm: differences(samples, reference) for arm, samples in runs.items() if arm != WITHOUT}
    for arm, cells in found.items():
        text = " | ".join(cell(m, i, digits) for (m, i), digits in zip(cells, (0, 0, 1)))
        lines.append(f"| {arm} - without ({pairs}) | {text} |")
    for arm in [a for a in runs if a not in (WITHOUT, WITH)]:  # two versions of the plugin, round by round
        cells = differences(runs[WITH], runs[arm])
        text = " | ".join(cell(m, i, digits) for (m, i), digits in zip(cells, (0, 0, 1)))
        lines.append(f"| this checkout - {arm.removeprefix('with the plugin of ')} ({pairs}) | {text} |")
    for arm, cells in found.items():
        lines.append("")
        for (median, interval), name, goal, unit in zip(
            cells, ("wall", "CPU", "peak RSS"), (GOAL_MS, GOAL_MS, GOAL_MB), ("ms", "ms", "MB")
        ):
            lines.append(f"goal ({arm}): at most {goal:g} {unit} of {name}: {verdict(median, interval, goal)}")
    return lines


def conditions(*, bytecode: bool) -> list[str]:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    return [
        f"machine: {cpu_model()}, {os.cpu_count()} CPUs; load average at the end (1/5/15 min): {load}",
        f"python {sys.version.split()[0]}; pytest run as `python -m pytest -q -p no:cacheprovider` in a fresh process",
        "bytecode caches: "
        + ("written by an unmeasured run of each arm" if bytecode else "as the environment says")
        + f" (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20, help="Paired rounds (default: 20)")
    parser.add_argument(
        "--against", type=Path, action="append", default=[], help="Another checkout's plugin as one more arm"
    )
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="Leave bytecode caches to the environment (PYTHONDONTWRITEBYTECODE=1: every run compiles what has none)",
    )
    parser.add_argument("--write", action="store_true", help="Write the table to benchmarks/results/")
    args = parser.parse_args(argv)
    runs = measure(args.rounds, args.against, bytecode=not args.no_bytecode_cache)
    lines = [*table(runs), "", *conditions(bytecode=not args.no_bytecode_cache)]
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
