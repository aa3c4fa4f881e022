"""How often a relative budget or a PR verdict cries wolf, and how often it misses: the real plugin on pairs whose
true ratio is known by construction.

Each pair is a python-backend step that sleeps ``d`` against one that sleeps ``d * r``. The p50 ratio a client
sees is ``(d * r + o) / (d + o)``, where ``o`` is what a request costs around the sleep (HTTP, the python
backend's stub: about 0.7 ms here): closer to 1 than ``r``. The table shows the ratio the plugin measured beside
``r``; a longer ``--step-ms`` brings the two together. The limit is 1.10x; for each ratio the plugin judges the
pair ``--runs`` times, with ``--hogs`` CPU-bound processes beside it, in two modes:

- ``relative``: a contracts file's ``[[latency.relative]]`` (``max_ratio = 1.10``), one server per run serving
  every step model;
- ``baseline``: ``--triton-baseline`` against a base folder whose steps all sleep ``d`` (p50 at most 1.10x,
  samples/s at least 1/1.10 of the base's), the base and the head on one server each.

One pytest run judges every ratio ``--per-run`` times (variants that share a model), so the servers start once
per run. With ``--jobs J`` several runs go at once, each pinned with ``taskset`` to two cores of its own with its
hogs on the same two cores, where the machine has ``2 * J`` cores (the table's conditions say which).

    python -m benchmarks.verdict_power --runs 100 --hogs 0,2 --jobs 8 --out benchmarks/results/verdict-power-DATE.md

A verdict counts as a false alarm where it FAILs at a true ratio within the limit, as a detection where it FAILs
beyond it; INCONCLUSIVE is counted apart; the seconds are pytest's duration of the verdict's item (warm-up and
every look included).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import cpu_model

LIMIT = 1.10
DEFAULT_RATIOS = (1.00, 1.07, LIMIT * 1.05, LIMIT * 1.10, LIMIT * 1.20)
MODES = ("relative", "baseline")

CONFIG = """\
name: "{name}"
backend: "python"
max_batch_size: 8
input [ {{ name: "X" data_type: TYPE_FP32 dims: [ 4 ] }} ]
output [ {{ name: "Y" data_type: TYPE_FP32 dims: [ 4 ] }} ]
instance_group [ {{ kind: KIND_CPU count: 1 }} ]
"""

# the step sleeps: it takes no core from the servers, the client or the hogs, so its length is what it says
MODEL = """\
import time

import triton_python_backend_utils as pb_utils

STEP_S = {step!r}


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            x = pb_utils.get_input_tensor_by_name(request, "X").as_numpy()
            time.sleep(STEP_S)
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("Y", x)]))
        return responses
"""

# only the side-by-side items run: relative budgets (latency[A/B]) and the pairs' latency (latency[A/A@REF])
CONFTEST = """\
def pytest_collection_modifyitems(config, items):
    items[:] = [item for item in items if item.name.startswith("latency[") and "/" in item.name]
"""


def _key(ratio: float) -> str:
    return f"r{ratio:.3f}".replace(".", "_")


def _write_steps(root: Path, ratios: Sequence[float], step_s: float, *, scaled: bool) -> None:
    """One step model per ratio (sleeping ``step_s * ratio``, or ``step_s`` where not ``scaled``) and a base."""
    for name, ratio in (("base", 1.0), *((_key(r), r) for r in ratios)):
        model = root / "repos" / "steps" / name
        (model / "1").mkdir(parents=True, exist_ok=True)
        (model / "config.pbtxt").write_text(CONFIG.format(name=name), encoding="utf-8")
        step = step_s * ratio if scaled else step_s
        # the head's models differ from the base's in text even at 1.00x: the pair is then compared, not skipped
        note = "# head\n" if scaled else ""
        (model / "1" / "model.py").write_text(note + MODEL.format(step=step), encoding="utf-8")


WARM_UP = "warmup"  # judged first and not counted: it pays for the servers' start and the inputs' generation


def _contracts(mode: str, ratios: Sequence[float], per_run: int, window_ms: float) -> str:
    names = [WARM_UP, *(f"{_key(r)}_{i}" for r in ratios for i in range(per_run))]
    lines = ['[reference]\nvariant = "base"\n', '[variants.base]\nrepository = "repos/steps"\nmodel = "base"\n']
    for name in names:
        model = "base" if name == WARM_UP else name.rsplit("_", 1)[0]
        lines.append(f'[variants.{name}]\nrepository = "repos/steps"\nmodel = "{model}"\n')
    lines.append('[inputs.generate]\nfrom = "base"\nexamples = 5\nseed = 1\nbatch_size = 1\n')
    lines.append(
        f'[latency]\nvariants = ["base"]\nbatch_size = 1\nthroughput_batch_size = 1\nwarmup = 5\n'
        f"window_ms = {window_ms}\n"
    )
    if mode == "relative":
        for name in names:
            lines.append(f'[[latency.relative]]\nvariant = "{name}"\nbaseline = "base"\nmax_ratio = {LIMIT}\n')
    else:
        listed = ", ".join(f'"{n}"' for n in names)
        lines.append(
            f"[baseline]\nvariants = [{listed}]\nmax_p50_ratio = {LIMIT}\nmin_samples_per_s_ratio = {1 / LIMIT:.6f}\n"
        )
    return "\n".join(lines)


@dataclass(frozen=True)
class Verdict:
    mode: str
    hogs: int
    ratio: float
    outcome: str  # pass, fail, inconclusive (or error: the item errored)
    seconds: float
    rounds: int
    measured: float | None  # the p50 ratio the plugin measured (the step's ratio, compressed by the overhead)


def _outcome(statuses: Sequence[str]) -> str:
    if not statuses:
        return "error"
    if any(s in ("fail", "not-measured") for s in statuses):
        return "fail"
    return "inconclusive" if "inconclusive" in statuses else "pass"


def _read_junit(path: Path, mode: str, hogs: int, by_name: dict[str, float]) -> list[Verdict]:
    found = []
    for case in ET.parse(path).getroot().iter("testcase"):
        item = case.get("name", "")
        variant = item.removeprefix("latency[").split("/", 1)[0]
        if variant not in by_name:
            continue
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        # the judged metrics: relative p50; baseline p50 and samples/s (p99 is reported, not judged)
        statuses = [v for k, v in props.items() if k.startswith("triton_verdict[") and " p99]" not in k]
        rounds = [int(v) for k, v in props.items() if k.startswith("triton_rounds[") and v]
        p50 = [float(v) for k, v in props.items() if k.startswith("triton_ratio[") and " p50]" in k and v]
        outcome = _outcome(statuses) if case.find("error") is None else "error"
        seconds = float(case.get("time", 0))
        found.append(
            Verdict(mode, hogs, by_name[variant], outcome, seconds, max(rounds, default=0), p50[0] if p50 else None)
        )
    return found


def _hogs(count: int, cores: str | None) -> list[subprocess.Popen[str]]:
    pin = ["taskset", "-c", cores] if cores else []
    return [subprocess.Popen([*pin, sys.executable, "-c", "while True: pass"], text=True) for _ in range(count)]


def one_run(
    mode: str, hogs: int, ratios: Sequence[float], args: argparse.Namespace, cores: str | None
) -> list[Verdict]:
    """One pytest run of the plugin: every ratio judged ``args.per_run`` times, ``hogs`` processes beside it."""
    work = Path(tempfile.mkdtemp(prefix="verdict-power-"))
    try:
        head, base = work / "head", work / "base"
        contracts = _contracts(mode, ratios, args.per_run, args.window_ms)
        for root, scaled in ((head, True), (base, False)):
            _write_steps(root, ratios, args.step_ms / 1000, scaled=scaled)
            (root / "contracts.toml").write_text(contracts, encoding="utf-8")
        (head / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        (head / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # the root: paths as the base has them
        command = [sys.executable, "-m", "pytest", "--triton-contracts", "contracts.toml", "-p", "no:cacheprovider"]
        command += ["--junitxml", str(work / "junit.xml"), "-q", "-o", "junit_family=xunit1", "-W", "ignore"]
        command += ["--triton-verdict-seconds", str(args.verdict_seconds)]
        if mode == "baseline":
            command += ["--triton-baseline", str(base), "-m", "triton_baseline"]
        pin = ["taskset", "-c", cores] if cores else []
        hogging = _hogs(hogs, cores)
        run = subprocess.Popen([*pin, *command], cwd=head, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            output, _ = run.communicate(timeout=3600)
        finally:
            for process in [*hogging, run]:
                process.kill()
                process.wait()
        junit = work / "junit.xml"
        if not junit.is_file():
            raise RuntimeError(f"pytest wrote no JUnit XML (exit {run.returncode}):\n{output[-3000:]}")
        by_name = {f"{_key(r)}_{i}": r for r in ratios for i in range(args.per_run)}
        verdicts = _read_junit(junit, mode, hogs, by_name)
        if len(verdicts) != len(by_name) or any(v.outcome == "error" for v in verdicts):
            print(output[-3000:], file=sys.stderr)
        return verdicts
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _table(verdicts: Sequence[Verdict], args: argparse.Namespace, conditions: str) -> str:
    lines = [
        f"Limit {LIMIT:.2f}x; step {args.step_ms:g} ms against step x ratio; window {args.window_ms:g} ms; "
        f"verdict budget {args.verdict_seconds:g} s; {conditions}",
        "",
        "| mode | hogs | step ratio | measured p50 ratio (median) | runs | false alarms | detections | inconclusive "
        "| passes | errors | median s / verdict | median rounds |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cells: dict[tuple[str, int, float], list[Verdict]] = {}
    for v in verdicts:
        cells.setdefault((v.mode, v.hogs, v.ratio), []).append(v)
    for (mode, hogs, ratio), own in sorted(cells.items()):
        count = {o: sum(v.outcome == o for v in own) for o in ("pass", "fail", "inconclusive", "error")}
        within = ratio <= LIMIT
        alarms = f"{count['fail']}/{len(own)}" if within else "–"
        found = "–" if within else f"{count['fail']}/{len(own)}"
        seconds = statistics.median(v.seconds for v in own)
        rounds = statistics.median(v.rounds for v in own)
        measured = [v.measured for v in own if v.measured is not None]
        seen = f"{statistics.median(measured):.3f}" if measured else "–"
        lines.append(
            f"| {mode} | {hogs} | {ratio:.3f} ({ratio / LIMIT - 1:+.0%} vs limit) | {seen} | {len(own)} | {alarms} "
            f"| {found} "
            f"| {count['inconclusive']}/{len(own)} | {count['pass']}/{len(own)} | {count['error']} | {seconds:.1f} "
            f"| {rounds:g} |"
        )
    return "\n".join(lines)


def _listed(text: str) -> list[str]:
    """``"1.0, 1.07"`` → ``["1.0", "1.07"]``: a comma-separated option."""
    return [part.strip() for part in text.split(",") if part.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="verdicts per ratio, mode and hog count (N)")
    parser.add_argument("--per-run", type=int, default=1, help="verdicts per ratio within one pytest run")
    parser.add_argument("--ratios", default=",".join(f"{r:.4f}" for r in DEFAULT_RATIOS), help="true ratios")
    parser.add_argument("--hogs", default="0,2", help="CPU-bound processes beside a run, comma-separated")
    parser.add_argument("--modes", default=",".join(MODES), help="relative, baseline or both")
    parser.add_argument("--jobs", type=int, default=1, help="runs at once (each pinned to 2 cores if there are)")
    parser.add_argument("--step-ms", type=float, default=3.0, help="the base step's sleep (d)")
    parser.add_argument("--window-ms", type=float, default=500.0, help="measurement window ([latency] window_ms)")
    parser.add_argument("--verdict-seconds", type=float, default=90.0, help="--triton-verdict-seconds")
    parser.add_argument("--out", type=Path, default=None, help="write FILE (markdown) and FILE.json")
    args = parser.parse_args(argv)
    # a terminated benchmark still stops its hogs and its pytest run (the finally blocks run on SystemExit)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ratios = [float(r) for r in _listed(args.ratios)]
    hogs = [int(h) for h in _listed(args.hogs)]
    modes = _listed(args.modes)
    if unknown := set(modes) - set(MODES):
        parser.error(f"--modes: {sorted(unknown)!r}; expected {' or '.join(MODES)}")
    cores = os.cpu_count() or 1
    pinned = shutil.which("taskset") is not None and cores >= 2 * args.jobs
    runs_per_cell = math.ceil(args.runs / args.per_run)
    plan = [(m, h) for m in modes for h in hogs for _ in range(runs_per_cell)]
    started = time.monotonic()
    verdicts: list[Verdict] = []

    def job(index: int) -> list[Verdict]:
        mode, hog = plan[index]
        slot = index % args.jobs
        return one_run(mode, hog, ratios, args, f"{2 * slot},{2 * slot + 1}" if pinned else None)

    pinning = "each run pinned to 2 cores with its hogs" if pinned else "runs not pinned"

    def report(done: bool) -> str:
        """The table of the verdicts so far; rewritten after every run, so a run stopped at a deadline keeps them."""
        conditions = (
            f"{cores} cores ({cpu_model()}), {args.jobs} run(s) at once, {pinning}; {args.runs} verdict(s) per cell "
            f"planned ({args.per_run} per run), {len(verdicts)} measured{'' if done else ' (stopped early)'}; "
            f"{time.monotonic() - started:.0f} s in all"
        )
        table = _table(verdicts, args, conditions)
        if args.out is not None:
            out = args.out if args.out.is_absolute() else Path.cwd() / args.out
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text("# Verdict power\n\n" + table + "\n", encoding="utf-8")
            rows = [v.__dict__ for v in verdicts]
            out.with_suffix(".json").write_text(json.dumps({"conditions": conditions, "verdicts": rows}, indent=1))
        return table

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for found in pool.map(job, range(len(plan))):
            verdicts.extend(found)
            print(f"{len(verdicts)} verdicts, {time.monotonic() - started:.0f} s", file=sys.stderr)
            report(done=False)
    print(report(done=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
