"""Whatever a target holds, linting ends with findings: no traceback, no hang, no unbounded read.

The permission cases run the CLI without the right to read what the mode bits deny. As root (CI runs
as root, and root reads every tree, which hides what a server's user sees) that is root without
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (``setpriv``), on a tree handed to uid 65534 first, so the
mode's "other" bits apply. Switching to uid 65534 instead would lose the interpreter: a pyenv Python
under /root (mode 700) starts as that user with Debian's paths and without the project's packages.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.lint import lint_path
from pytest_triton.lint import tarball
from pytest_triton.lint.limits import LintLimits
from tests.unit.lint.helpers import write_model

GOOD = 'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n'
WORKTREE = Path(__file__).resolve().parents[3]
NOBODY = 65534


def good_model(root: Path, name: str) -> Path:
    return write_model(root, name, GOOD.format(name=name), {"1/model.py": ""})


@pytest.mark.parametrize(
    ("config", "line", "col", "text"),
    [
        ('name: "m"\nbackend: "python"\ninstance_group [ { kind: 4294967296 } ]\n', 3, 26, "4294967296"),
        (
            'name: "m"\nbackend: "python"\ninput [ { name: "x" data_type: 2147483648 dims: [1] } ]\n',
            3,
            32,
            "2147483648",
        ),
        ('name: "m"\nbackend: "python"\nmax_batch_size: -2147483649\n', 3, 17, "-2147483649"),
        (
            'name: "m"\nbackend: "python"\ninput [ { name: "x" dims: [ 1, 9223372036854775808 ] } ]\n',
            3,
            32,
            "out of range",
        ),
    ],
)
def test_out_of_range_values_are_c001_with_position(
    tmp_path: Path, config: str, line: int, col: int, text: str
) -> None:
    write_model(tmp_path, "m", config, {"1/model.py": ""})
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.line, finding.col) == ("C001", line, col)
    assert "failed to read text proto from m/config.pbtxt" in finding.message
    assert text in finding.message


def test_cli_reports_out_of_range_without_traceback(tmp_path: Path) -> None:
    write_model(tmp_path, "m", 'backend: "python"\ninstance_group [ { kind: 4294967296 } ]\n')
    result = run_cli(["lint", str(tmp_path)])
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{tmp_path}/m/config.pbtxt:2:26: C001 failed to read text proto from m/config.pbtxt" in result.stdout


@pytest.mark.parametrize("links", [{"a": ".", "b": "."}, {"self": ".", "up": ".."}])
def test_symlink_loops_are_reported_not_followed(tmp_path: Path, links: dict[str, str]) -> None:
    top = tmp_path / "repos"
    nested = top / "group"
    good_model(nested / "repo", "m")
    for name, to in links.items():
        (nested / name).symlink_to(to)
    result = run_cli(["lint", "--format", "json", str(top)], timeout=60)
    findings = json.loads(result.stdout)
    loops = [f for f in findings if f["rule"] == "L112"]
    assert loops, findings
    assert all("leads back to a folder already searched" in f["message"] for f in loops)
    assert [f for f in findings if f["rule"] != "L112"] == []


def test_link_to_an_ancestor_model_folder_does_not_hang(tmp_path: Path) -> None:
    good_model(tmp_path, "m")
    (tmp_path / "m" / "1" / "loop").symlink_to("..")
    assert [f.rule for f in lint_path(tmp_path)] == []
    (tmp_path / "m" / "2").symlink_to("2")  # a link to itself: a copy or a packager fails on it
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.severity) == ("L113", "error")
    assert finding.message.endswith(
        "is a link loop (the link leads back to itself): a copy, a packager or a backend "
        "reading it blocks, never ends or fails"
    )


def test_config_over_the_size_limit_is_c004(tmp_path: Path) -> None:
    folder = good_model(tmp_path, "m")
    with (folder / "config.pbtxt").open("a") as handle:
        handle.write("# padding\n" * 200)
    (finding,) = lint_path(tmp_path, limits=LintLimits(max_config_bytes=1000))
    assert finding.rule == "C004"
    assert "over the limit max_config_bytes=1,000" in finding.message
    assert "--max-config-bytes" in finding.message
    assert lint_path(tmp_path) == []


def test_config_that_is_not_a_regular_file_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.py").write_text("")
    (tmp_path / "m" / "config.pbtxt").symlink_to("/dev/zero")
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.message) == (
        "C003",
        "config.pbtxt is a character device, not a regular file; it was not read",
    )


def test_long_literal_is_c005_with_its_position(tmp_path: Path) -> None:
    literal = "x" * 5000
    write_model(
        tmp_path,
        "m",
        f'name: "m"\nbackend: "python"\nparameters {{ key: "k" value {{ string_value: "{literal}" }} }}\n',
        {"1/model.py": ""},
    )
    (finding,) = lint_path(tmp_path, limits=LintLimits(max_literal_bytes=4096))
    line = (tmp_path / "m" / "config.pbtxt").read_text().splitlines()[2]
    assert (finding.rule, finding.line, finding.col) == ("C005", 3, line.index('"x') + 1)
    assert "max_literal_bytes=4,096" in finding.message


def test_limits_from_name_value_settings() -> None:
    limits = LintLimits().with_values(["max_config_bytes=2M", "max-archive-members=10"])
    assert (limits.max_config_bytes, limits.max_archive_members) == (2 << 20, 10)
    with pytest.raises(ValueError, match="NAME is one of max_config_bytes"):
        LintLimits().with_values(["max_everything=1"])
    with pytest.raises(ValueError, match="not a positive whole number"):
        LintLimits().with_values(["max_config_bytes=lots"])


# --- unreadable paths, linted by an unprivileged user -------------------------------------------


WITHOUT_READ_OVERRIDE = [
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
]


def run_cli(args: list[str], *, unprivileged: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest_triton", *args]
    if unprivileged and os.geteuid() == 0:
        command = [*WITHOUT_READ_OVERRIDE, *command]
    env = {**os.environ, "PYTHONPATH": str(WORKTREE)}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A folder every user can search (pytest's tmp_path is private to its owner)."""
    if os.geteuid() == 0 and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: cannot drop root's right to read every file")
    if os.geteuid() == 0 and (probe := run_cli(["rules"], unprivileged=True)).returncode != 0:
        pytest.skip(f"{' '.join(WITHOUT_READ_OVERRIDE)} cannot run {sys.executable}: {probe.stderr.strip()}")
    folder = Path(tempfile.mkdtemp(prefix="pytest-triton-perm-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in [folder, *folder.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(folder)


def lint_unprivileged(tree: Path, target: Path) -> list[dict[str, object]]:
    """Lint ``target`` (inside ``tree``) as a user the mode bits of ``tree`` apply to."""
    if os.geteuid() == 0:
        for path in [tree, *tree.rglob("*")]:
            os.lchown(path, NOBODY, NOBODY)
    result = run_cli(["lint", "--format", "json", str(target)], unprivileged=True)
    assert "Traceback" not in result.stderr, result.stderr
    findings: list[dict[str, object]] = json.loads(result.stdout)
    return findings


def make_tree(root: Path) -> Path:
    repo = root / "repos" / "repo"
    good_model(repo, "m")
    good_model(repo, "n")
    for path in [root / "repos", repo, *repo.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return repo


def single_unreadable(findings: list[dict[str, object]], path: Path) -> dict[str, object]:
    unreadable = [f for f in findings if f["rule"] in ("L111", "C003")]
    assert len(unreadable) == 1, findings
    (finding,) = unreadable
    assert str(path) in str(finding["path"]) + str(finding["message"])
    assert "Permission denied" in str(finding["message"])
    assert f"the linter runs as uid {os.geteuid()}" in str(finding["message"])
    return finding


def test_unreadable_model_folder(public_tmp: Path) -> None:
    repo = make_tree(public_tmp)
    (repo / "m").chmod(0o000)
    finding = single_unreadable(lint_unprivileged(public_tmp, repo), repo / "m")
    assert "mode d---------" in str(finding["message"])


def test_unreadable_version_folder(public_tmp: Path) -> None:
    repo = make_tree(public_tmp)
    (repo / "n" / "1").chmod(0o300)  # can enter, cannot list
    finding = single_unreadable(lint_unprivileged(public_tmp, repo), repo / "n" / "1")
    assert "mode d-wx------" in str(finding["message"])


def test_unreadable_config(public_tmp: Path) -> None:
    repo = make_tree(public_tmp)
    (repo / "m" / "config.pbtxt").chmod(0o000)
    finding = single_unreadable(lint_unprivileged(public_tmp, repo), repo / "m" / "config.pbtxt")
    assert finding["rule"] == "C003"


def test_unreadable_target(public_tmp: Path) -> None:
    repo = make_tree(public_tmp)
    repo.chmod(0o000)
    single_unreadable(lint_unprivileged(public_tmp, repo), repo)


def test_target_behind_a_folder_nobody_can_search(public_tmp: Path) -> None:
    repo = make_tree(public_tmp)
    (public_tmp / "repos").chmod(0o700)
    finding = single_unreadable(lint_unprivileged(public_tmp, repo), public_tmp / "repos")
    assert finding["rule"] == "L111"


def test_unreadable_subfolder_of_a_folder_of_repositories(public_tmp: Path) -> None:
    repo = make_tree(public_tmp)
    other = public_tmp / "repos" / "private"
    good_model(other / "repo", "p")
    other.chmod(0o000)
    findings = lint_unprivileged(public_tmp, public_tmp / "repos")
    single_unreadable(findings, other)
    assert not any("repo/m" in str(f["path"]) for f in findings if f["rule"] != "L111"), repo


def test_as_root_the_same_tree_lints_clean(public_tmp: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root reads every folder")
    repo = make_tree(public_tmp)
    (repo / "m").chmod(0o000)
    assert lint_path(repo) == []
    assert stat.S_IMODE((repo / "m").stat().st_mode) == 0


# --- archives: streamed, weights never written, counts and bytes bounded -----------------------


def zeros_member(tar: tarfile.TarFile, name: str, size: int) -> None:
    class Zeros(io.RawIOBase):
        def __init__(self) -> None:
            self.left = size

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            count = min(len(buffer), self.left)
            buffer[:count] = bytes(count)
            self.left -= count
            return count

    info = tarfile.TarInfo(name)
    info.size = size
    tar.addfile(info, io.BufferedReader(Zeros()))


def model_archive(path: Path, *, weights: int = 0, extra_members: int = 0) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in (("m/config.pbtxt", GOOD.format(name="m").encode()), ("m/1/model.py", b"")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        if weights:
            zeros_member(tar, "m/1/weights.bin", weights)
        for index in range(extra_members):
            tar.addfile(tarfile.TarInfo(f"m/1/extra-{index}"), io.BytesIO(b""))
    return path


def test_archive_weights_are_not_written_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = model_archive(tmp_path / "model.tar.gz", weights=8 << 20)
    written: list[tuple[str, int]] = []
    real_copy = tarball._copy

    def spy(source: Any, target: Path, size: int) -> None:
        written.append((target.name, size))
        real_copy(source, target, size)

    monkeypatch.setattr(tarball, "_copy", spy)
    assert lint_path(archive, limits=LintLimits(max_member_bytes=1 << 20)) == []
    assert sorted(written) == [("config.pbtxt", len(GOOD.format(name="m"))), ("model.py", 0)]


def test_archive_total_bytes_limit(tmp_path: Path) -> None:
    archive = model_archive(tmp_path / "model.tar.gz", weights=4 << 20)
    (finding,) = lint_path(archive, limits=LintLimits(max_archive_bytes=1 << 20))
    assert finding.rule == "D608"
    assert "more than 1,048,576 bytes (uncompressed, at member 'm/1/weights.bin')" in finding.message
    assert "--max-archive-bytes" in finding.message


def test_archive_member_count_limit(tmp_path: Path) -> None:
    archive = model_archive(tmp_path / "model.tar.gz", extra_members=20)
    (finding,) = lint_path(archive, limits=LintLimits(max_archive_members=10))
    assert finding.rule == "D608"
    assert "more than 10 members" in finding.message
    assert lint_path(archive) == []


def test_no_hint_speaks_of_the_seed() -> None:
    import pytest_triton.lint

    sources = Path(pytest_triton.lint.__file__).parent.rglob("*.py")
    assert [p.name for p in sources if "the seed" in p.read_text(encoding="utf-8")] == []


def test_stray_config_at_a_plain_repository_root_is_a_warning(tmp_path: Path) -> None:
    good_model(tmp_path, "m")
    (tmp_path / "config.pbtxt").write_text('backend: "python"\n')
    (tmp_path / "README.md").write_text("notes\n")
    (finding,) = lint_path(tmp_path)
    assert (finding.rule, finding.severity) == ("L106", "warning")
    assert "ignored by Triton" in finding.message


def test_model_target_in_a_repository_nobody_can_list(public_tmp: Path) -> None:
    repo = make_tree(public_tmp)
    repo.chmod(0o311)  # searchable, not listable: the model itself is readable
    findings = lint_unprivileged(public_tmp, repo / "m")
    assert [f["rule"] for f in findings] == ["L111"]
    assert findings[0]["path"] == str(repo)
