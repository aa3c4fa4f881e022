"""The base of a baseline run: a git ref read with git archive into our folder (the checkout untouched), or a
folder; a repository's digest ignores caches; the [baseline] limits of a declaration."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pytest_triton.baseline.pairs import find_pairs
from pytest_triton.baseline.source import open_base
from pytest_triton.baseline.source import tree_digest
from pytest_triton.contracts.declaration import parse_declaration
from pytest_triton.errors import ConfigError

CONTRACTS = (
    '[reference]\nvariant = "m"\n\n[variants.m]\nrepository = "repo"\nmodel = "m"\n\n[inputs]\ngenerate = {{}}\n{extra}'
)


def git(root: Path, *args: str) -> str:
    cmd = ["git", "-C", str(root), "-c", "user.email=ci@example.com", "-c", "user.name=ci", *args]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60).stdout


def project(root: Path) -> Path:
    (root / "repo" / "m" / "1").mkdir(parents=True)
    (root / "repo" / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n', encoding="utf-8")
    (root / "repo" / "m" / "1" / "model.py").write_text("BASE = 1\n", encoding="utf-8")
    (root / "contracts.toml").write_text(CONTRACTS.format(extra=""), encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root / "contracts.toml"


def test_a_git_ref_is_extracted_into_our_folder_and_the_checkout_is_untouched(tmp_path: Path) -> None:
    contracts = project(tmp_path / "p")
    git(tmp_path / "p", "tag", "base")
    (tmp_path / "p" / "repo" / "m" / "1" / "model.py").write_text("BASE = 2\n", encoding="utf-8")
    before = git(tmp_path / "p", "status", "--porcelain", "--ignored")
    base = open_base("base", tmp_path / "p", tmp_path / "work")
    [pair] = find_pairs(parse_declaration(contracts.read_text(), contracts), base)
    assert pair.status == "changed", pair.reason
    assert pair.base is not None
    assert pair.base.repository == (tmp_path / "work" / "tree" / "repo").resolve()
    assert (pair.base.repository / "m" / "1" / "model.py").read_text() == "BASE = 1\n"
    assert git(tmp_path / "p", "status", "--porcelain", "--ignored") == before
    assert git(tmp_path / "p", "worktree", "list").count("\n") == 1


def test_an_unknown_ref_says_how_to_get_it(tmp_path: Path) -> None:
    project(tmp_path / "p")
    with pytest.raises(
        ConfigError, match=r"--triton-baseline='origin/nope': git knows no such commit .*fetch-depth: 0"
    ):
        open_base("origin/nope", tmp_path / "p", tmp_path / "work")
    with pytest.raises(ConfigError, match=r"not a folder, and .* is not in a git work tree"):
        open_base("main", tmp_path, tmp_path / "work")


def test_a_folder_is_the_base_as_it_is_and_an_unchanged_repository_is_skipped_unless_asked(tmp_path: Path) -> None:
    contracts = project(tmp_path / "head")
    subprocess.run(["cp", "-r", str(tmp_path / "head"), str(tmp_path / "base")], check=True)
    (tmp_path / "head" / "repo" / "m" / "1" / "__pycache__").mkdir()
    (tmp_path / "head" / "repo" / "m" / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    base = open_base(str(tmp_path / "base"), tmp_path / "head", tmp_path / "work")
    assert base.commit is None
    [pair] = find_pairs(parse_declaration(contracts.read_text(), contracts), base)
    assert pair.status == "unchanged", pair.reason
    assert "is the same at the folder" in pair.reason
    assert "--triton-baseline-unchanged" in pair.reason
    assert (pair.compared(unchanged=False), pair.compared(unchanged=True)) == (False, True)


def test_the_digest_sees_a_changed_byte_and_ignores_caches(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "model.py").write_text("x = 1\n")
    first = tree_digest(tmp_path)
    (tmp_path / "m" / "__pycache__").mkdir()
    (tmp_path / "m" / "__pycache__" / "model.pyc").write_bytes(b"cache")
    assert tree_digest(tmp_path) == first
    (tmp_path / "m" / "model.py").write_text("x = 2\n")
    assert tree_digest(tmp_path) != first


def test_baseline_limits_are_read_and_a_bad_one_names_the_key(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    text = CONTRACTS.format(extra="\n[baseline]\nmax_p50_ratio = 1.2\nmax_p99_ratio = 1.5\n")
    limits = parse_declaration(text, tmp_path / "contracts.toml").baseline
    assert (limits.max_p50_ratio, limits.max_p99_ratio, limits.min_samples_per_s_ratio) == (1.2, 1.5, 0.90)
    defaults = parse_declaration(CONTRACTS.format(extra=""), tmp_path / "contracts.toml").baseline
    assert (defaults.max_p50_ratio, defaults.max_p99_ratio, defaults.min_samples_per_s_ratio) == (1.10, None, 0.90)
    bad = CONTRACTS.format(extra="\n[baseline]\nmin_samples_per_s_ratio = 0\n")
    with pytest.raises(
        ConfigError,
        match=r"contracts.toml:12:1: baseline.min_samples_per_s_ratio=0: expected a finite number in "
        r"\(0, 1,000\] \(1.10: at most",
    ):
        parse_declaration(bad, tmp_path / "contracts.toml")
