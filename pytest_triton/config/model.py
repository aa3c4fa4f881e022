"""Parse and print Triton ``config.pbtxt`` with Triton's own schema.

The schema is tritonclient's generated ``model_config_pb2`` (the ``inference.ModelConfig``
message Triton itself reads) and the grammar is protobuf's ``text_format``: nothing here is
a hand-written grammar.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pytest_triton.config.positions import PositionIndex
from pytest_triton.config.positions import index_tokens
from pytest_triton.config.tokens import TokenStream
from pytest_triton.config.tokens import quiet_escapes
from pytest_triton.config.tokens import tokenize
from pytest_triton.errors import ConfigSyntaxError
from pytest_triton.errors import MissingDependency

if TYPE_CHECKING:
    from tritonclient.grpc.model_config_pb2 import ModelConfig

CONFIG_FILENAME = "config.pbtxt"

_QUOTED_LINE = re.compile(r"^'.*?': ", re.DOTALL)


@dataclass(frozen=True)
class ParsedConfig:
    """A parsed config.pbtxt: the message, where it came from, and where each field stands."""

    message: ModelConfig
    text: str
    path: str
    positions: PositionIndex

    def line(self, *field_path: str | int) -> int:
        return self.positions.line(*field_path)

    def position(self, *field_path: str | int) -> tuple[int, int]:
        return self.positions.find(*field_path)


@functools.cache
def model_config_class() -> type[ModelConfig]:
    """``inference.ModelConfig`` from tritonclient's generated module, loaded on its own.

    Importing ``tritonclient.grpc`` would pull grpc and numpy in (~0.3 s) just to lint; the
    generated file needs only protobuf. protobuf hands out the same class either way.
    """
    from google.protobuf import descriptor_pool
    from google.protobuf import message_factory

    try:  # registered already (by tritonclient.grpc, or by an earlier load): never register twice
        descriptor = descriptor_pool.Default().FindMessageTypeByName("inference.ModelConfig")
    except KeyError:
        pass
    else:
        registered: type[ModelConfig] = message_factory.GetMessageClass(descriptor)
        return registered
    spec = importlib.util.find_spec("tritonclient")
    if spec is None or not spec.submodule_search_locations:
        raise MissingDependency("tritonclient", "serve")
    path = Path(next(iter(spec.submodule_search_locations))) / "grpc" / "model_config_pb2.py"
    module_spec = importlib.util.spec_from_file_location("pytest_triton._model_config_pb2", path)
    if module_spec is None or module_spec.loader is None:  # pragma: no cover - broken install
        raise MissingDependency("tritonclient", "serve")
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    cls: type[ModelConfig] = module.ModelConfig
    return cls


def _token_at(text: str, line: int, col: int) -> str | None:
    lines = text.splitlines()
    if not 1 <= line <= len(lines):
        return None
    rest = lines[line - 1][max(col - 1, 0) :].lstrip()
    if not rest:
        return None
    match = re.match(r'"[^"]*"?|[A-Za-z0-9_.+-]+|.', rest)
    return match.group() if match else None


def _syntax_message(text: str, raw: str, line: int, col: int) -> str:
    """protobuf's message without its location prefix, with the token it stopped at."""
    message = re.sub(r"^\d+:\d+ : ", "", raw)
    message = _QUOTED_LINE.sub("", message)
    if message.startswith("Expected ") and "found" not in message:
        found = _token_at(text, line, col)
        if found is not None:
            quoted = found if found.startswith('"') else f'"{found}"'
            message = f"{message.rstrip('.')}, found {quoted}"
    return message


def _parse_text(text: str, message: ModelConfig) -> None:
    from google.protobuf import text_format

    parser = _parser_class()
    if parser is None:
        text_format.Parse(text, message)
    else:
        parser().ParseLines(text.split("\n"), message)


@functools.cache
def _parser_class() -> Any:
    """protobuf's text parser, made to report a value its message refuses as a ParseError.

    A number the field's type cannot hold (``kind: 4294967296`` for an enum) passes the
    tokenizer and is refused by the message itself with a bare ``ValueError`` that has no
    position; re-raising it from the tokenizer keeps the line and column of the value.
    ``_Parser`` is protobuf's own (private) class behind ``text_format.Parse``.
    """
    from google.protobuf import text_format

    base: Any = getattr(text_format, "_Parser", None)
    if base is None:  # a protobuf without it: values out of range are reported at line 1
        return None

    class PositionedParser(base):  # type: ignore[misc]
        def _MergeScalarField(self, tokenizer: Any, message: Any, field: Any) -> None:
            try:
                super()._MergeScalarField(tokenizer, message, field)
            except text_format.ParseError:
                raise
            except ValueError as exc:
                raise tokenizer.ParseErrorPreviousToken(f"{exc} (field {field.name!r})") from exc

    return PositionedParser


def parse_config(text: str, path: str = CONFIG_FILENAME, *, max_literal_bytes: int | None = None) -> ParsedConfig:
    """Parse config.pbtxt text; raise :class:`ConfigSyntaxError` with protobuf's message and position.

    With ``max_literal_bytes``, a token longer than that is refused (its position and the limit
    in the message) before the index of positions is built."""
    from google.protobuf import text_format

    from pytest_triton.config.fastparse import Unsupported
    from pytest_triton.config.fastparse import build_message

    tokens = tokenize(text, max_literal_bytes=max_literal_bytes, path=path)
    cls = model_config_class()
    message = cls()
    try:
        starts: dict[str, array[int]] | None = build_message(tokens, message)
    except Unsupported:
        starts = None
        tokens.check_lengths()
        if "\\" in text:
            for literal, offset in tokens.strings():
                if "\\" in literal:
                    _check_escapes(literal, offset, tokens, path)
        message = cls()  # protobuf's own parser: the reference result and error messages
        try:
            with quiet_escapes():
                _parse_text(text, message)
        except text_format.ParseError as exc:
            line = exc.GetLine() or 0
            col = exc.GetColumn() or 0
            message_text = _syntax_message(text, str(exc), line, col)
            raise ConfigSyntaxError(message_text, path=path, line=line, col=col) from exc
        except (ValueError, RecursionError) as exc:  # refused by the message itself, without a position
            raise ConfigSyntaxError(str(exc), path=path) from exc
    positions = index_tokens(tokens, starts=starts)
    if "+" in text:  # reading every literal scans every field
        _reject_plus_signs(text, positions, path)
    return ParsedConfig(message=message, text=text, path=path, positions=positions)


_SIMPLE_ESCAPES = frozenset("abfnrtv\\?'\"01234567")
_HEX = frozenset("0123456789abcdefABCDEF")


def _check_escapes(literal: str, offset: int, tokens: TokenStream, path: str) -> None:
    """Refuse an escape that Triton's C++ text parser refuses, with its message and position (the character
    where its tokenizer stopped); Python's parser keeps ``\\o`` as it is, with a DeprecationWarning."""
    i, end = 1, len(literal) - 1  # inside the quotes
    while i < end:
        if literal[i] != "\\":
            i += 1
            continue
        kind = literal[i + 1]
        at, need, message = i + 1, 0, "Invalid escape sequence in string literal."
        if kind in _SIMPLE_ESCAPES:
            i += 2
            continue
        if kind == "x":
            at, need, message = i + 2, 1, "Expected hex digits for escape sequence."
        elif kind == "u":
            at, need, message = i + 2, 4, "Expected four hex digits for \\u escape sequence."
        elif kind == "U":
            at, need, message = i + 2, 8, "Expected eight hex digits up to 10ffff for \\U escape sequence"
        digits = 0
        while digits < need and at < end and _allowed(kind, digits, literal[at]):
            at, digits = at + 1, digits + 1
        if digits < need or not need:
            line, col = tokens.position(offset + at)
            raise ConfigSyntaxError(message, path=path, line=line, col=col)
        i = at


def _allowed(kind: str, index: int, char: str) -> bool:
    """Whether ``char`` may stand at ``index`` of a \\x, \\u or \\U escape's digits (\\U: 00, 0 or 1, hex)."""
    if kind == "U" and index < 2:
        return char == "0"
    if kind == "U" and index == 2:
        return char in "01"
    return char in _HEX


def _reject_plus_signs(text: str, positions: PositionIndex, path: str) -> None:
    """Triton's C++ parser refuses ``+5`` where Python's text_format accepts it."""
    lines = text.splitlines()
    for field_path, literal in positions.literals.items():
        if not literal.startswith("+"):
            continue
        line, col = positions.positions[field_path]
        if lines[line - 1][col - 1 : col] != "+":  # a quoted string that happens to start with '+'
            continue
        kind = "double" if any(c in literal for c in ".eE") and not literal.lower().startswith("+0x") else "integer"
        raise ConfigSyntaxError(f"Expected {kind}, got: +", path=path, line=line, col=col)


def decode_config(data: bytes, path: str = CONFIG_FILENAME) -> str:
    """UTF-8 text; bytes that are not UTF-8 are allowed in comments only, as Triton's parser allows."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    lines = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        code, comment = _split_comment(raw)
        try:
            text = code.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigSyntaxError(
                f"byte {code[exc.start]:#04x} is not UTF-8 (only comments may hold other bytes)",
                path=path,
                line=number,
                col=exc.start + 1,
            ) from exc
        lines.append(text + comment.decode("utf-8", errors="replace"))
    return "\n".join(lines)


def _split_comment(line: bytes) -> tuple[bytes, bytes]:
    """Split a line at its first ``#`` outside a quoted string."""
    quote = 0
    escaped = False
    for index, byte in enumerate(line):
        if escaped:
            escaped = False
        elif quote and byte == 0x5C:  # backslash inside a string
            escaped = True
        elif byte in (0x22, 0x27):  # " or '
            quote = 0 if quote == byte else (quote or byte)
        elif byte == 0x23 and not quote:  # '#'
            return line[:index], line[index:]
    return line, b""


def read_config(path: str | Path) -> ParsedConfig:
    """Read and parse a config.pbtxt file (UTF-8; other bytes only in comments)."""
    file = Path(path)
    return parse_config(decode_config(file.read_bytes(), str(file)), str(file))


def print_config(message: ModelConfig) -> str:
    """Render a config as config.pbtxt text; ``max_batch_size: 0`` is written explicitly.

    proto3 drops fields equal to their default, but a reader of the file should see that
    batching is off on purpose (and Triton's auto-complete would otherwise fill it in).
    """
    from google.protobuf import text_format

    text = text_format.MessageToString(message, as_utf8=True)
    if message.max_batch_size == 0:
        lines = text.splitlines(keepends=True)
        head = 0
        while head < len(lines) and lines[head].split(":")[0] in {"name", "platform", "backend"}:
            head += 1
        lines.insert(head, "max_batch_size: 0\n")
        text = "".join(lines)
    return text


def write_config(message: ModelConfig, path: str | Path) -> Path:
    """Write ``message`` to ``path`` (a model folder or a config.pbtxt path)."""
    target = Path(path)
    if target.is_dir():
        target = target / CONFIG_FILENAME
    target.write_text(print_config(message), encoding="utf-8")
    return target
