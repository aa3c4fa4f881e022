"""A light position index over config.pbtxt text.

protobuf's Python text_format parser does not say where each field was read, so
after a successful parse we scan the text once more and remember the line and
column of every field name, keyed by its path: ``("input", 1, "dims")`` is the
``dims`` field of the second ``input``. Repeated scalars get one key per element
(``("input", 1, "dims", 0)``). Comments are kept per line for suppressions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field

Path = tuple[str | int, ...]

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<punct>[{}\[\]:,;<>])
  | (?P<word>[^\s{}\[\]:,;<>"'\#]+)
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    line: int
    col: int


@dataclass
class PositionIndex:
    """Where each field of a parsed config stands in its text (1-based line and column)."""

    positions: dict[Path, tuple[int, int]] = field(default_factory=dict)
    comments: dict[int, str] = field(default_factory=dict)
    # the literal of each scalar value, strings unquoted and unescaped (map keys need it:
    # protobuf maps keep no order, so an entry is found again by its written key)
    literals: dict[Path, str] = field(default_factory=dict)

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


def _tokenize(text: str) -> tuple[list[_Tok], dict[int, str]]:
    tokens: list[_Tok] = []
    comments: dict[int, str] = {}
    line, line_start, pos = 1, 0, 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:  # unreadable character: the parser has already accepted the text
            pos += 1
            continue
        kind = match.lastgroup or ""
        value = match.group()
        if kind == "comment":
            comments[line] = value
        elif kind != "ws":
            tokens.append(_Tok(kind, value, line, match.start() - line_start + 1))
        newlines = value.count("\n")
        if newlines:
            line += newlines
            line_start = match.start() + value.rindex("\n") + 1
        pos = match.end()
    return tokens, comments


class _Scanner:
    def __init__(self, tokens: list[_Tok]) -> None:
        self.tokens = tokens
        self.i = 0
        self.positions: dict[Path, tuple[int, int]] = {}
        self.literals: dict[Path, str] = {}

    def peek(self) -> _Tok | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> _Tok | None:
        tok = self.peek()
        self.i += 1
        return tok

    def message(self, prefix: Path, closer: str | None) -> None:
        counts: dict[str, int] = {}
        while (tok := self.peek()) is not None:
            if tok.kind == "punct" and tok.text in "}>":
                if closer is not None:
                    self.take()
                    return
                self.take()
                continue
            self.take()
            if tok.kind == "punct":  # stray separators (, ;) between fields
                continue
            name = tok.text.strip("[]")
            self.positions.setdefault((*prefix, name), (tok.line, tok.col))
            nxt = self.peek()
            if nxt is not None and nxt.text == ":":
                self.take()
                nxt = self.peek()
            if nxt is None:
                return
            if nxt.text == "[":
                self.take()
                self._list(prefix, name, counts)
            else:
                index = counts.get(name, 0)
                counts[name] = index + 1
                self._value(prefix, name, index)

    def _value(self, prefix: Path, name: str, index: int) -> None:
        tok = self.take()
        if tok is None:
            return
        path = (*prefix, name, index)
        self.positions.setdefault(path, (tok.line, tok.col))
        if tok.text in "{<":
            self.message(path, "}" if tok.text == "{" else ">")
        elif tok.kind == "string":  # adjacent strings concatenate
            parts = [_unquote(tok.text)]
            while (nxt := self.peek()) is not None and nxt.kind == "string":
                parts.append(_unquote(nxt.text))
                self.take()
            self.literals[path] = "".join(parts)
        else:
            self.literals[path] = tok.text

    def _list(self, prefix: Path, name: str, counts: dict[str, int]) -> None:
        while (tok := self.peek()) is not None:
            if tok.text == "]":
                self.take()
                return
            if tok.text == ",":
                self.take()
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


def index_positions(text: str) -> PositionIndex:
    """Index the field positions, literals and comments of config text that protobuf accepted."""
    tokens, comments = _tokenize(text)
    scanner = _Scanner(tokens)
    scanner.message((), None)
    return PositionIndex(scanner.positions, comments, scanner.literals)
