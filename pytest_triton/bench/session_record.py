"""What a session's bench keeps, and its report: the rows, relative verdicts and parity records measured so far,
the budgets they are judged by, the notes read only after the tests, and the terminal tables and report files.

:class:`~pytest_triton.bench.session.TritonBench` measures into this record; the plugin's summary prints
:meth:`SessionRecord.summary_lines` and, with ``--triton-report PATH``, :meth:`SessionRecord.write_report` writes
``PATH.json``, ``PATH.md`` and ``PATH.svg``. A merge of shards' reports and an xdist controller fill one too.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Protocol

from pytest_triton.bench.budgets import BudgetFile
from pytest_triton.bench.budgets import HardwarePolicy
from pytest_triton.bench.parity_record import ParityRecord
from pytest_triton.bench.provenance import collect_provenance
from pytest_triton.bench.relative import RelativeResult
from pytest_triton.bench.report import ReportData
from pytest_triton.bench.report import table_lines
from pytest_triton.bench.report import write_report
from pytest_triton.bench.results import SideBySide
from pytest_triton.bench.results import UnstablePolicy
from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.results import assert_contracts
from pytest_triton.errors import TritonInconclusiveWarning

if TYPE_CHECKING:
    from pytest_triton.parity.tensors import LabelReport
    from pytest_triton.parity.tensors import ParityReport

__all__ = ["LateNote", "SessionRecord"]


class LateNote(Protocol):
    """A note a result can only get after the session's tests (CloudWatch publishes a SageMaker endpoint's split
    minutes after the requests): ``placeholder`` stands in the result's notes until :meth:`SessionRecord.settle`."""

    @property
    def placeholder(self) -> str: ...

    @classmethod
    def read_late(cls, notes: Sequence[Any], *, wait_s: float, progress: Callable[[str], None]) -> list[str]:
        """The note of each of ``notes`` (all of this kind, read together), waiting up to ``wait_s`` seconds;
        ``progress`` gets lines for the terminal."""
        ...


class SessionRecord:
    """The results of one session on one hardware key, judged by ``budgets`` (None: every row is report-only).

    ``unstable`` is what an unstable measurement within budget does (``warn``: reported, passes; ``fail``),
    ``inconclusive`` what an INCONCLUSIVE relative budget does (``warn`` or ``fail``).
    """

    def __init__(
        self,
        *,
        hardware: str | None = None,
        budgets: BudgetFile | None = None,
        unstable: UnstablePolicy = "warn",
        inconclusive: UnstablePolicy = "warn",
    ) -> None:
        if hardware is None:
            from pytest_triton.hardware import hardware_key

            hardware = hardware_key()
        self.hardware = hardware
        self.hardware_source = ""  # where the key came from, when not this machine (a SageMaker endpoint's GPU)
        self.budgets = budgets
        self.unstable: UnstablePolicy = unstable
        self.inconclusive: UnstablePolicy = inconclusive
        self.results: list[VariantResult] = []
        self.relative: list[RelativeResult] = []
        self.parity: list[ParityRecord] = []
        self.explanations: list[str] = []  # the report's "Reading this report" (a merge of shards says so)
        self.triton_version: str | None = None
        self.device = ""  # the GPU(s) this session's servers see, e.g. "GPU 1": a note on every row it adds
        # contracts' own budget files, by path: the file and the variants held to it
        self.declared_budgets: dict[Path, tuple[BudgetFile, list[str]]] = {}
        self.late: list[tuple[int, LateNote]] = []  # (index in results, what to read at the session's end)

    @property
    def hardware_policy(self) -> HardwarePolicy:
        """What this hardware's budgets assert (absolute and relative, or relative only) and its batch sizes."""
        return self.budgets.policy(self.hardware) if self.budgets else HardwarePolicy()

    def enforcement_text(self) -> str:
        """One line for the report and the terminal: what is asserted on this hardware, and why."""
        text = self._enforcement(self.budgets)
        if self.declared_budgets:
            own = "; ".join(
                f"{path.name} for {', '.join(variants)}: {self._enforcement(budgets)}"
                for path, (budgets, variants) in self.declared_budgets.items()
            )
            if self.budgets is None:
                text = f"contracts' own budget files: {own}; no session budget file: others are reported only"
            else:
                text = f"contracts' own budget files: {own}; the session's budget file for the others: {text}"
        if self.hardware_source:
            return f"hardware key {self.hardware!r} from {self.hardware_source}; " + text
        return text

    def use_declared_budgets(self, budgets: BudgetFile, variant: str) -> None:
        """Note that ``variant`` was held to a declaration's own budget file instead of the session's (the
        enforcement line says which budgets applied where)."""
        key = budgets.path or Path("(a contracts file's budgets)")
        _, variants = self.declared_budgets.setdefault(key, (budgets, []))
        if variant not in variants:
            variants.append(variant)

    def _enforcement(self, budgets: BudgetFile | None) -> str:
        policy = budgets.policy(self.hardware) if budgets else HardwarePolicy()
        if budgets is None:
            return "no budget file: everything is measured and reported only"
        if self.hardware not in budgets.budgets:
            return f"no budgets for {self.hardware!r}: everything is measured and reported only"
        if policy.enforce_absolute:
            return f"absolute and relative budgets of {self.hardware!r} are asserted"
        return (
            f"relative budgets of {self.hardware!r} are asserted; absolute numbers are reported, "
            f"not asserted ({policy.reason})"
        )

    def add(self, result: VariantResult, *, late: LateNote | None = None) -> VariantResult:
        """Record ``result``; ``late`` is read at the session's end, its note replacing its placeholder."""
        if self.device:
            result = dataclasses.replace(result, notes=(*result.notes, f"ran on {self.device}"))
        if late is not None:
            result = dataclasses.replace(result, notes=(*result.notes, late.placeholder))
            self.late.append((len(self.results), late))
        self.results.append(result)
        return result

    def settle(self, notes: Sequence[str]) -> list[VariantResult]:
        """Put the session-end ``notes`` (one per entry of ``late``, in order) in place of their placeholders;
        returns the results changed."""
        if len(notes) != len(self.late):
            raise ValueError(f"{len(notes)} notes for {len(self.late)} late reads")
        changed = []
        for (index, late), note in zip(self.late, notes):
            result = self.results[index]
            replaced = tuple(note if n == late.placeholder else n for n in result.notes)
            self.results[index] = dataclasses.replace(result, notes=replaced)
            changed.append(self.results[index])
        self.late = []
        return changed

    def read_late(self, *, wait_s: float, progress: Callable[[str], None]) -> dict[str, list[str]]:
        """Read every late note (each kind reads its own together, waiting up to ``wait_s`` seconds) and
        :meth:`settle` them; returns the notes by variant."""
        positions: dict[type[LateNote], list[int]] = {}
        for position, (_, late) in enumerate(self.late):
            positions.setdefault(type(late), []).append(position)
        notes = [late.placeholder for _, late in self.late]
        for kind, where in positions.items():
            read = kind.read_late([self.late[position][1] for position in where], wait_s=wait_s, progress=progress)
            for position, note in zip(where, read):
                notes[position] = note
        by_variant: dict[str, list[str]] = {}
        for result, note in zip(self.settle(notes), notes):
            by_variant.setdefault(result.variant, []).append(note)
        return by_variant

    def record_skipped(self, variant: str, reason: str) -> VariantResult:
        """Record ``variant`` as SKIPPED with ``reason``: shown in the report, never as passed.

        The test then skips itself (``pytest.skip(reason)``): this package does not import pytest.
        """
        budget = self.budgets.lookup(self.hardware, variant) if self.budgets else None
        return self.add(VariantResult.skipped(variant, self.hardware, reason, budget=budget))

    def record_parity(
        self,
        variant: str,
        parity: ParityReport | None,
        labels: LabelReport | None = None,
        *,
        transport: str = "",
    ) -> ParityRecord:
        """Keep a parity comparison (from :func:`pytest_triton.parity.compare` / ``compare_labels``) for the report."""
        if self.device:
            transport = f"{transport}, ran on {self.device}" if transport else f"ran on {self.device}"
        record = ParityRecord.of(variant, parity, labels, transport=transport)
        self.parity.append(record)
        return record

    def check(self, result: VariantResult | SideBySide, *, allow_unstable: bool | None = None) -> None:
        """Assert ``result`` (one variant, or a side-by-side run with its relative budgets) is within budget.

        Report-only results pass; an unstable one within budget fails only under ``triton_unstable = fail``
        (``allow_unstable`` overrides the session's choice); an INCONCLUSIVE relative budget warns
        (:class:`~pytest_triton.errors.TritonInconclusiveWarning`), or fails under ``triton_inconclusive = fail``.
        """
        __tracebackhide__ = True
        unstable: UnstablePolicy = self.unstable
        if allow_unstable is not None:
            unstable = "warn" if allow_unstable else "fail"
        if isinstance(result, SideBySide):
            assert_contracts(result.variants, result.relative, unstable=unstable, inconclusive=self.inconclusive)
            for open_answer in (r for r in result.relative if r.status == "inconclusive"):
                text = f"relative budget INCONCLUSIVE: {open_answer.budget.label}: {open_answer.reason}"
                warnings.warn(TritonInconclusiveWarning(text), stacklevel=2)
        else:
            assert_contracts([result], unstable=unstable)

    def report(self, root: Path | None = None) -> ReportData:
        """Everything measured and recorded so far, with the provenance gathered now."""
        provenance = collect_provenance(
            self.hardware,
            root=root,
            triton=self.triton_version,
            unstable=self.unstable,
            inconclusive=self.inconclusive,
            enforcement=self.enforcement_text(),
        )
        return ReportData(
            tuple(self.results), tuple(self.relative), tuple(self.parity), provenance, tuple(self.explanations)
        )

    def summary_lines(self) -> list[str]:
        """The terminal tables (empty when nothing was measured, skipped or compared)."""
        if not (self.results or self.parity):
            return []
        data = ReportData(tuple(self.results), tuple(self.relative), tuple(self.parity))
        choices = f"; triton_unstable={self.unstable}, triton_inconclusive={self.inconclusive}"
        return [*table_lines(data, self.unstable, self.inconclusive), self.enforcement_text() + choices]

    def write_report(self, path_prefix: str | Path, *, root: Path | None = None) -> list[Path]:
        return write_report(self.report(root), path_prefix)
