"""A fast path for protobuf's text parser: one pass over the token stream, no token kept.

protobuf's Python ``text_format`` is pure Python and takes about a millisecond per model config:
most of the linter's time. This module builds the same message for the plain subset of the text
format that real configs use (identifiers, ``:``, ``{}``/``<>``, ``[...]`` lists, decimal
numbers, enum names, ``true``/``false``, strings without escapes, ``,``/``;`` separators, map
entries). Anything else (escapes, hex or special numbers, a field given twice, oneof conflicts,
extensions, unknown fields, any syntax error) gives up with :class:`Unsupported`, and the caller
parses with ``text_format`` itself, whose result and error messages stay the reference. The unit
tests hold the two parsers to the same message over generated configs.
"""

from __future__ import annotations

import functools
import re
from array import array
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

from google.protobuf.descriptor import Descriptor
from google.protobuf.descriptor import FieldDescriptor

from pytest_triton.config.tokens import COMMENT
from pytest_triton.config.tokens import END
from pytest_triton.config.tokens import STRING
from pytest_triton.config.tokens import TOKEN
from pytest_triton.config.tokens import WORD
from pytest_triton.config.tokens import TokenStream
from pytest_triton.errors import ConfigLimitExceeded

_INT = re.compile(r"-?(?:0|[1-9][0-9]*)\Z")
_FLOAT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?\Z")

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}
_FLOATS = (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE)


class Unsupported(Exception):
    """The text is outside the fast path's subset: parse it with protobuf's text_format."""


class _Field(NamedTuple):
    """What the parser asks of a field, read from its descriptor once."""

    name: str
    repeated: bool
    oneof: str | None
    is_message: bool
    is_map: bool
    type: int
    enum: Any


@functools.cache
def _fields(descriptor: Descriptor) -> dict[str, _Field]:
    return {name: _field(field) for name, field in descriptor.fields_by_name.items()}


def _field(field: FieldDescriptor) -> _Field:
    message_type = field.message_type
    return _Field(
        field.name,
        field.is_repeated,
        field.containing_oneof.name if field.containing_oneof is not None else None,
        field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE,
        message_type is not None and message_type.GetOptions().map_entry,
        field.type,
        field.enum_type,
    )


class _Builder:
    """Reads the token stream once, one token ahead; the offsets of the top-level fields' names are kept for the
    position index."""

    def __init__(self, tokens: TokenStream) -> None:
        self.stream = tokens
        self.limit = tokens.limit
        self.matches = TOKEN.finditer(tokens.text)
        self.starts: dict[str, array[int]] = {}
        self.kind, self.text, self.offset = END, "", 0
        self.advance()

    def advance(self) -> None:
        for match in self.matches:
            kind = match.lastindex
            if kind == COMMENT:
                continue
            text = match.group()
            if len(text) > self.limit:
                raise self.stream.too_long(kind or WORD, len(text), match.start())
            self.kind, self.text, self.match = kind or WORD, text, match
            return
        self.kind, self.text = END, ""

    def expect(self, text: str) -> None:
        # a punctuation character is a token of its own: no word or string token equals one
        if self.text != text:
            raise Unsupported
        self.advance()

    def try_take(self, text: str) -> bool:
        if self.text == text:
            self.advance()
            return True
        return False

    def fields(self, message: Any, closer: str | None) -> None:
        descriptor = message.DESCRIPTOR
        known = _fields(descriptor)
        seen: set[str] = set()
        oneofs: set[str] = set()
        top_level = closer is None
        while True:
            if self.kind == END:
                if top_level:
                    return
                raise Unsupported
            name = self.text
            if name == closer:
                self.advance()
                return
            field = known.get(name)  # a known field's name is an identifier: only a word token matches it
            if field is None:
                raise Unsupported
            if top_level:
                self.starts.setdefault(name, array("q")).append(self.match.start())
            self.advance()
            repeated = field.repeated
            if not repeated:
                if name in seen:
                    raise Unsupported
                seen.add(name)
            oneof = field.oneof
            if oneof is not None:
                if oneof in oneofs:
                    raise Unsupported
                oneofs.add(oneof)
            # the separators are compared inline: a method call per token would cost a tenth of the parse
            if field.is_message:
                if self.text == ":":
                    self.advance()
                if repeated and self.text == "[":
                    self.advance()
                    self._list(self._message, message, field)
                else:
                    self._message(message, field)
            else:
                if self.text != ":":
                    raise Unsupported
                self.advance()
                if repeated and self.text == "[":
                    self.advance()
                    self._list(self._scalar, message, field)
                else:
                    self._scalar(message, field)
            if self.text == "," or self.text == ";":
                self.advance()

    def _list(self, merge: Callable[[Any, _Field], None], message: Any, field: _Field) -> None:
        if self.try_take("]"):
            return
        while True:
            merge(message, field)
            if self.try_take("]"):
                return
            self.expect(",")

    def _message(self, message: Any, field: _Field) -> None:
        opener = self.text
        if opener == "{":
            closer = "}"
        elif opener == "<":
            closer = ">"
        else:
            raise Unsupported
        self.advance()
        if field.is_map:
            container = getattr(message, field.name)
            entry = container.GetEntryClass()()
            self.fields(entry, closer)
            if entry.DESCRIPTOR.fields_by_name["value"].cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
                container[entry.key].CopyFrom(entry.value)
            else:
                container[entry.key] = entry.value
        elif field.repeated:
            self.fields(getattr(message, field.name).add(), closer)
        else:
            sub = getattr(message, field.name)
            sub.SetInParent()
            self.fields(sub, closer)

    def _scalar(self, message: Any, field: _Field) -> None:
        kind, text = self.kind, self.text
        self.advance()
        value: Any
        kind_of = field.type
        if kind_of == FieldDescriptor.TYPE_STRING:
            if kind != STRING:
                raise Unsupported
            parts = [text]
            while self.kind == STRING:
                parts.append(self.text)
                self.advance()
            if any("\\" in part for part in parts):
                raise Unsupported  # escapes: protobuf's own unescaping decides
            value = "".join(part[1:-1] for part in parts)
        elif kind != WORD:
            raise Unsupported
        elif kind_of == FieldDescriptor.TYPE_ENUM:
            enum_value = field.enum.values_by_name.get(text) if field.enum is not None else None
            if enum_value is None:
                raise Unsupported
            value = enum_value.number
        elif kind_of in _INT_RANGES:
            if not _INT.match(text):
                raise Unsupported
            value = int(text)
            low, high = _INT_RANGES[kind_of]
            if not low <= value <= high:
                raise Unsupported
        elif kind_of in _FLOATS:
            if not _FLOAT.match(text):
                raise Unsupported
            value = float(text)
        elif kind_of == FieldDescriptor.TYPE_BOOL:
            if text not in ("true", "false"):
                raise Unsupported
            value = text == "true"
        else:  # bytes, groups
            raise Unsupported
        if field.repeated:
            getattr(message, field.name).append(value)
        else:
            setattr(message, field.name, value)


def build_message(tokens: TokenStream, message: Any) -> dict[str, array[int]]:
    """Fill ``message`` from ``tokens``; raise :class:`Unsupported` for anything outside the subset. Returns the
    offsets where each top-level field's name is written, by name, in text order."""
    builder = _Builder(tokens)
    try:
        builder.fields(message, None)
    except ConfigLimitExceeded:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise Unsupported from exc
    return builder.starts
