"""The one TOML reader: a file read through the guarded reader, parsed by tomllib, and the 1-based line and
column of every key, so that an error about a value points at the key that set it.

tomllib gives values without positions. :func:`key_positions` walks the text once more (it is valid TOML by
then) and records where each key path is written: a ``[table]`` or ``[[array]]`` header, a ``key = value`` line,
a dotted key, a key of an inline table. Elements of an array of tables carry their index in the path
(``("latency", "relative", 1, "max_ratio")``).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_triton.errors import ConfigError

if TYPE_CHECKING:
    from pytest_triton.archive.files import FileKind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["KeyPath", "TomlDocument", "dotted", "key_positions", "parse_toml", "read_toml"]

KeyPath = tuple["str | int", ...]
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.S)
_SIMPLE = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\", "e": "\x1b"}


def dotted(keys: KeyPath) -> str:
    """A key path as an error names it: ``latency.relative[0].max_ratio``."""
    text = ""
    for part in keys:
        text += f"[{part}]" if isinstance(part, int) else f"{'.' if text else ''}{part}"
    return text


@dataclass(frozen=True)
class TomlDocument:
    """A parsed TOML file: its data, and where each key path is written (1-based line, column)."""

    path: Path
    data: dict[str, Any]
    positions: Mapping[KeyPath, tuple[int, int]] = field(repr=False)

    def position(self, keys: KeyPath) -> tuple[int, int]:
        """Where ``keys`` is written; else its nearest written parent; (0, 0) when none is (a missing table).

        An index may be left out of a path into an array of tables: the first element that has the rest is
        taken."""
        for length in range(len(keys), 0, -1):
            part = keys[:length]
            if part in self.positions:
                return self.positions[part]
            plain = tuple(k for k in part if isinstance(k, str))
            found = [(at, p) for p, at in self.positions.items() if tuple(k for k in p if isinstance(k, str)) == plain]
            if found:
                return min(found)[0]
        return (0, 0)

    def error(self, keys: KeyPath, message: str) -> ConfigError:
        """A ConfigError at ``keys``'s position in this file."""
        line, col = self.position(keys)
        return ConfigError(message, path=str(self.path), line=line, col=col)


def parse_toml(text: str, path: Path) -> TomlDocument:
    """``text`` parsed; a syntax error is a ConfigError at tomllib's 1-based line and column."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"\(at line (\d+), column (\d+)\)", str(exc))
        line, col = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc)) or str(exc)
        raise ConfigError(f"not valid TOML: {reason}", path=str(path), line=line, col=col) from None
    return TomlDocument(path, data, key_positions(text))


def read_toml(path: Path, kind: FileKind) -> TomlDocument:
    """A TOML file of ``kind`` read through the guarded reader, within its kind's limits."""
    from pytest_triton.archive.files import read_file_text

    return parse_toml(read_file_text(path, kind), path)


# -- positions --------------------------------------------------------------------------------------------------


class _Scanner:
    """A walk over valid TOML that records where keys are; values are skipped, never interpreted."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0
        self.line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
        self.found: dict[KeyPath, tuple[int, int]] = {}
        self.counts: dict[KeyPath, int] = {}  # elements seen of each array of tables

    def where(self, offset: int) -> tuple[int, int]:
        low, high = 0, len(self.line_starts) - 1
        while low < high:  # the last line start at or before offset
            mid = (low + high + 1) // 2
            if self.line_starts[mid] <= offset:
                low = mid
            else:
                high = mid - 1
        return low + 1, offset - self.line_starts[low] + 1

    def note(self, path: KeyPath, offset: int) -> None:
        self.found.setdefault(path, self.where(offset))

    def peek(self, count: int = 1) -> str:
        return self.text[self.at : self.at + count]

    def blanks(self, newlines: bool) -> None:
        """Skip spaces, tabs and comments (and newlines too when ``newlines``)."""
        while self.at < len(self.text):
            char = self.text[self.at]
            if char in " \t" or (newlines and char in "\r\n"):
                self.at += 1
            elif char == "#":
                end = self.text.find("\n", self.at)
                self.at = len(self.text) if end < 0 else end
            else:
                return

    def key(self) -> list[tuple[str, int]]:
        """A dotted key: each part with its offset."""
        parts = []
        while True:
            self.blanks(False)
            start = self.at
            if self.peek() in ('"', "'"):
                parts.append((self.string(), start))
            else:
                match = _BARE.match(self.text, self.at)
                if match is None:
                    raise ValueError(f"no key at offset {self.at}")
                parts.append((match.group(), start))
                self.at = match.end()
            self.blanks(False)
            if self.peek() != ".":
                return parts
            self.at += 1

    def string(self) -> str:
        quote = self.peek()
        if self.peek(3) == quote * 3:
            end = self.text.find(quote * 3, self.at + 3)
            while self.text[end + 3 : end + 4] == quote:  # up to two quotes may close a multi-line string
                end += 1
            if quote == '"':
                while self._escaped(end):
                    end = self.text.find(quote * 3, end + 1)
            raw, self.at = self.text[self.at + 3 : end], end + 3
            return raw
        if quote == "'":
            end = self.text.index("'", self.at + 1)
            raw, self.at = self.text[self.at + 1 : end], end + 1
            return raw
        end = self.at + 1
        while self.text[end] != '"':
            end += 2 if self.text[end] == "\\" else 1
        raw, self.at = self.text[self.at + 1 : end], end + 1
        return _ESCAPE.sub(_unescape, raw)

    def _escaped(self, quote_at: int) -> bool:
        slashes = 0
        while self.text[quote_at - 1 - slashes] == "\\":
            slashes += 1
        return slashes % 2 == 1

    def value(self, path: KeyPath) -> None:
        self.blanks(False)
        char = self.peek()
        if char in ('"', "'"):
            self.string()
        elif char == "[":
            self.at += 1
            index = 0
            while True:
                self.blanks(True)
                if self.peek() == "]":
                    self.at += 1
                    return
                self.note((*path, index), self.at)
                self.value((*path, index))
                index += 1
                self.blanks(True)
                if self.peek() == ",":
                    self.at += 1
        elif char == "{":
            self.at += 1
            while True:
                self.blanks(False)
                if self.peek() == "}":
                    self.at += 1
                    return
                self.assignment(path)
                self.blanks(False)
                if self.peek() == ",":
                    self.at += 1
        else:  # a number, a boolean or a date: up to what ends a value
            match = re.compile(r"[^,\]}\s#]+( [0-9:.+\-Z]+)?").match(self.text, self.at)
            self.at = match.end() if match else self.at + 1

    def assignment(self, table: KeyPath) -> None:
        path = table
        for name, offset in self.key():
            path = (*path, name)
            self.note(path, offset)
        self.blanks(False)
        self.at += 1  # "="
        self.value(path)

    def header(self) -> KeyPath:
        array = self.peek(2) == "[["
        self.at += 2 if array else 1
        path: KeyPath = ()
        parts = self.key()
        for number, (name, offset) in enumerate(parts):
            path = (*path, name)
            if array and number == len(parts) - 1:
                index = self.counts.get(path, 0)
                self.counts[path] = index + 1
                self.note(path, offset)
                path = (*path, index)
            elif path in self.counts:  # [a.b] after [[a]]: inside a's last element
                path = (*path, self.counts[path] - 1)
            self.note(path, offset)
        self.at = self.text.index("]", self.at) + (2 if array else 1)
        return path

    def document(self) -> None:
        table: KeyPath = ()
        while True:
            self.blanks(True)
            if self.at >= len(self.text):
                return
            if self.peek() == "[":
                table = self.header()
            else:
                self.assignment(table)


def _unescape(match: re.Match[str]) -> str:
    code = match.group(1)
    if code[0] in "uU" and len(code) > 1:
        return chr(int(code[1:], 16))
    return _SIMPLE.get(code, code)


def key_positions(text: str) -> dict[KeyPath, tuple[int, int]]:
    """Where each key path of valid TOML ``text`` is first written (1-based line, column); a text the walk does
    not follow to its end keeps what was found before that point."""
    scanner = _Scanner(text)
    with contextlib.suppress(ValueError, IndexError):  # positions help the reader of an error, never cause one
        scanner.document()
    return scanner.found
