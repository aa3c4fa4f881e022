"""A light position index over config.pbtxt text.

protobuf's Python text_format parser does not say where each field was read, so
after a successful parse we read the text's tokens once more and remember the line and
column of every field name, keyed by its path: ``("input", 1, "dims")`` is the
``dims`` field of the second ``input``. Repeated scalars get one key per element
(``("input", 1, "dims", 0)``).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

from pytest_triton.config.tokens import END
from pytest_triton.config.tokens import PUNCT
from pytest_triton.config.tokens import STRING
from pytest_triton.config.tokens import WORD
from pytest_triton.config.tokens import TokenStream
from pytest_triton.config.tokens import quiet_escapes
from pytest_triton.config.tokens import tokenize

__all__ = ["Path", "PositionIndex", "index_positions", "index_tokens", "tokenize"]

Path = tuple[str | int, ...]


@dataclass
class PositionIndex:
    """Where each field of a parsed config stands in its text (1-based line and column)."""

    positions: Mapping[Path, tuple[int, int]] = field(default_factory=dict)
    # the literal of each scalar value, strings unquoted and unescaped (map keys need it:
    # protobuf maps keep no order, so an entry is found again by its written key)
    literals: Mapping[Path, str] = field(default_factory=dict)

    def find(self, *path: str | int) -> tuple[int, int]:
        """Position of ``path``, else of its nearest recorded ancestor, else (1, 1)."""
        key: Path = tuple(path)
        while key:
            if key in self.positions:
                return self.positions[key]
            key = key[:-1]
        return (1, 1)

    def line(self, *path: str | int) -> int:
        return self.find(*path)[0]

    def map_entries(self, *prefix: str | int) -> list[tuple[int, str, str]]:
        """``(index, key, value)`` of each entry of the map field at ``prefix``, in text order."""
        entries: list[tuple[int, str, str]] = []
        while (*prefix, len(entries)) in self.positions:
            index = len(entries)
            key = self.literals.get((*prefix, index, "key", 0), "")
            entries.append((index, key, self.literals.get((*prefix, index, "value", 0), "")))
        return entries

    def map_entry(self, *prefix: str | int, key: str | None = None, value: str | None = None) -> Path:
        """Path of the map entry with ``key`` (the last one: protobuf keeps the last) or with
        ``value`` (the first one); ``prefix`` itself when there is none."""
        hits = [i for i, k, v in self.map_entries(*prefix) if key in (None, k) and value in (None, v)]
        if not hits:
            return tuple(prefix)
        return (*prefix, hits[-1] if key is not None else hits[0])


_NO_TOKEN = (END, "", -1)


class _Scanner:
    """Walks a field's tokens as protobuf's grammar nests them, recording the offsets of names and values.

    A list of scalars keeps its first value's offset under that value's path and the others in one array
    (``runs``, by the first value's path): a list of a million dims costs 8 bytes per value, not a tuple key."""

    def __init__(self, tokens: TokenStream) -> None:
        self.tokens = tokens
        self.offsets: dict[Path, int] = {}
        self.runs: dict[Path, array[int]] = {}
        self.runs_by_field: dict[Path, list[tuple[int, array[int]]]] = {}
        self.stream: Iterator[tuple[int, str, int]] = iter(())
        self.kind, self.text, self.offset = _NO_TOKEN

    def start(self, offset: int) -> None:
        self.stream = self.tokens.tokens_from(offset)
        self.advance()

    def advance(self) -> None:
        self.kind, self.text, self.offset = next(self.stream, _NO_TOKEN)

    def message(self, prefix: Path, closer: bool) -> None:
        counts: dict[str, int] = {}
        while self.kind != END:
            if self.kind == PUNCT:
                text = self.text
                self.advance()
                if text in "}>" and closer:
                    return
                continue  # stray separators (, ;) between fields, or an unmatched closer at the top
            self.field(prefix, counts)

    def field(self, prefix: Path, counts: dict[str, int]) -> None:
        """The field whose name is the current token, and its value or list of values."""
        name = self.text.strip("[]")
        self.offsets.setdefault((*prefix, name), self.offset)
        self.advance()
        if self.text == ":":
            self.advance()
        if self.kind == END:
            return
        if self.text == "[":
            self.advance()
            self._list(prefix, name, counts)
        else:
            index = counts.get(name, 0)
            counts[name] = index + 1
            self._value(prefix, name, index)

    def _value(self, prefix: Path, name: str, index: int) -> None:
        kind, text = self.kind, self.text
        path = (*prefix, name, index)
        self.offsets.setdefault(path, self.offset)
        self.advance()
        if kind == PUNCT and text in "{<":
            self.message(path, True)
        elif kind == STRING:  # adjacent strings concatenate
            while self.kind == STRING:
                self.advance()

    def _list(self, prefix: Path, name: str, counts: dict[str, int]) -> None:
        first: int | None = None  # the index of the scalar value the ones after it in this list follow
        run: array[int] | None = None
        while self.kind != END:
            text = self.text
            if text == "]":
                self.advance()
                return
            if text == ",":
                self.advance()
                continue
            index = counts.get(name, 0)
            counts[name] = index + 1
            kind = self.kind
            scalar = kind in (WORD, STRING)
            if first is not None and scalar:
                if run is None:
                    run = self.runs[(*prefix, name, first)] = array("q")
                    self.runs_by_field.setdefault((*prefix, name), []).append((first, run))
                run.append(self.offset)
                self.advance()
                while kind == STRING and self.kind == STRING:  # adjacent strings concatenate
                    self.advance()
                continue
            self._value(prefix, name, index)
            first, run = (index if scalar else None), None


def _top_level_fields(tokens: TokenStream) -> dict[str, array[int]]:
    """The offset of each top-level field's name, by name, in text order; values are skipped (balanced
    brackets, adjacent strings), not indexed."""
    starts: dict[str, array[int]] = {}
    stream = iter(tokens)
    kind, text, offset = next(stream, _NO_TOKEN)
    while kind != END:
        if kind == PUNCT:
            kind, text, offset = next(stream, _NO_TOKEN)
            continue
        starts.setdefault(text.strip("[]"), array("q")).append(offset)
        kind, text, offset = next(stream, _NO_TOKEN)
        if text == ":":
            kind, text, offset = next(stream, _NO_TOKEN)
        if kind == END:
            break
        if kind == PUNCT and text in "[{<":
            depth = 0
            while kind != END:
                if kind == PUNCT:
                    if text in "[{<":
                        depth += 1
                    elif text in "]}>":
                        depth -= 1
                kind, text, offset = next(stream, _NO_TOKEN)
                if depth == 0:
                    break
        else:
            was_string = kind == STRING
            kind, text, offset = next(stream, _NO_TOKEN)
            while was_string and kind == STRING:
                kind, text, offset = next(stream, _NO_TOKEN)
    return starts


def _unquote(literal: str) -> str:
    inner = literal[1:-1]
    if "\\" not in inner:
        return inner
    from google.protobuf import text_encoding

    try:
        with quiet_escapes():
            return text_encoding.CUnescape(inner).decode("utf-8", "replace")
    except ValueError:
        return inner


class _FieldScans:
    """The offsets of each top-level field, scanned when a path under it is first asked: a config of 200,000
    ``parameters`` entries holds no index of them unless a finding needs one. Literals are read again from the
    text at their offsets."""

    def __init__(self, tokens: TokenStream, starts: dict[str, array[int]] | None, *, at_once: bool) -> None:
        self.tokens = tokens
        self.scanner = _Scanner(tokens)
        self.offsets, self.runs = self.scanner.offsets, self.scanner.runs
        self._pending = starts
        if at_once:
            self.scan_all()

    @property
    def pending(self) -> dict[str, array[int]]:
        if self._pending is None:
            self._pending = _top_level_fields(self.tokens)
        return self._pending

    def scan(self, key: object) -> None:
        if not isinstance(key, tuple) or not key or (self._pending is not None and not self._pending):
            return
        starts = self.pending.pop(key[0], None) if isinstance(key[0], str) else None
        if starts is None:
            return
        counts: dict[str, int] = {}
        scanner = self.scanner
        for start in starts:
            scanner.start(start)
            scanner.field((), counts)
        scanner.stream = iter(())

    def scan_all(self) -> None:
        for name in list(self.pending):
            self.scan((name,))

    def offset(self, key: Path) -> int | None:
        found = self.offsets.get(key)
        if found is not None or len(key) < 2 or not isinstance(key[-1], int):
            return found
        for first, run in self.scanner.runs_by_field.get(key[:-1], ()):
            at = key[-1] - first - 1
            if 0 <= at < len(run):
                return run[at]
        return None

    def paths(self) -> Iterator[Path]:
        """Every recorded path, in the order it was scanned (a list's values in text order)."""
        self.scan_all()
        for key in self.offsets:
            yield key
            run = self.runs.get(key)
            if run:
                head, first = key[:-1], key[-1]
                assert isinstance(first, int)
                for at in range(len(run)):
                    yield (*head, first + 1 + at)

    def literal(self, key: Path) -> str | None:
        """The scalar value at ``key`` as written (strings unquoted, unescaped and joined), else None."""
        if not key or not isinstance(key[-1], int):
            return None
        offset = self.offset(key)
        if offset is None:
            return None
        stream = self.tokens.tokens_from(offset)
        kind, text, _ = next(stream)
        if kind == PUNCT and text in "{<":
            return None
        if kind != STRING:
            return text
        parts = [_unquote(text)]
        for kind, text, _ in stream:
            if kind != STRING:
                break
            parts.append(_unquote(text))
        return "".join(parts)


class _Positions(Mapping[Path, tuple[int, int]]):
    """Field path → (line, column), kept as text offsets and turned into a position when asked:
    a config of many small fields holds one int per field instead of a tuple."""

    def __init__(self, scans: _FieldScans) -> None:
        self.scans = scans

    def __getitem__(self, key: Path) -> tuple[int, int]:
        self.scans.scan(key)
        offset = self.scans.offset(key)
        if offset is None:
            raise KeyError(key)
        return self.scans.tokens.position(offset)

    def __contains__(self, key: object) -> bool:
        self.scans.scan(key)
        return isinstance(key, tuple) and self.scans.offset(key) is not None

    def __iter__(self) -> Iterator[Path]:
        return self.scans.paths()

    def __len__(self) -> int:
        return sum(1 for _ in self.scans.paths())


class _Literals(Mapping[Path, str]):
    """Field path → the literal of a scalar value (see :class:`PositionIndex`), read from the text when asked."""

    def __init__(self, scans: _FieldScans) -> None:
        self.scans = scans

    def __getitem__(self, key: Path) -> str:
        self.scans.scan(key)
        found = self.scans.literal(key) if isinstance(key, tuple) else None
        if found is None:
            raise KeyError(key)
        return found

    def __contains__(self, key: object) -> bool:
        self.scans.scan(key)
        return isinstance(key, tuple) and self.scans.literal(key) is not None

    def __iter__(self) -> Iterator[Path]:
        return (key for key in self.scans.paths() if self.scans.literal(key) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def index_tokens(
    tokens: TokenStream, *, starts: dict[str, array[int]] | None = None, at_once: bool = False
) -> PositionIndex:
    """Index the field positions and literals of text that protobuf accepts; each top-level field is scanned
    when first asked, or all of them now with ``at_once``. ``starts``: where each top-level field's name is
    written (as the fast parser returns them), else found on first use."""
    scans = _FieldScans(tokens, starts, at_once=at_once)
    return PositionIndex(_Positions(scans), _Literals(scans))


def index_positions(text: str, *, max_literal_bytes: int | None = None, path: str = "config.pbtxt") -> PositionIndex:
    """Index the field positions and literals of config text that protobuf accepted."""
    tokens = tokenize(text, max_literal_bytes=max_literal_bytes, path=path)
    tokens.check_lengths()
    return index_tokens(tokens)
