"""Reading a tar archive (model.tar.gz) within limits: memory, members, bytes read and bytes written.

Python's tarfile reads a pax or GNU long-name header's whole payload into memory before any member reaches
its caller: a 1.3 MB archive holding a 300 MB pax header costs hundreds of MB. :class:`GuardedTarStream` sits
between the decompressed bytes and tarfile and reads every 512-byte header block *before* tarfile sees it:
a pax (``x``, ``g``) or GNU long-name (``L``, ``K``) header whose payload is over ``max_header_bytes`` stops
the read with :class:`ArchiveLimitError`, so tarfile never allocates it. It follows the member sizes itself
(the header's size field, or a ``size=`` record of the pax header before it) to know where the next header is.

The linter (:mod:`pytest_triton.lint.tarball`), sagemaker-local and ``--endpoint``
(:func:`pytest_triton.archive.model_tar.unpack_model_archive`) all read archives through :func:`open_guarded`
and refuse the same members (:func:`unsafe_reason`): absolute paths, ``..``, links of either kind, devices.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import io
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import IO

from pytest_triton.errors import ConfigError

BLOCK = 512
MiB = 1 << 20
GiB = 1 << 30
LIMITS_ENV = "PYTEST_TRITON_ARCHIVE_LIMITS"
_LONG_HEADERS = {b"x": "pax", b"g": "pax global", b"L": "GNU long name", b"K": "GNU long link name"}


class ArchiveLimitError(ConfigError):
    """An archive went over one of its limits; ``limit`` is the limit's name, ``value`` its setting."""

    def __init__(self, message: str, *, limit: str, value: int, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.limit = limit
        self.value = value


@dataclass(frozen=True)
class ArchiveLimits:
    """How much of an archive is read and written before the read stops."""

    max_members: int = 100_000
    max_total_bytes: int = 16 * GiB  # uncompressed member bytes
    max_header_bytes: int = 1 * MiB  # one pax or GNU long-name header's payload (real ones: under 1 KB)
    max_written_bytes: int = 16 * GiB  # bytes written out to disk
    # unpacked bytes per archive byte, past the first 64 MiB: weights compress about 1.1:1, zeros 1000:1 (a 2 MB
    # gzip that unpacks to 2 GiB is a bomb, not a model)
    max_expansion: int = 200

    @classmethod
    def from_env(cls, name: str = LIMITS_ENV) -> ArchiveLimits:
        """The defaults, with ``NAME=N`` settings from ``$PYTEST_TRITON_ARCHIVE_LIMITS`` (comma-separated)."""
        raw = os.environ.get(name, "")
        fields = {f.name for f in dataclasses.fields(cls)}
        changes: dict[str, int] = {}
        for item in filter(None, (part.strip() for part in raw.split(","))):
            key, sep, number = item.partition("=")
            if not sep or key.strip() not in fields:
                raise ConfigError(f"${name}: {item!r} is not NAME=N; NAME is one of {', '.join(sorted(fields))}")
            changes[key.strip()] = parse_size(number, what=f"${name} {key.strip()}")
        return dataclasses.replace(cls(), **changes)


def parse_size(text: str, *, what: str = "size") -> int:
    """``1048576``, ``1024K``, ``16M`` or ``2G`` as a number of bytes (or a plain count)."""
    clean = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": MiB, "G": GiB}.get(clean[-1:], 1)
    digits = clean[:-1] if scale != 1 else clean
    if not digits.isdigit() or int(digits) <= 0:
        raise ConfigError(f"{what}={text!r} is not a positive whole number (optionally with K, M or G)")
    return int(digits) * scale


def _octal_or_base256(field: bytes) -> int:
    """A tar number field: NUL/space-terminated octal, or base-256 when the top bit of the first byte is set."""
    if field[:1] and field[0] & 0x80:
        value = field[0] & 0x3F
        for byte in field[1:]:
            value = (value << 8) | byte
        return -value if field[0] & 0x40 else value
    text = field.split(b"\0", 1)[0].strip(b" \0")
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise tarfile.HeaderError(f"bad number field {field!r} in a tar header") from None


def _pax_size(payload: bytes) -> int | None:
    """The ``size`` record of a pax header's payload (``"%d size=%d\\n"``), if it has one."""
    found: int | None = None
    position = 0
    while position < len(payload):
        space = payload.find(b" ", position)
        if space < 0:
            break
        try:
            length = int(payload[position:space])
        except ValueError:
            break
        record = payload[space + 1 : position + length - 1]
        key, _, value = record.partition(b"=")
        if key == b"size":
            with contextlib.suppress(ValueError):
                found = int(value)
        if length <= 0:
            break
        position += length
    return found


def _padded(size: int) -> int:
    return (size + BLOCK - 1) // BLOCK * BLOCK


class GuardedTarStream(io.RawIOBase):
    """A read-only stream of tar bytes that checks each header block before handing it on (see the module)."""

    def __init__(self, source: IO[bytes], limits: ArchiveLimits, where: str) -> None:
        self._source = source
        self._limits = limits
        self._where = where
        self._position = 0  # bytes handed on so far
        self._next_header = 0  # where the next header block starts
        self._buffer = b""  # read from the source; what is not handed on yet starts at _offset
        self._offset = 0
        self._size_override: int | None = None  # a pax header's size= record, for the member after it
        self._ended = False

    def readable(self) -> bool:
        return True

    @property
    def _pending(self) -> int:
        return len(self._buffer) - self._offset

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        wanted = len(buffer)
        if not self._pending:
            self._buffer, self._offset = self._source.read(max(wanted, BLOCK)), 0
        if not self._pending:
            return 0
        if not self._ended and self._position + self._pending > self._next_header:
            self._check_header()
        count = min(wanted, self._pending)
        if not self._ended and self._next_header > self._position:
            count = min(count, self._next_header - self._position)  # the next header is checked first
        buffer[:count] = self._buffer[self._offset : self._offset + count]
        self._offset += count
        self._position += count
        return count

    def _fill(self, length: int) -> bool:
        """Have at least ``length`` bytes pending; False when the source ends first."""
        have = self._pending
        if have >= length:
            return True
        pieces = [self._buffer[self._offset :]]
        while have < length:
            more = self._source.read(max(length - have, BLOCK))
            if not more:
                break
            pieces.append(more)
            have += len(more)
        self._buffer, self._offset = b"".join(pieces), 0  # one join, never a copy per read
        return have >= length

    def _peek(self, start: int, end: int) -> bytes:
        return self._buffer[self._offset + start : self._offset + end]

    def _check_header(self) -> None:
        offset = self._next_header - self._position
        if not self._fill(offset + BLOCK):
            return  # a cut-short archive: tarfile says so itself
        header = self._peek(offset, offset + BLOCK)
        if header == b"\0" * BLOCK:
            self._ended = True  # the end-of-archive marker: nothing after it is read as a header
            return
        size = _octal_or_base256(header[124:136])
        kind = header[156:157]
        if kind == b"S":  # old GNU sparse: extension blocks follow the header; no model archive needs them
            raise tarfile.HeaderError(f"member at byte {self._next_header:,} is an old-style GNU sparse file")
        if kind in _LONG_HEADERS:
            if size > self._limits.max_header_bytes:
                raise ArchiveLimitError(
                    f"{self._where}: a {_LONG_HEADERS[kind]} header at byte {self._next_header:,} holds "
                    f"{size:,} bytes, over max_header_bytes={self._limits.max_header_bytes:,} (real ones hold "
                    "a few hundred); not read",
                    limit="max_header_bytes",
                    value=self._limits.max_header_bytes,
                    path=self._where,
                )
            if kind == b"x" and self._fill(offset + BLOCK + size):  # bounded by the check above
                self._size_override = _pax_size(self._peek(offset + BLOCK, offset + BLOCK + size))
            self._next_header += BLOCK + _padded(size)
            return
        if self._size_override is not None:
            size, self._size_override = self._size_override, None
        if kind in (b"1", b"2", b"3", b"4", b"5", b"6"):  # links, devices, folders, FIFOs carry no data
            size = 0
        self._next_header += BLOCK + _padded(max(size, 0))


@contextlib.contextmanager
def open_guarded(path: str, limits: ArchiveLimits) -> Iterator[tarfile.TarFile]:
    """``path`` (a tar, gzip'ed or not) as a one-pass tarfile stream behind :class:`GuardedTarStream`."""
    with open(path, "rb") as raw:
        magic = raw.read(2)
        raw.seek(0)
        source: IO[bytes] = raw
        if magic == b"\x1f\x8b":
            source = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        guarded = io.BufferedReader(GuardedTarStream(source, limits, path), buffer_size=64 << 10)
        with tarfile.open(fileobj=guarded, mode="r|") as tar:
            yield tar


def unsafe_reason(member: tarfile.TarInfo) -> str | None:
    """Why ``member`` may not be written out (None: a plain file or folder inside the archive)."""
    name = PurePosixPath(member.name)
    if name.is_absolute():
        return "has an absolute path"
    if ".." in name.parts:
        return "escapes the archive with '..'"
    if member.issym() or member.islnk():
        return f"is a link (to {member.linkname!r})"
    if not (member.isfile() or member.isdir()):
        return "is a device, FIFO or other special file"
    return None


def is_hidden(name: str) -> bool:
    """Whether a member path has a hidden component (``.git/config``, ``.env``, ``m/.cache/x``)."""
    return any(part.startswith(".") and part not in (".", "..") for part in PurePosixPath(name).parts)
