"""The guarded file reader: regular files only, within their kind's size, inside their root, UTF-8 text.

Each case is a real special file (a FIFO, /dev/zero behind a link, a listening socket) made in tmp_path; a read
that waited or ran on would hang the test, so every case is bounded by a thread join with a deadline.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_triton.archive.files import FileLimits
from pytest_triton.archive.files import RefusedFile
from pytest_triton.archive.files import read_file_bytes
from pytest_triton.archive.files import read_file_text
from pytest_triton.errors import ConfigError


def within(seconds: float, call: Callable[[], Any]) -> BaseException | Any:
    """What ``call`` returned or raised, or a failure when it has not ended after ``seconds``."""
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(call())
        except BaseException as exc:  # handed to the test
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still reading after {seconds} s")
    return box[0]


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("a = 1\n", encoding="utf-8")
    assert read_file_text(path, "contracts") == "a = 1\n"


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "contracts.toml"
    os.mkfifo(fifo)
    outcome = within(5, lambda: read_file_text(fifo, "contracts"))
    assert isinstance(outcome, ConfigError)
    assert "is a FIFO (named pipe), not a regular file" in str(outcome)
    assert str(fifo) in str(outcome)


def test_a_link_to_dev_zero_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "budgets.toml"
    link.symlink_to("/dev/zero")
    outcome = within(5, lambda: read_file_bytes(link, "budgets"))
    assert isinstance(outcome, ConfigError)
    assert "(a link to /dev/zero) is a character device" in str(outcome)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    where = tmp_path / "s.jsonl"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(where))
        server.listen(1)
        outcome = within(5, lambda: read_file_bytes(where, "samples"))
    finally:
        server.close()
    assert isinstance(outcome, ConfigError)
    assert "is a socket" in str(outcome)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a folder, not a regular file"):
        read_file_bytes(tmp_path, "ledger")


def test_a_file_over_its_kind_limit_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * 2048)
    small = FileLimits(contracts=1024)
    with pytest.raises(ConfigError, match=r"holds 2,048 bytes, over the 1,024 bytes a contracts file may hold"):
        read_file_bytes(path, "contracts", limits=small)
    assert read_file_bytes(path, "budgets", limits=small) == b"#" * 2048  # another kind, another limit


def test_a_proc_file_that_claims_zero_bytes_is_still_bounded() -> None:
    # /proc files stat as 0 bytes and read as whatever they hold: the read stops at the limit plus one
    outcome = within(5, lambda: read_file_bytes(Path("/proc/self/maps"), "sidecar", limits=FileLimits(sidecar=16)))
    assert isinstance(outcome, ConfigError)
    assert "grew past the 16 bytes" in str(outcome)


def test_the_limit_is_raised_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_TRITON_FILE_LIMITS", "samples=1G, ledger=2K")
    limits = FileLimits.from_env()
    assert (limits.samples, limits.ledger) == (1 << 30, 2048)
    monkeypatch.setenv("PYTEST_TRITON_FILE_LIMITS", "nope=1")
    with pytest.raises(ConfigError, match="KIND is one of budgets, contracts"):
        FileLimits.from_env()


def test_a_link_out_of_its_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.env"
    outside.write_text("TOKEN=x\n", encoding="utf-8")
    root = tmp_path / "repo"
    root.mkdir()
    (root / "sagemaker.env").symlink_to(outside)
    with pytest.raises(ConfigError, match="leads outside"):
        read_file_text(root / "sagemaker.env", "sidecar", root=root)
    (root / "inside.env").write_text("A=1\n", encoding="utf-8")
    (root / "link.env").symlink_to(root / "inside.env")
    assert read_file_text(root / "link.env", "sidecar", root=root) == "A=1\n"


def test_text_that_is_not_utf8_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b'a = 1\nb = "x\xff"\n')
    with pytest.raises(ConfigError, match=r"c\.toml:2:7: byte b'\\xff' is not UTF-8"):
        read_file_text(path, "contracts")


def test_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.toml: cannot read the budgets file: No such file"):
        read_file_text(tmp_path / "nope.toml", "budgets")


# -- the readers that go through it -------------------------------------------------------------------------


def test_a_fifo_sidecar_beside_an_archive_is_refused_without_waiting(tmp_path: Path) -> None:
    from pytest_triton.archive.model_tar import read_env_file
    from pytest_triton.archive.model_tar import sidecar_env

    sidecar = sidecar_env(tmp_path / "model.tar.gz")
    os.mkfifo(sidecar)
    outcome = within(5, lambda: read_env_file(sidecar))
    assert isinstance(outcome, ConfigError)
    assert "environment sidecar is a FIFO" in str(outcome)


def test_a_folder_sidecar_linked_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    from pytest_triton.archive.model_tar import folder_env

    (tmp_path / "secrets.env").write_text("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=m\n", encoding="utf-8")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "sagemaker.env").symlink_to(tmp_path / "secrets.env")
    with pytest.raises(ConfigError, match="environment sidecar leads outside"):
        folder_env(repo)


def test_a_ledger_that_is_a_dev_zero_link_is_refused(tmp_path: Path) -> None:
    from pytest_triton.cloud.ledger_files import ledger_path
    from pytest_triton.cloud.resources import Ledger

    journal = ledger_path("run1", tmp_path)
    journal.symlink_to("/dev/zero")
    outcome = within(5, lambda: Ledger.read(journal))
    assert isinstance(outcome, ConfigError)
    assert "ledger file (a link to /dev/zero) is a character device" in str(outcome)


def test_a_per_call_limit_replaces_the_kinds_and_the_refusal_says_why(tmp_path: Path) -> None:
    path = tmp_path / "config.pbtxt"
    path.write_bytes(b"#" * 2048)
    with pytest.raises(RefusedFile) as refused:
        read_file_bytes(path, "config", limit=1024)
    assert (refused.value.refusal, refused.value.fact) == ("too large", "is 2,048 bytes")
    assert "PYTEST_TRITON_FILE_LIMITS" not in str(refused.value)  # the caller's own setting, not the kind's
    assert read_file_bytes(path, "config", limit=2048) == b"#" * 2048


def test_a_device_linked_out_of_its_root_is_named_as_a_device(tmp_path: Path) -> None:
    (tmp_path / "model.tar.gz.env").symlink_to("/dev/zero")
    outcome = within(5, lambda: read_file_bytes(tmp_path / "model.tar.gz.env", "sidecar", root=tmp_path))
    assert isinstance(outcome, RefusedFile)
    assert (outcome.refusal, outcome.fact) == (
        "not regular",
        "is a character device, not a regular file; it was not read",
    )


def test_a_missing_file_keeps_the_file_systems_error(tmp_path: Path) -> None:
    with pytest.raises(RefusedFile) as refused:
        read_file_bytes(tmp_path / "nope", "sidecar")
    assert refused.value.refusal == "unreadable"
    assert isinstance(refused.value.os_error, FileNotFoundError)


# -- write_private: what the plugin writes (reports, ledgers) is its owner's alone ----------------------------------


def test_written_files_are_owner_only_whatever_the_umask_and_an_older_mode(tmp_path: Path) -> None:
    from pytest_triton.archive.files import write_private

    old = os.umask(0o022)
    try:
        fresh = write_private(tmp_path / "report.json", "{}\n")
        older = tmp_path / "ledger.jsonl"
        older.write_text("first\n")
        older.chmod(0o644)
        write_private(older, "second\n", append=True, sync=True)
    finally:
        os.umask(old)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert stat.S_IMODE(older.stat().st_mode) == 0o600
    assert older.read_text() == "first\nsecond\n"
    write_private(fresh, "short\n")  # rewriting truncates
    assert fresh.read_text() == "short\n"


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_a_link_or_a_fifo_where_a_report_goes_is_refused_not_followed(tmp_path: Path, kind: str) -> None:
    from pytest_triton.archive.files import write_private

    victim = tmp_path / "theirs.txt"
    victim.write_text("keep me\n")
    target = tmp_path / "report.md"
    if kind == "link":
        target.symlink_to(victim)
    else:
        os.mkfifo(target)
    with pytest.raises(ConfigError, match=r"report\.md"):
        write_private(target, "# report\n")
    assert victim.read_text() == "keep me\n"
