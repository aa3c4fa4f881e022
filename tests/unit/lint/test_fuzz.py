"""Bounded fuzzing: whatever the repository, folder tree or archive, linting ends with findings.

An escape is an exception out of ``lint_path`` or an X001 finding (a rule that raised). The trees
include link loops, dangling links, FIFOs and folders without permissions (which only bite when
the tests run as an ordinary user; test_robustness.py covers those without root's read override). Each test is
bounded to a few seconds.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_triton.lint import Finding
from pytest_triton.lint import lint_path
from pytest_triton.lint.limits import LintLimits

WORKTREE = Path(__file__).resolve().parents[3]
SEEDS = [
    p.read_text(encoding="utf-8", errors="replace") for p in sorted((WORKTREE / "model_repos").rglob("config.pbtxt"))
]
PIECES = [
    "{", "}", "[", "]", ":", ",", '"', "\\", "#", "\n", "-", "4294967296", "2147483648", "-9223372036854775809",
    "1e999", "nan", "0x", "kind: 4294967296", "data_type: 2147483648", "dims: [ 99999999999999999999 ]",
    "input [ { name: \"x\" } ]", "ensemble_scheduling { step [ { model_name: \"m\" } ] }", "platform: \"ensemble\"",
    "max_batch_size: -1", "version_policy { specific { versions: [ -1 ] } }", "\x00", "\udce9", "\ufeff",
]  # fmt: skip
SMALL = LintLimits(
    max_config_bytes=64 << 10, max_literal_bytes=4 << 10, max_archive_members=40, max_member_bytes=1 << 10
)
FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


def no_escape(target: Path, limits: LintLimits = SMALL) -> list[Finding]:
    findings = lint_path(target, limits=limits)
    assert all(isinstance(f, Finding) for f in findings)
    escapes = [f.format() for f in findings if f.rule == "X001"]
    assert not escapes, "\n".join(escapes)
    return findings


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="pytest-triton-fuzz-"))
    yield folder
    for path in folder.rglob("*"):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(folder, ignore_errors=True)


def fresh(scratch: Path) -> Path:
    return Path(tempfile.mkdtemp(dir=scratch))


configs = st.builds(
    lambda seed, edits: _apply(seed, edits),
    st.sampled_from(SEEDS),
    st.lists(st.tuples(st.floats(0, 1), st.integers(0, 8), st.sampled_from(PIECES)), max_size=5),
)


def _apply(text: str, edits: list[tuple[float, int, str]]) -> str:
    for where, cut, piece in edits:
        at = int(where * len(text))
        text = text[:at] + piece + text[at + cut :]
    return text


@FUZZ
@given(st.lists(configs, min_size=1, max_size=3))
def test_mutated_configs(scratch: Path, texts: list[str]) -> None:
    root = fresh(scratch)
    for index, text in enumerate(texts):
        folder = root / f"m{index}"
        (folder / "1").mkdir(parents=True)
        (folder / "config.pbtxt").write_bytes(text.encode("utf-8", "surrogateescape"))
    no_escape(root)


ENTRY_KINDS = [
    "folder", "config", "file", "link_up", "link_self", "link_root", "dangling", "fifo", "locked", "fifo_config",
    "zero_config",
]  # fmt: skip
trees = st.lists(
    st.tuples(
        st.lists(st.sampled_from(["a", "b", "1", "2", ".h"]), min_size=1, max_size=3), st.sampled_from(ENTRY_KINDS)
    ),
    max_size=10,
)


@FUZZ
@given(trees, st.sampled_from(["root", "first", "missing"]))
def test_folder_shapes(scratch: Path, entries: list[tuple[list[str], str]], which: str) -> None:
    root = fresh(scratch)
    for parts, kind in entries:
        path = root.joinpath(*parts)
        if path.exists() or path.is_symlink():
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            continue
        if kind == "folder":
            path.mkdir()
        elif kind == "config":
            path.mkdir()
            (path / "config.pbtxt").write_text('backend: "python"\n')
        elif kind == "file":
            path.write_text("x")
        elif kind == "link_up":
            path.symlink_to("..")
        elif kind == "link_self":
            path.symlink_to(".")
        elif kind == "link_root":
            path.symlink_to(root)
        elif kind == "dangling":
            path.symlink_to("nowhere")
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "fifo_config":
            path.mkdir()
            os.mkfifo(path / "config.pbtxt")
        elif kind == "zero_config":
            path.mkdir()
            (path / "config.pbtxt").symlink_to("/dev/zero")
        else:
            path.mkdir()
            path.chmod(0)
    target = {"root": root, "first": root / "a", "missing": root / "zz"}[which]
    no_escape(target)


members = st.lists(
    st.tuples(
        st.sampled_from(
            ["m/config.pbtxt", "m/1/model.py", "m/1/model.onnx", "config.pbtxt", "../x", "/abs", "m", "m/1"]
        ),
        st.sampled_from(["file", "dir", "symlink", "fifo", "big"]),
        st.binary(max_size=64),
    ),
    max_size=12,
)


@FUZZ
@given(members, st.integers(0, 3))
def test_archives(scratch: Path, entries: list[tuple[str, str, bytes]], cut: int) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, kind, data in entries:
            info = tarfile.TarInfo(name)
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
                tar.addfile(info)
            elif kind == "fifo":
                info.type = tarfile.FIFOTYPE
                tar.addfile(info)
            else:
                payload = data * 100 if kind == "big" else data
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
    raw = buffer.getvalue()
    archive = fresh(scratch) / "model.tar.gz"
    archive.write_bytes(raw[: len(raw) - cut * len(raw) // 4] if cut else raw)
    no_escape(archive)
