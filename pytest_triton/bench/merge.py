"""``python -m pytest_triton report merge A.json B.json ... --out PATH``: the shards of one run as one report
(PATH.json, PATH.md, PATH.svg) and one verdict (the exit status).

Each shard's report (``--triton-shard K/N --triton-report PREFIX``) says which shard of which run it is and
which contracts files it read. The merge refuses, naming the file: a report that is not a shard's, shards of
different runs, contracts files or shard counts, a shard given twice, and a missing shard. A partial table is
never written as if it were the whole.

Exit status: 0 when nothing failed, 1 when any contract item or row failed (a contract item's outcome as pytest
had it, a latency row over budget, a relative budget or a parity comparison that failed), 2 when the reports
cannot be merged (nothing is written then).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_triton.bench.report import ReportData
from pytest_triton.errors import ConfigError

__all__ = ["failures", "merge_reports", "report_main"]

# the entries of a shard's ``shard`` record that every shard of one run has in common
_SAME = (("total", "shard count"), ("run", "run"), ("contracts", "contracts files (sha256)"))


def _shard(source: str, data: ReportData) -> dict[str, Any]:
    shard = data.shard
    if shard is None:
        raise ConfigError(
            "not a shard's report (it has no 'shard' entry): write each shard's with "
            "pytest --triton-shard K/N --triton-report PREFIX and merge the PREFIX.json files",
            path=source,
        )
    for key in ("index", "total", "run", "contracts"):
        if key not in shard:
            raise ConfigError(f"its 'shard' entry has no {key!r}: not as pytest-triton writes it", path=source)
    return dict(shard)


def merge_reports(parts: Sequence[tuple[str, ReportData]]) -> ReportData:
    """One report of every shard of one run (``parts``: each report with the file it came from), in shard
    order; a ConfigError when they are not exactly the shards 1..N of one run."""
    if not parts:
        raise ConfigError("no reports to merge: give every shard's PREFIX.json")
    shards = [(source, data, _shard(source, data)) for source, data in parts]
    first_source, _, first = shards[0]
    for source, _, shard in shards[1:]:
        for key, what in _SAME:
            if shard[key] != first[key]:
                raise ConfigError(
                    f"{what} {shard[key]!r} differs from {first_source}'s {first[key]!r}: the reports are not "
                    "shards of one run; merge the shards of one run (one workflow run, one Job) only",
                    path=source,
                )
    by_index: dict[int, str] = {}
    for source, _, shard in shards:
        if shard["index"] in by_index:
            raise ConfigError(
                f"shard {shard['index']}/{shard['total']} is also {by_index[shard['index']]}", path=source
            )
        by_index[shard["index"]] = source
    total = int(first["total"])
    missing = [index for index in range(1, total + 1) if index not in by_index]
    if missing or len(by_index) != total:
        raise ConfigError(
            f"shard(s) {', '.join(f'{i}/{total}' for i in missing)} missing: have "
            f"{', '.join(f'{i}/{total}' for i in sorted(by_index))} of {first['run']}; give every shard's report "
            "(a shard job that failed before writing its report is a failed run)"
        )
    shards.sort(key=lambda part: int(part[2]["index"]))
    explanations: dict[str, None] = {}
    for source, data, shard in shards:
        rows = len(data.results) + len(data.relative) + len(data.parity)
        variants = ", ".join(shard.get("variants", ())) or "none"
        measured = data.provenance.lines()[0] if data.provenance is not None else "no provenance"
        explanations[
            f"shard {shard['index']}/{total} ({source}, index from {shard.get('index_from', '?')}): "
            f"{len(data.contracts)} contract item(s), {rows} row(s); variants {variants}; {measured}"
        ] = None
    for _, data, _ in shards:
        explanations.update(dict.fromkeys(data.explanations))
    return ReportData(
        results=tuple(r for _, data, _ in shards for r in data.results),
        relative=tuple(r for _, data, _ in shards for r in data.relative),
        parity=tuple(p for _, data, _ in shards for p in data.parity),
        provenance=shards[0][1].provenance,
        explanations=(f"merged from {total} shard(s) of {first['run']}", *explanations),
        contracts=tuple(o for _, data, _ in shards for o in data.contracts),
    )


def failures(data: ReportData) -> list[str]:
    """What failed: contract items as pytest had them, then rows that failed without an item of their own."""
    failed = [o.get("item", "?") for o in data.contracts if o.get("status") == "failed"]
    failed += [f"latency row {r.variant}" for r in data.results if r.verdict.status == "fail"]
    failed += [f"relative budget {r.budget.label}" for r in data.relative if r.status == "fail"]
    failed += [f"parity row {p.label}" for p in data.parity if not p.ok]
    return failed


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_triton report",
        description="Merge the report JSON files of a sharded run (--triton-shard K/N) into one report and verdict",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    merge = commands.add_parser(
        "merge",
        help="Every shard's PREFIX.json into one PATH.json, PATH.md and PATH.svg; exit 1 if anything failed",
        description=__doc__.split("\n\n", 1)[1] if __doc__ else None,
    )
    merge.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json")
    merge.add_argument("--out", required=True, metavar="PATH", help="Prefix of the merged report's files")
    return parser


def report_main(argv: Sequence[str]) -> int:
    from pytest_triton.bench.report import write_report
    from pytest_triton.bench.report_load import read_report_json
    from pytest_triton.bench.report_load import report_from_json

    args = _parser().parse_args(list(argv))
    try:
        parts = [(str(path), report_from_json(read_report_json(path), source=str(path))) for path in args.reports]
        merged = merge_reports(parts)
    except ConfigError as exc:
        print(f"report merge: {exc}", file=sys.stderr)
        return 2
    for path in write_report(merged, args.out):
        print(f"report written: {path}")
    failed = failures(merged)
    items = len(merged.contracts)
    if failed:
        print(f"verdict: FAIL: {len(failed)} failed of {items} contract item(s): {'; '.join(failed)}")
        return 1
    print(f"verdict: PASS: {items} contract item(s) over {len(parts)} shard(s), none failed")
    return 0
