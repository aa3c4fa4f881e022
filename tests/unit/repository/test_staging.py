"""Staging copies regular files and folders only: special files, links out of the repository, dangling links
and link loops are a ConfigError naming the file, never a hang, a full disk or a traceback."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.repository.layout import stage_copy

ROOT = Path(__file__).resolve().parents[3]
FILE_LIMIT = 64 * 1024 * 1024  # the child may write this much: /dev/zero copied without a bound stops here
STAGE = """
import json, sys
from pathlib import Path
from pytest_triton.errors import ConfigError
from pytest_triton.repository.layout import stage_copy
try:
    stage_copy(Path(sys.argv[1]), Path(sys.argv[2]))
    print(json.dumps({"staged": True}))
except ConfigError as err:
    print(json.dumps({"error": str(err)}))
"""


def _repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "m" / "1").mkdir(parents=True)
    (repo / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    (repo / "m" / "1" / "model.py").write_text("# model\n")
    return repo


def _fifo(repo: Path) -> Path:
    os.mkfifo(repo / "m" / "1" / "weights.bin")
    return repo / "m" / "1" / "weights.bin"


def _dev_zero(repo: Path) -> Path:
    (repo / "m" / "1" / "weights.bin").symlink_to("/dev/zero")
    return repo / "m" / "1" / "weights.bin"


def _loop(repo: Path) -> Path:
    (repo / "m" / "1" / "again").symlink_to("..")
    return repo / "m" / "1" / "again"


def _outside(repo: Path) -> Path:
    (repo.parent / "secret.txt").write_text("not the repository's")
    (repo / "m" / "1" / "secret.txt").symlink_to(repo.parent / "secret.txt")
    return repo / "m" / "1" / "secret.txt"


def _dangling(repo: Path) -> Path:
    (repo / "m" / "1" / "gone").symlink_to("nowhere")
    return repo / "m" / "1" / "gone"


def _socket(repo: Path) -> Path:
    import socket

    path = repo / "m" / "1" / "s"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
    return path


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (_fifo, "a FIFO cannot be served"),
        (_dev_zero, "outside the repository"),
        (_loop, "a folder that holds it (a loop)"),
        (_outside, "outside the repository"),
        (_dangling, "a link that leads nowhere"),
        (_socket, "a socket cannot be served"),
    ],
    ids=["fifo", "dev-zero", "link-loop", "link-out", "dangling-link", "socket"],
)
def test_staging_refuses_what_is_not_a_regular_file_or_folder(
    tmp_path: Path, make: Callable[[Path], Path], words: str
) -> None:
    # in a child with a file-size limit and a deadline: a FIFO blocked the copy, /dev/zero filled the disk, a
    # loop was copied 40 levels deep before a traceback
    repo = _repository(tmp_path)
    culprit = make(repo)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", STAGE, str(repo), str(tmp_path / "staged")]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, env=env, timeout=30, preexec_fn=_limit_file_size, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"staging a repository with {culprit.name} did not end in 30 s")
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout)
    assert "error" in outcome, outcome
    assert outcome["error"].startswith(f"{culprit}: "), outcome
    assert words in outcome["error"], outcome


def test_links_inside_the_repository_are_copied_as_files(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    (repo / "m" / "1" / "same.py").symlink_to("model.py")
    (repo / "m" / "2").symlink_to("1")
    staged = stage_copy(repo, tmp_path / "staged")
    for name in ("1/same.py", "2/model.py", "2/same.py"):
        path = staged / "m" / name
        assert not path.is_symlink(), name
        assert path.read_text() == "# model\n"
    assert not (staged / "m" / "2").is_symlink()


def test_a_file_larger_than_the_free_space_is_refused(tmp_path: Path) -> None:
    repo = _repository(tmp_path)
    with (repo / "m" / "1" / "weights.bin").open("wb") as out:
        out.truncate(1 << 40)  # a sparse terabyte: copied in full where there are no clones
    with pytest.raises(ConfigError, match=r"weights.bin: 1099511627776 bytes do not fit in the staging folder"):
        stage_copy(repo, tmp_path / "staged")
