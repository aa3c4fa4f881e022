"""Late notes read themselves: the bench groups them by kind, each kind reads its own at once, and the notes
replace their placeholders in the results (the session's end does this through TritonBench.read_late)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from pytest_triton.bench.results import VariantResult
from pytest_triton.bench.session import TritonBench


@dataclass(frozen=True)
class CountedNote:
    """A stand-in kind of late note (the real one reads CloudWatch): its reads are recorded on the class."""

    text: str
    reads: ClassVar[list[tuple[tuple[str, ...], float]]] = []

    @property
    def placeholder(self) -> str:
        return f"{self.text}: read at session end"

    @classmethod
    def read_late(cls, notes: Sequence[CountedNote], *, wait_s: float, progress: Callable[[str], None]) -> list[str]:
        cls.reads.append((tuple(note.text for note in notes), wait_s))
        progress(f"read {len(notes)} counted note(s)")
        return [f"{note.text}: 42" for note in notes]


@dataclass(frozen=True)
class OtherNote(CountedNote):
    reads: ClassVar[list[tuple[tuple[str, ...], float]]] = []


def test_each_kind_reads_its_notes_at_once_and_they_replace_the_placeholders() -> None:
    bench = TritonBench(hardware="cpu")
    for variant, late in (("a", CountedNote("one")), ("b", OtherNote("two")), ("c", CountedNote("three"))):
        bench.add(VariantResult.skipped(variant, "cpu", "stand-in row"), late=late)
    assert "one: read at session end" in bench.results[0].notes
    lines: list[str] = []
    by_variant = bench.read_late(wait_s=5.0, progress=lines.append)
    assert CountedNote.reads == [(("one", "three"), 5.0)]
    assert OtherNote.reads == [(("two",), 5.0)]
    assert by_variant == {"a": ["one: 42"], "b": ["two: 42"], "c": ["three: 42"]}
    assert [r.notes[-1] for r in bench.results] == ["one: 42", "two: 42", "three: 42"]
    assert lines == ["read 2 counted note(s)", "read 1 counted note(s)"]
    assert bench.late == []
