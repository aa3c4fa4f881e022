"""Tar archives built byte by byte for the archive tests: a pax header of any size without holding it in memory."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

BLOCK = 512


def header(name: str, size: int, kind: bytes) -> bytes:
    """A ustar header block (checksum filled in)."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.type = kind
    return info.tobuf(format=tarfile.USTAR_FORMAT)


def pad(size: int) -> bytes:
    return b"\0" * (-size % BLOCK)


def huge_pax_archive(path: Path, payload_bytes: int) -> Path:
    """A gzip'ed tar whose first member has a pax header holding ``payload_bytes`` of comment (compresses to
    almost nothing), then one small config; written in 1 MiB pieces."""
    body = payload_bytes - len(" comment=\n")
    digits = len(str(payload_bytes))
    length = body + len(" comment=\n") + digits
    body -= digits
    record_head = f"{length} comment=".encode()
    size = len(record_head) + body + 1
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(header("././@PaxHeader", size, tarfile.XHDTYPE))
        out.write(record_head)
        left = body
        while left:
            piece = min(left, 1 << 20)
            out.write(b"A" * piece)
            left -= piece
        out.write(b"\n" + pad(size))
        data = b'name: "m"\nbackend: "python"\n'
        out.write(header("m/config.pbtxt", len(data), tarfile.REGTYPE) + data + pad(len(data)))
        out.write(header("m/1/model.py", 0, tarfile.REGTYPE))
        out.write(b"\0" * BLOCK * 2)
    return path


def archive_of(path: Path, members: list[tuple[str, bytes | None, bytes]]) -> Path:
    """``(name, data or None, kind)`` members; ``kind`` a tarfile type, link targets passed as data."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, kind in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
                info.linkname = (data or b"").decode()
                tar.addfile(info)
            elif kind == tarfile.DIRTYPE:
                tar.addfile(info)
            else:
                info.size = len(data or b"")
                tar.addfile(info, io.BytesIO(data or b""))
    return path
