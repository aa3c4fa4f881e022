"""A fast path for protobuf's text parser, over the tokens the position index reads anyway.

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
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor
from google.protobuf.descriptor import FieldDescriptor

from pytest_triton.config.positions import Tokenized

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
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


@functools.cache
def _fields(descriptor: Descriptor) -> dict[str, FieldDescriptor]:
    return dict(descriptor.fields_by_name)


def _is_map(field: FieldDescriptor) -> bool:
    message_type = field.message_type
    return message_type is not None and message_type.GetOptions().map_entry


class _Builder:
    def __init__(self, tokens: Tokenized) -> None:
        self.kinds, self.texts = tokens.kinds, tokens.texts
        self.end = len(self.kinds)
        self.i = 0

    def expect(self, text: str) -> None:
        if self.i >= self.end or self.kinds[self.i] != "p" or self.texts[self.i] != text:
            raise Unsupported
        self.i += 1

    def try_take(self, text: str) -> bool:
        if self.i < self.end and self.kinds[self.i] == "p" and self.texts[self.i] == text:
            self.i += 1
            return True
        return False

    def fields(self, message: Any, closer: str | None) -> None:
        descriptor = message.DESCRIPTOR
        known = _fields(descriptor)
        seen: set[str] = set()
        oneofs: set[str] = set()
        while True:
            if self.i >= self.end:
                if closer is None:
                    return
                raise Unsupported
            kind, name = self.kinds[self.i], self.texts[self.i]
            if closer is not None and kind == "p" and name == closer:
                self.i += 1
                return
            if kind != "w" or not _IDENT.match(name):
                raise Unsupported
            field = known.get(name)
            if field is None:
                raise Unsupported
            self.i += 1
            repeated = field.is_repeated
            if not repeated:
                if name in seen:
                    raise Unsupported
                seen.add(name)
            oneof = field.containing_oneof
            if oneof is not None:
                if oneof.name in oneofs:
                    raise Unsupported
                oneofs.add(oneof.name)
            if field.cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
                self.try_take(":")
                if repeated and self.try_take("["):
                    self._list(self._message, message, field)
                else:
                    self._message(message, field)
            else:
                self.expect(":")
                if repeated and self.try_take("["):
                    self._list(self._scalar, message, field)
                else:
                    self._scalar(message, field)
            if not self.try_take(","):
                self.try_take(";")

    def _list(self, merge: Callable[[Any, FieldDescriptor], None], message: Any, field: FieldDescriptor) -> None:
        if self.try_take("]"):
            return
        while True:
            merge(message, field)
            if self.try_take("]"):
                return
            self.expect(",")

    def _message(self, message: Any, field: FieldDescriptor) -> None:
        if self.try_take("<"):
            closer = ">"
        else:
            self.expect("{")
            closer = "}"
        if _is_map(field):
            container = getattr(message, field.name)
            entry = container.GetEntryClass()()
            self.fields(entry, closer)
            if entry.DESCRIPTOR.fields_by_name["value"].cpp_type == FieldDescriptor.CPPTYPE_MESSAGE:
                container[entry.key].CopyFrom(entry.value)
            else:
                container[entry.key] = entry.value
        elif field.is_repeated:
            self.fields(getattr(message, field.name).add(), closer)
        else:
            sub = getattr(message, field.name)
            sub.SetInParent()
            self.fields(sub, closer)

    def _scalar(self, message: Any, field: FieldDescriptor) -> None:
        if self.i >= self.end:
            raise Unsupported
        kind, text = self.kinds[self.i], self.texts[self.i]
        self.i += 1
        value: Any
        kind_of = field.type
        if kind_of == FieldDescriptor.TYPE_STRING:
            if kind != "s":
                raise Unsupported
            parts = [text]
            while self.i < self.end and self.kinds[self.i] == "s":
                parts.append(self.texts[self.i])
                self.i += 1
            if any("\\" in part for part in parts):
                raise Unsupported  # escapes: protobuf's own unescaping decides
            value = "".join(part[1:-1] for part in parts)
        elif kind != "w":
            raise Unsupported
        elif kind_of == FieldDescriptor.TYPE_ENUM:
            enum_value = field.enum_type.values_by_name.get(text) if field.enum_type is not None else None
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
        if field.is_repeated:
            getattr(message, field.name).append(value)
        else:
            setattr(message, field.name, value)


def build_message(tokens: Tokenized, message: Any) -> None:
    """Fill ``message`` from ``tokens``; raise :class:`Unsupported` for anything outside the subset."""
    if "o" in tokens.kinds:
        raise Unsupported
    try:
        _Builder(tokens).fields(message, None)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise Unsupported from exc
