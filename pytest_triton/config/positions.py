"""A light position index over config.pbtxt text.

protobuf's Python text_format parser does not say where each field was read, so
after a successful parse we scan the text once more and remember the line and
column of every field name, keyed by its path: ``("input", 1, "dims")`` is the
``dims`` field of the second ``input``. Repeated scalars get one key per element
(``("input", 1, "dims", 0)``). Comments are kept per line for suppressions.
"""

from __future__ import annotations

import bisect
import re
import sys
from array import array
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field

from pytest_triton.errors import ConfigLimitExceeded

Path = tuple[str | int, ...]

# Python's re keeps a backtracking record per iteration of a repeated group, so a string
# pattern written as ``(?:[^"\\]|\\.)*`` costs memory per character of a literal. The unrolled form
# repeats a character class (no record per character); possessive quantifiers (Python 3.11+) drop
# the records per escape too.
_RUN = "*+" if sys.version_info >= (3, 11) else "*"
_STRING = "|".join(rf"{q}[^{q}\\\n]{_RUN}(?:\\.[^{q}\\\n]{_RUN}){_RUN}{q}" for q in ('"', "'"))
_TOKEN = re.compile(
    rf"""
    (?P<comment>\#[^\n]*)
  | (?P<string>{_STRING})
  | (?P<punct>[{{}}\[\]:,;<>])
  | (?P<word>[^\s{{}}\[\]:,;<>"'\#]+)
  | (?P<other>\S)
    """,
    re.VERBOSE,
)
_NEWLINE = re.compile("\n")


@dataclass
class PositionIndex:
    """Where each field of a parsed config stands in its text (1-based line and column)."""

    positions: Mapping[Path, tuple[int, int]] = field(default_factory=dict)
    comments: dict[int, str] = field(default_factory=dict)
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


class _Lines:
    """Offset → (line, column), by bisecting the offsets where lines start."""

    def __init__(self, text: str) -> None:
        self.starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1


@dataclass
class Tokenized:
    """config.pbtxt text cut into tokens once, for the fast parser and the position index.

    Token ``i`` is ``kinds[i]`` (the first letter of its group: ``w``ord, ``s``tring, ``p``unctuation,
    ``o``ther), ``texts[i]`` and ``offsets[i]`` in the text. Three flat columns rather than a tuple per token:
    a config of a million small tokens holds about 17 bytes per token instead of about 100 (a punctuation
    character is a shared one-character string and a field name is interned, so only literals are new strings)."""

    text: str
    kinds: str
    texts: list[str]
    offsets: array[int]
    comments: dict[int, str]
    lines: _Lines

    def without_other(self) -> Tokenized:
        """The same tokens less those of kind ``o`` (characters outside the grammar, skipped)."""
        keep = [i for i, kind in enumerate(self.kinds) if kind != "o"]
        return Tokenized(
            self.text,
            "".join(self.kinds[i] for i in keep),
            [self.texts[i] for i in keep],
            array("q", (self.offsets[i] for i in keep)),
            self.comments,
            self.lines,
        )


def _tokenize(text: str, lines: _Lines, max_literal_bytes: int | None, path: str) -> Tokenized:
    """Tokens and comments; characters no token matches are skipped (protobuf accepted the text)."""
    kinds: list[str] = []
    texts: list[str] = []
    offsets = array("q")
    comments: dict[int, str] = {}
    intern = sys.intern
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "w"
        value = match.group()
        if max_literal_bytes is not None and len(value) > max_literal_bytes and kind != "comment":
            line, col = lines.position(match.start())
            raise ConfigLimitExceeded(
                f"a {'string' if kind == 'string' else 'value'} of {len(value):,} characters is longer "
                f"than max_literal_bytes={max_literal_bytes:,}: raise it with --max-literal-bytes=N (CLI) or "
                f"--triton-lint-limit max_literal_bytes=N (pytest)",
                path=path,
                line=line,
                col=col,
            )
        if kind == "comment":
            comments[lines.position(match.start())[0]] = value
        else:
            kinds.append(kind[0])
            texts.append(intern(value) if kind == "word" else value)
            offsets.append(match.start())
    return Tokenized(text, "".join(kinds), texts, offsets, comments, lines)


class _Scanner:
    """Walks the tokens as protobuf's grammar nests them, recording offsets of names and values."""

    def __init__(self, tokens: Tokenized) -> None:
        self.kinds, self.texts, self.token_offsets = tokens.kinds, tokens.texts, tokens.offsets
        self.end = len(tokens.kinds)
        self.i = 0
        self.offsets: dict[Path, int] = {}
        self.literals: dict[Path, str] = {}

    def message(self, prefix: Path, closer: bool) -> None:
        kinds, texts = self.kinds, self.texts
        counts: dict[str, int] = {}
        while self.i < self.end:
            if kinds[self.i] == "p":
                self.i += 1
                if texts[self.i - 1] in "}>" and closer:
                    return
                continue  # stray separators (, ;) between fields, or an unmatched closer at the top
            self.field(prefix, counts)

    def field(self, prefix: Path, counts: dict[str, int]) -> None:
        """The field whose name is the current token, and its value or list of values."""
        texts = self.texts
        name = texts[self.i].strip("[]")
        self.offsets.setdefault((*prefix, name), self.token_offsets[self.i])
        self.i += 1
        if self.i < self.end and texts[self.i] == ":":
            self.i += 1
        if self.i >= self.end:
            return
        if texts[self.i] == "[":
            self.i += 1
            self._list(prefix, name, counts)
        else:
            index = counts.get(name, 0)
            counts[name] = index + 1
            self._value(prefix, name, index)

    def top_level_fields(self) -> dict[str, list[int]]:
        """The token index of each top-level field's name, by name, in text order; values are skipped
        (balanced brackets, adjacent strings), not indexed."""
        kinds, texts, end = self.kinds, self.texts, self.end
        starts: dict[str, list[int]] = {}
        i = 0
        while i < end:
            if kinds[i] == "p":
                i += 1
                continue
            starts.setdefault(texts[i].strip("[]"), []).append(i)
            i += 1
            if i < end and texts[i] == ":":
                i += 1
            if i >= end:
                break
            if kinds[i] == "p" and texts[i] in "[{<":
                depth = 0
                while i < end:
                    if kinds[i] == "p":
                        text = texts[i]
                        if text in "[{<":
                            depth += 1
                        elif text in "]}>":
                            depth -= 1
                    i += 1
                    if depth == 0:
                        break
            else:
                i += 1
                while i < end and kinds[i] == "s" and kinds[i - 1] == "s":
                    i += 1
        return starts

    def _value(self, prefix: Path, name: str, index: int) -> None:
        i = self.i
        kind, text, offset = self.kinds[i], self.texts[i], self.token_offsets[i]
        self.i += 1
        path = (*prefix, name, index)
        self.offsets.setdefault(path, offset)
        if kind == "p" and text in "{<":
            self.message(path, True)
        elif kind == "s":  # adjacent strings concatenate
            parts = [_unquote(text)]
            while self.i < self.end and self.kinds[self.i] == "s":
                parts.append(_unquote(self.texts[self.i]))
                self.i += 1
            self.literals[path] = "".join(parts)
        else:
            self.literals[path] = text

    def _list(self, prefix: Path, name: str, counts: dict[str, int]) -> None:
        while self.i < self.end:
            text = self.texts[self.i]
            if text == "]":
                self.i += 1
                return
            if text == ",":
                self.i += 1
                continue
            index = counts.get(name, 0)
            counts[name] = index + 1
            self._value(prefix, name, index)


def _unquote(literal: str) -> str:
    inner = literal[1:-1]
    if "\\" not in inner:
        return inner
    from google.protobuf import text_encoding

    try:
        return text_encoding.CUnescape(inner).decode("utf-8", "replace")
    except ValueError:
        return inner


class _FieldScans:
    """The offsets and literals of each top-level field, scanned when a path under it is first asked: a config
    of 200,000 ``parameters`` entries holds no index of them unless a finding needs one."""

    def __init__(self, tokenized: Tokenized, *, at_once: bool) -> None:
        scanner = _Scanner(tokenized)
        self.offsets, self.literals = scanner.offsets, scanner.literals
        if at_once:  # one pass over the whole text
            scanner.message((), False)
            self.scanner, self.pending = None, {}
        else:
            self.scanner, self.pending = scanner, scanner.top_level_fields()

    def scan(self, key: object) -> None:
        if not isinstance(key, tuple) or not key or key[0] not in self.pending or self.scanner is None:
            return
        counts: dict[str, int] = {}
        for start in self.pending.pop(key[0]):
            self.scanner.i = start
            self.scanner.field((), counts)
        if not self.pending:
            self.scanner = None  # every field scanned: the tokens can go

    def scan_all(self) -> None:
        for name in list(self.pending):
            self.scan((name,))


class _Positions(Mapping[Path, tuple[int, int]]):
    """Field path → (line, column), kept as text offsets and turned into a position when asked:
    a config of many small fields holds one int per field instead of a tuple."""

    def __init__(self, scans: _FieldScans, lines: _Lines) -> None:
        self.scans = scans
        self.lines = lines

    def __getitem__(self, key: Path) -> tuple[int, int]:
        self.scans.scan(key)
        return self.lines.position(self.scans.offsets[key])

    def __contains__(self, key: object) -> bool:
        self.scans.scan(key)
        return key in self.scans.offsets

    def __iter__(self) -> Iterator[Path]:
        self.scans.scan_all()
        return iter(self.scans.offsets)

    def __len__(self) -> int:
        self.scans.scan_all()
        return len(self.scans.offsets)


class _Literals(Mapping[Path, str]):
    """Field path → the literal of a scalar value (see :class:`PositionIndex`), scanned as positions are."""

    def __init__(self, scans: _FieldScans) -> None:
        self.scans = scans

    def __getitem__(self, key: Path) -> str:
        self.scans.scan(key)
        return self.scans.literals[key]

    def __contains__(self, key: object) -> bool:
        self.scans.scan(key)
        return key in self.scans.literals

    def __iter__(self) -> Iterator[Path]:
        self.scans.scan_all()
        return iter(self.scans.literals)

    def __len__(self) -> int:
        self.scans.scan_all()
        return len(self.scans.literals)


def tokenize(text: str, *, max_literal_bytes: int | None = None, path: str = "config.pbtxt") -> Tokenized:
    """Tokens, comments and line starts; with ``max_literal_bytes`` a longer token raises
    :class:`ConfigLimitExceeded` naming its position. Linear in time and memory."""
    return _tokenize(text, _Lines(text), max_literal_bytes, path)


def index_tokens(tokenized: Tokenized, *, at_once: bool = False) -> PositionIndex:
    """Index the field positions, literals and comments of text that protobuf accepts; each top-level field is
    scanned when first asked, or all of them now with ``at_once``."""
    if "o" in tokenized.kinds:
        tokenized = tokenized.without_other()
    scans = _FieldScans(tokenized, at_once=at_once)
    return PositionIndex(_Positions(scans, tokenized.lines), tokenized.comments, _Literals(scans))


def index_positions(text: str, *, max_literal_bytes: int | None = None, path: str = "config.pbtxt") -> PositionIndex:
    """Index the field positions, literals and comments of config text that protobuf accepted."""
    return index_tokens(tokenize(text, max_literal_bytes=max_literal_bytes, path=path))
