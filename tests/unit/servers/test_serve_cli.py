"""serve_main: argument errors and start failures exit 1 with the reason on stderr; nothing on stdout."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_triton.servers.serve_cli import build_parser
from pytest_triton.servers.serve_cli import serve_main


def test_repo_must_be_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert serve_main([str(tmp_path / "missing")]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "model repository" in err
    assert "does not exist; give the folder that holds the model folders" in err


def test_url_launcher_needs_a_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert serve_main([str(tmp_path), "--launcher", "url"]) == 1
    assert "the url launcher needs the server's URL" in capsys.readouterr().err


def test_unknown_launcher_lists_the_known_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert serve_main([str(tmp_path), "--launcher", "nope"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "launcher='nope' is not a known launcher (known: docker, local, sagemaker, sagemaker-local, url" in err


def test_settings_must_be_key_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert serve_main([str(tmp_path), "--setting", "image"]) == 1
    assert "--setting 'image' is not KEY=VALUE" in capsys.readouterr().err


def test_a_setting_the_launcher_does_not_read_lists_its_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert serve_main([str(tmp_path), "--setting", "shm_size=1g"]) == 1
    err = capsys.readouterr().err
    assert "setting shm_size='1g' is not one the 'local' launcher reads" in err
    assert "tritonserver: the tritonserver binary" in err


def test_bad_tritonserver_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert serve_main([str(tmp_path), "--tritonserver", str(tmp_path / "nope")]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: tritonserver path=")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux")
def test_server_exit_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "repo" / "m").mkdir(parents=True)
    exe = tmp_path / "tritonserver"
    exe.write_text("#!/bin/sh\necho 'error: creating server: Internal - nope' >&2\nexit 1\n")
    exe.chmod(0o755)
    assert serve_main([str(tmp_path / "repo"), "--tritonserver", str(exe), "--timeout", "10"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert "tritonserver exited before it was ready: error: creating server: Internal - nope" in err
    assert "(exit code 1)" in err


def test_parser_options() -> None:
    args = build_parser().parse_args(
        ["repo", "--launcher", "url", "--url", "http://h:1", "--gpu", "--timeout", "5", "--model", "a", "--model", "b"]
    )
    assert (args.repository, args.launcher, args.url, args.gpu, args.timeout) == (
        "repo",
        "url",
        "http://h:1",
        True,
        5.0,
    )
    assert args.models == ["a", "b"]


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "soon"])
def test_a_timeout_that_is_not_a_finite_positive_number_is_refused_at_parse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    # nan, inf and -1 were accepted: a wait without a deadline, or none at all
    (tmp_path / "repo").mkdir()
    with pytest.raises(SystemExit) as exited:
        serve_main([str(tmp_path / "repo"), "--timeout", value])
    assert exited.value.code == 2
    assert f"timeout={value!r}: give a finite number of seconds above 0" in capsys.readouterr().err


def test_a_fifo_in_the_repository_fails_the_start_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the staging copy blocked on the FIFO's open: `serve --timeout 5` hung for 45 s and more
    (tmp_path / "repo" / "m" / "1").mkdir(parents=True)
    (tmp_path / "repo" / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
    os.mkfifo(tmp_path / "repo" / "m" / "1" / "model.py")
    assert serve_main([str(tmp_path / "repo"), "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'repo' / 'm' / '1' / 'model.py'}: a FIFO cannot be served" in err
    assert "Traceback" not in err
