"""What a hostile repository cannot make the linter do: hang, read without end, echo bytes, work quadratically.

Each special file is linted in a worker thread with a deadline, so a regression fails here instead of hanging.
"""

from __future__ import annotations

import os
import tarfile
import threading
import time
from pathlib import Path

import pytest

from pytest_triton.lint import Finding
from pytest_triton.lint import lint_path
from tests.unit.lint.helpers import write_model

PYTHON = 'name: "{name}"\nbackend: "python"\n'
DEADLINE = 20.0


def lint_within_deadline(path: Path) -> list[Finding]:
    """``lint_path(path)``, failing the test when it has not returned after DEADLINE seconds."""
    result: list[list[Finding]] = []
    worker = threading.Thread(target=lambda: result.append(lint_path(path)), daemon=True)
    worker.start()
    worker.join(DEADLINE)
    if worker.is_alive():
        pytest.fail(f"lint of {path} did not return within {DEADLINE:.0f} s (it blocks on a special file)")
    return result[0]


def python_model(root: Path, name: str = "m") -> Path:
    return write_model(root, name, PYTHON.format(name=name), {"1/model.py": ""})


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-loop"])
def test_a_special_file_in_a_model_folder_is_reported(tmp_path: Path, kind: str) -> None:
    special = python_model(tmp_path) / "1" / "weights.bin"
    if kind == "fifo":
        os.mkfifo(special)
    elif kind == "dev-zero":
        special.symlink_to("/dev/zero")
    else:
        special.symlink_to(special.name)
    (finding,) = lint_within_deadline(tmp_path)
    assert (finding.rule, finding.severity, finding.path) == ("L113", "error", str(special))
    what = {"fifo": "a FIFO (named pipe)", "dev-zero": "a character device", "link-loop": "a link loop"}[kind]
    assert f"{str(special)!r} is {what}" in finding.message


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_special_sidecar_of_an_archive_is_refused_with_a_finding(tmp_path: Path, kind: str) -> None:
    source = tmp_path / "src"
    python_model(source, "a")
    python_model(source, "b")
    archive = tmp_path / "model.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(source, arcname=".")
    sidecar = tmp_path / "model.tar.gz.env"
    os.mkfifo(sidecar) if kind == "fifo" else sidecar.symlink_to("/dev/zero")
    findings = {f.rule: f for f in lint_within_deadline(archive)}
    assert findings["D612"].path == str(sidecar)
    assert findings["D612"].message.startswith("sidecar model.tar.gz.env is a ")
    assert "D602" in findings  # read as no sidecar: two models and no default named


def test_a_config_linked_out_of_the_repository_is_not_quoted(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secrets.env"
    secret.parent.mkdir()
    secret.write_text("AWS_SECRET_ACCESS_KEY=hunter2 {\n")  # a syntax error would quote it
    repository = tmp_path / "repo"
    (repository / "m" / "1").mkdir(parents=True)
    (repository / "m" / "1" / "model.py").write_text("")
    (repository / "m" / "config.pbtxt").symlink_to(secret)
    (finding,) = lint_path(repository)
    assert (finding.rule, finding.severity) == ("L114", "warning")
    assert "hunter2" not in finding.message + finding.hint
    assert f"config.pbtxt is a link that leads out of {str(repository)!r}" in finding.message


def test_proc_environ_behind_a_config_link_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "m" / "1").mkdir(parents=True)
    (tmp_path / "m" / "1" / "model.py").write_text("")
    (tmp_path / "m" / "config.pbtxt").symlink_to("/proc/self/environ")
    (finding,) = lint_path(tmp_path)
    assert finding.rule == "L114"
    assert os.environ.get("PATH", "PATH") not in finding.message


def test_text_output_prints_a_newline_in_a_folder_name_escaped(tmp_path: Path) -> None:
    name = "m\n::error file=README.md::forged"
    python_model(tmp_path, name)
    findings = lint_path(tmp_path)
    assert findings  # the config's name differs from the folder's (L103)
    for finding in findings:
        lines = finding.format().splitlines()
        assert not any(line.startswith("::") for line in lines), lines
        assert "m\\n::error file=README.md::forged" in lines[0]


def test_text_output_escapes_every_control_character() -> None:
    finding = Finding("a\x1b[31m\rb\u2028", 1, 1, "L103", "error", "msg\x00\x85", "hint\x07")
    assert finding.format() == "a\\x1b[31m\\rb\\u2028:1:1: L103 msg\\x00\\x85\n  hint: hint\\x07"


def _cpu_seconds(root: Path, outputs: int) -> float:
    entries = ",\n".join('  { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] }' for _ in range(outputs))
    write_model(root, "m", PYTHON.format(name="m") + f"max_batch_size: 0\noutput [\n{entries}\n]\n", {"1/model.py": ""})
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        findings = lint_path(root)
        best = min(best, time.process_time() - started)
    assert len(findings) == outputs - 1  # one duplicate-name finding (S238) per repeated output
    return best


def test_lint_work_grows_linearly_with_the_findings_of_one_config(tmp_path: Path) -> None:
    """8,000 and 16,000 duplicate outputs side by side: twice the input, about twice the CPU time (suppressions
    are read once per file, not once per finding: that was 3.6x here, and 90 s at 60,000)."""
    small = _cpu_seconds(tmp_path / "small", 8_000)
    large = _cpu_seconds(tmp_path / "large", 16_000)
    assert large / small < 2.8, f"16,000 outputs took {large:.2f} s of CPU, 8,000 took {small:.2f} s"
