"""LocalLauncher with fake tritonserver scripts: command line, exits, port retries, timeouts, GPU check."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from pytest_triton.errors import ConfigError
from pytest_triton.errors import ServerStartError
from pytest_triton.errors import ServerTimeout
from pytest_triton.repository.layout import model_folders
from pytest_triton.servers import LocalLauncher
from pytest_triton.servers import TritonBinary
from pytest_triton.servers import TritonServer
from pytest_triton.servers.local import launcher as local_mod
from pytest_triton.servers.process import group_members
from pytest_triton.servers.wait import Poll
from pytest_triton.servers.wait import wait_until

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux")


def _fake(tmp_path: Path, body: str) -> TritonBinary:
    """A tritonserver that runs ``body``; its ``--help`` lists no options (as a binary without the restricted
    API: no key on the command line)."""
    exe = tmp_path / "bin" / "tritonserver"
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text('#!/bin/sh\nif [ "$1" = --help ]; then exit 1; fi\n' + body)
    exe.chmod(0o755)
    backends = tmp_path / "backends"
    (backends / "python").mkdir(parents=True, exist_ok=True)
    return TritonBinary(path=exe, env={"FAKE": "1"}, backend_directory=backends, backends=frozenset({"python"}))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name in ("b_model", "a_model", ".ipynb_checkpoints", "__pycache__"):
        (root / name).mkdir(parents=True)
    (root / "README.md").write_text("")
    return root


def test_repository_models_skips_hidden_and_files(repo: Path) -> None:
    assert model_folders(repo) == ["a_model", "b_model"]


def test_command_line(tmp_path: Path, repo: Path) -> None:
    args_file = tmp_path / "bin" / "args"  # beside the binary: the server sees it in its private /tmp
    binary = _fake(
        tmp_path, f'printf "%s\\n" "$@" > {shlex.quote(str(args_file))}; echo "$FAKE" >> {args_file}\nexit 3\n'
    )
    launcher = LocalLauncher(repo, binary=binary, sagemaker=True, extra_args=["--log-verbose=1"], progress=None)
    with pytest.raises(ServerStartError, match=r"(?s)exited before it was ready.*\(exit code 3\)"):
        launcher.start()
    args = args_file.read_text().splitlines()
    assert args[-1] == "1"  # the binary's environment was applied
    args = args[:-1]
    staged = args[0].removeprefix("--model-repository=")
    assert staged != str(repo)  # a staged copy in the launcher's work folder, removed at stop
    assert Path(staged).name == "repository"
    assert not Path(staged).exists()
    assert args[:5] == [
        f"--model-repository={staged}",
        "--model-control-mode=explicit",
        "--load-model=a_model",
        "--load-model=b_model",
        "--exit-on-error=false",
    ]
    for flag in ("--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1"):
        assert flag in args
    ports = {a.split("=")[0]: int(a.split("=")[1]) for a in args if a.split("=")[0].endswith("-port")}
    assert set(ports) == {"--http-port", "--grpc-port", "--metrics-port", "--sagemaker-port"}
    assert len(set(ports.values())) == 4
    assert "--allow-sagemaker=true" in args
    assert f"--backend-directory={tmp_path / 'backends'}" in args
    assert "--exit-timeout-secs=0" in args
    assert any(a.startswith("--backend-config=python,shm-region-prefix-name=pytest_triton_") for a in args)
    assert "--disable-auto-complete-config" not in args
    assert args[-1] == "--log-verbose=1"
    assert launcher.command[1:] == args


def test_models_argument_and_auto_complete(tmp_path: Path, repo: Path) -> None:
    args_file = tmp_path / "bin" / "args"  # beside the binary: the server sees it in its private /tmp
    binary = _fake(tmp_path, f'printf "%s\\n" "$@" > {shlex.quote(str(args_file))}\nexit 1\n')
    launcher = LocalLauncher(repo, models=["b_model"], binary=binary, auto_complete_config=False, progress=None)
    with pytest.raises(ServerStartError):
        launcher.start()
    args = args_file.read_text().splitlines()
    assert [a for a in args if a.startswith("--load-model")] == ["--load-model=b_model"]
    assert "--disable-auto-complete-config" in args


def test_exit_reports_tritons_error_line_and_code(tmp_path: Path, repo: Path) -> None:
    binary = _fake(
        tmp_path,
        "echo 'I1129 08:56:31.430809 1 cuda_memory_manager.cc:117] \"CUDA memory pool disabled\"' >&2\n"
        "echo 'error: creating server: Internal - failed to stat file /nope' >&2\nexit 1\n",
    )
    launcher = LocalLauncher(repo, binary=binary, progress=None)
    with pytest.raises(ServerStartError) as info:
        launcher.start()
    assert "exited before it was ready: error: creating server: Internal - failed to stat file /nope" in str(info.value)
    assert info.value.exit_code == 1
    assert "CUDA memory pool disabled" in info.value.log_tail
    assert "command: " in str(info.value)
    assert "failed to stat file" in launcher.logs()  # the log is kept after the failed start


def test_port_in_use_is_retried_with_new_ports(tmp_path: Path, repo: Path) -> None:
    calls = tmp_path / "bin" / "calls"
    binary = _fake(
        tmp_path,
        f'echo "$@" >> {shlex.quote(str(calls))}\n'
        "echo 'E1129 08:57:25.341053 4953 main.cc:257] \"failed to start HTTP service: Unavailable - "
        "Socket '\"'\"'127.0.0.1:1'\"'\"' already in use \"' >&2\nexit 1\n",
    )
    launcher = LocalLauncher(repo, binary=binary, port_retries=2, progress=None)
    with pytest.raises(ServerStartError, match="could not bind its ports after 3 attempts") as info:
        launcher.start()
    assert "already in use" in info.value.log_tail
    runs = calls.read_text().splitlines()
    assert len(runs) == 3
    http_ports = {next(a for a in run.split() if a.startswith("--http-port=")) for run in runs}
    assert len(http_ports) == 3  # new ports each time


def test_timeout_stops_the_process(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = _fake(tmp_path, "trap '' INT\necho 'loading' >&2\nexec sleep 30\n")
    launcher = LocalLauncher(repo, binary=binary, startup_timeout=0.5, stop_timeout=0.2, progress=None)
    wait_for_frontends = local_mod.wait_for_frontends

    def once_it_wrote(*args: object, **kwargs: object) -> None:
        # on a loaded machine the spawn alone may take the whole 0.5 s: the log tail is checked once it has a line
        wait_until(lambda: Poll("loading" in launcher.logs()), timeout=30.0, progress=None)
        wait_for_frontends(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(local_mod, "wait_for_frontends", once_it_wrote)
    # the message names the start's whole budget, however much of it the spawn took
    with pytest.raises(ServerTimeout, match=r"tritonserver not ready after 0\.5 s \(0/2 models loaded") as info:
        launcher.start()
    assert "loading" in info.value.log_tail
    assert launcher.pid is not None
    assert not launcher.running
    assert group_members(launcher.pid) == []


def test_progress_lines_while_waiting(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = _fake(tmp_path, "exec sleep 30\n")
    lines: list[str] = []

    def fast_progress(*args: object, **kwargs: object) -> float:
        kwargs["progress_every"] = 0.2
        kwargs["timeout"] = 2.0  # the wait's own time, whatever the spawn took of the start's budget
        return wait_until(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(local_mod, "wait_until", fast_progress)
    with pytest.raises(ServerTimeout):
        LocalLauncher(repo, binary=binary, startup_timeout=0.7, progress=lines.append).start()
    assert lines
    assert lines[0].startswith("waiting for tritonserver: 0/2 models loaded, 0 failed (0.")


def test_gpu_requested_but_not_visible(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_mod, "gpu_visible", lambda: False)
    binary = _fake(tmp_path, "exit 0\n")
    launcher = LocalLauncher(repo, binary=binary, gpu=True, progress=None)
    with pytest.raises(ServerStartError, match="gpu=True but no GPU is visible") as info:
        launcher.start()
    assert "nvidia-smi" in str(info.value)
    assert launcher.pid is None  # nothing was started
    assert not launcher.has_gpu


def test_repository_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"model repository '.*missing' does not exist"):
        LocalLauncher(tmp_path / "missing", binary=_fake(tmp_path, "exit 0\n")).start()
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"model repository '.*file' is not a folder"):
        LocalLauncher(tmp_path / "file", binary=_fake(tmp_path, "exit 0\n")).start()


def test_protocol_and_properties_before_start(tmp_path: Path, repo: Path) -> None:
    launcher = LocalLauncher(repo, binary=_fake(tmp_path, "exit 0\n"))
    typed: TritonServer = launcher  # mypy checks LocalLauncher against the protocol
    assert typed.backends == frozenset({"python"})
    assert launcher.backends == frozenset({"python"})
    assert launcher.logs() == ""
    assert launcher.log_tail() == ""
    assert launcher.pid is None
    assert "not started" in repr(launcher)
    launcher.stop()  # stop before start does nothing
