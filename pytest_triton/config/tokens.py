"""The one tokenizer of config.pbtxt text, read as a stream.

Tokens are never kept: the fast parser reads them once, and the position index reads a top-level field's
tokens again from that field's offset when a path under it is first asked. A config of a million small
tokens therefore costs no memory per token (a list of them would cost ~17 to ~100 bytes each).
"""

from __future__ import annotations

import bisect
import contextlib
import re
import sys
import warnings
from collections.abc import Iterator

from pytest_triton.errors import ConfigLimitExceeded

# Python's re keeps a backtracking record per iteration of a repeated group, so a string
# pattern written as ``(?:[^"\\]|\\.)*`` costs memory per character of a literal. The unrolled form
# repeats a character class (no record per character); possessive quantifiers (Python 3.11+) drop
# the records per escape too.
_RUN = "*+" if sys.version_info >= (3, 11) else "*"
_STRING = "|".join(rf"{q}[^{q}\\\n]{_RUN}(?:\\.[^{q}\\\n]{_RUN}){_RUN}{q}" for q in ('"', "'"))
TOKEN = re.compile(
    rf"""
    (\#[^\n]*)
  | ({_STRING})
  | ([{{}}\[\]:,;<>])
  | ([^\s{{}}\[\]:,;<>"'\#]+)
  | (\S)
    """,
    re.VERBOSE,
)
# A match's ``lastindex``: the group that matched. OTHER is a character outside the grammar (a quote that
# opens no string), which protobuf's own parser refuses.
COMMENT, STRING, PUNCT, WORD, OTHER = 1, 2, 3, 4, 5
END = 0  # the kind past the last token
_NEWLINE = re.compile("\n")


class _Lines:
    """Offset → (line, column), by bisecting the offsets where lines start."""

    def __init__(self, text: str) -> None:
        self.starts = [0, *(m.end() for m in _NEWLINE.finditer(text))]

    def position(self, offset: int) -> tuple[int, int]:
        index = bisect.bisect_right(self.starts, offset) - 1
        return index + 1, offset - self.starts[index] + 1


class TokenStream:
    """config.pbtxt text to be cut into tokens, with the limit on a token's length and the file's name.

    Iterating gives ``(kind, text, offset)`` of each token in order, comments and OTHER characters left out (the
    position index reads text protobuf accepted, which has none of the latter)."""

    def __init__(self, text: str, max_literal_bytes: int | None = None, path: str = "config.pbtxt") -> None:
        self.text = text
        self.limit = sys.maxsize if max_literal_bytes is None else max_literal_bytes
        self.path = path
        self._lines: _Lines | None = None

    def position(self, offset: int) -> tuple[int, int]:
        """The 1-based line and column of ``offset`` (line starts found on first use)."""
        if self._lines is None:
            self._lines = _Lines(self.text)
        return self._lines.position(offset)

    def too_long(self, kind: int, length: int, offset: int) -> ConfigLimitExceeded:
        line, col = self.position(offset)
        return ConfigLimitExceeded(
            f"a {'string' if kind == STRING else 'value'} of {length:,} characters is longer "
            f"than max_literal_bytes={self.limit:,}: raise it with --max-literal-bytes=N (CLI) or "
            f"--triton-lint-limit max_literal_bytes=N (pytest)",
            path=self.path,
            line=line,
            col=col,
        )

    def check_lengths(self) -> None:
        """Raise :class:`ConfigLimitExceeded` at the first token (comments aside) longer than the limit."""
        if len(self.text) <= self.limit:
            return
        limit = self.limit
        for match in TOKEN.finditer(self.text):
            if match.end() - match.start() > limit and match.lastindex != COMMENT:
                raise self.too_long(match.lastindex or WORD, match.end() - match.start(), match.start())

    def strings(self) -> Iterator[tuple[str, int]]:
        """Each string literal (quotes included) and its offset."""
        for match in TOKEN.finditer(self.text):
            if match.lastindex == STRING:
                yield match.group(), match.start()

    def __iter__(self) -> Iterator[tuple[int, str, int]]:
        return self.tokens_from(0)

    def tokens_from(self, offset: int) -> Iterator[tuple[int, str, int]]:
        """The tokens from ``offset`` (where a token starts) on."""
        for match in TOKEN.finditer(self.text, offset):
            kind = match.lastindex
            if kind != COMMENT and kind != OTHER:
                yield kind or WORD, match.group(), match.start()


def tokenize(text: str, *, max_literal_bytes: int | None = None, path: str = "config.pbtxt") -> TokenStream:
    """The token stream of ``text``; a token longer than ``max_literal_bytes`` raises
    :class:`ConfigLimitExceeded` naming its position when the stream is parsed."""
    return TokenStream(text, max_literal_bytes, path)


@contextlib.contextmanager
def quiet_escapes() -> Iterator[None]:
    """protobuf's Python unescaping warns on ``\\?``, an escape C++ reads as ``?`` (every escape C++ refuses is
    refused before, by the config reader): a warning there says nothing about the config."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"google\.protobuf\.")
        yield
