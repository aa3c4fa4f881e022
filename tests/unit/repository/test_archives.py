"""model.tar.gz in and out: what packaging leaves out (hidden files, the sidecar), that it streams, and the
shared archive limits of the linter, sagemaker-local and ``--endpoint`` (memory, members, bytes, links)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from pytest_triton.archive.guarded import ArchiveLimitError
from pytest_triton.archive.guarded import ArchiveLimits
from pytest_triton.archive.guarded import open_guarded
from pytest_triton.archive.model_tar import folder_env
from pytest_triton.archive.model_tar import unpack_model_archive
from pytest_triton.errors import ConfigError
from pytest_triton.lint import lint_path
from pytest_triton.lint.limits import LintLimits
from pytest_triton.repository.sagemaker import package_model_tar

from .archives import archive_of
from .archives import huge_pax_archive

ROOT = Path(__file__).resolve().parents[3]
CONFIG = b'name: "m"\nbackend: "python"\nmax_batch_size: 0\n'
SECRET = "TOKEN=ghp_not-a-real-token-but-a-secret"


def _repo(root: Path) -> Path:
    (root / "m" / "1" / "__pycache__").mkdir(parents=True)
    (root / "m" / "config.pbtxt").write_bytes(CONFIG)
    (root / "m" / "1" / "model.py").write_text("pass\n")
    (root / "m" / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"\0")
    (root / "m" / ".ipynb_checkpoints").mkdir()
    (root / "m" / ".ipynb_checkpoints" / "model-checkpoint.py").write_text(SECRET)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(SECRET)
    (root / ".env").write_text(f"{SECRET}\nSAGEMAKER_TRITON_DEFAULT_MODEL_NAME=m\n")
    return root


def _names(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        return sorted(tar.getnames())


def test_packaging_leaves_out_hidden_files_caches_and_the_sidecar(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    (repo / "sagemaker.env").write_text("SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=m\n")
    archive = package_model_tar(repo, tmp_path / "out" / "model.tar.gz", default_model="m")
    assert _names(archive) == ["m", "m/1", "m/1/model.py", "m/config.pbtxt"]
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member)
            assert handle is None or b"ghp_" not in handle.read()
    assert lint_path(archive) == []
    assert not list((tmp_path / "out").glob(".*partial"))


def test_the_folder_sidecar_is_sagemaker_env_and_a_legacy_env_gives_only_serve_variables(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    values, notes = folder_env(repo)
    assert values == {"SAGEMAKER_TRITON_DEFAULT_MODEL_NAME": "m"}  # not TOKEN
    assert "rename it sagemaker.env" in notes[0]
    (repo / "sagemaker.env").write_text("SAGEMAKER_TRITON_LOG_VERBOSE=1\n")
    assert folder_env(repo) == ({"SAGEMAKER_TRITON_LOG_VERBOSE": "1"}, [])


def test_linter_warns_on_hidden_members(tmp_path: Path) -> None:
    archive = archive_of(
        tmp_path / "model.tar.gz",
        [
            ("m/config.pbtxt", CONFIG, tarfile.REGTYPE),
            ("m/1/model.py", b"", tarfile.REGTYPE),
            (".env", SECRET.encode(), tarfile.REGTYPE),
            (".git/config", b"", tarfile.REGTYPE),
        ],
    )
    findings = [f for f in lint_path(archive) if f.rule == "D610"]  # .git/ is also polled as a model (L-rules)
    assert len(findings) == 1
    assert findings[0].severity == "warning"
    assert "'.env', '.git/config'" in findings[0].message


_PEAK = (
    "import resource, sys, json; from pathlib import Path; {setup}; {call}; "
    "print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))"
)


def _peak_rss(setup: str, call: str) -> int:
    """Peak RSS in bytes of a fresh interpreter that runs ``call`` (this process's memory stays out of it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _PEAK.format(setup=setup, call=call)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=600,
    )
    return int(json.loads(out.stdout.strip().splitlines()[-1]))


def test_packaging_streams_a_large_weight(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "m" / "1").mkdir(parents=True)
    (repo / "m" / "config.pbtxt").write_bytes(CONFIG)
    weights = 256 << 20
    with (repo / "m" / "1" / "weights.bin").open("wb") as out:
        out.truncate(weights)  # sparse: costs no disk, reads as zeros
    baseline = _peak_rss("from pytest_triton.repository.sagemaker import package_model_tar", "None")
    peak = _peak_rss(
        "from pytest_triton.repository.sagemaker import package_model_tar",
        f"package_model_tar(Path({str(repo)!r}), Path({str(tmp_path / 'model.tar.gz')!r}))",
    )
    assert peak - baseline < weights // 8, (baseline, peak)  # in memory it took more than the weight itself


def test_a_huge_pax_header_is_refused_before_tarfile_reads_it(tmp_path: Path) -> None:
    archive = huge_pax_archive(tmp_path / "model.tar.gz", 200 << 20)
    assert archive.stat().st_size < 2 << 20
    findings = lint_path(archive)
    assert [f.rule for f in findings] == ["D608"]
    assert "pax header at byte 0 holds 209,715,200 bytes" in findings[0].message
    assert "--max-archive-header-bytes" in findings[0].message
    baseline = _peak_rss("from pytest_triton.lint import lint_path", "None")
    peak = _peak_rss("from pytest_triton.lint import lint_path", f"lint_path(Path({str(archive)!r}))")
    assert peak - baseline < 50 << 20, (baseline, peak)  # tarfile alone holds all 200 MB of it
    with pytest.raises(ArchiveLimitError, match="max_header_bytes=1,048,576"):
        unpack_model_archive(archive, tmp_path / "out")
    # the limit is a setting: raised, the archive is read
    assert lint_path(archive, limits=LintLimits(max_archive_header_bytes=300 << 20)) == []


def test_the_linter_write_budget_stops_writing_with_a_finding(tmp_path: Path) -> None:
    members: list[tuple[str, bytes | None, bytes]] = [
        ("m/config.pbtxt", CONFIG, tarfile.REGTYPE),
        ("m/1/model.py", b"", tarfile.REGTYPE),
    ]
    members += [(f"m/1/lib{i}.py", b"#" * (40 << 10), tarfile.REGTYPE) for i in range(6)]  # python is written out
    archive = archive_of(tmp_path / "model.tar.gz", members)
    findings = lint_path(archive, limits=LintLimits(max_written_bytes=100 << 10))
    assert [f.rule for f in findings] == ["D611"]
    assert "--max-written-bytes" in findings[0].message
    assert lint_path(archive) == []


@pytest.mark.parametrize(
    ("member", "reason"),
    [
        (("m/1/link", b"m/config.pbtxt", tarfile.LNKTYPE), "is a link"),
        (("m/1/sym", b"../config.pbtxt", tarfile.SYMTYPE), "is a link"),
        (("m/../../evil", b"x", tarfile.REGTYPE), "escapes the archive"),
        (("/abs", b"x", tarfile.REGTYPE), "absolute path"),
        (("m/fifo", None, tarfile.FIFOTYPE), "special file"),
    ],
)
def test_unpacking_refuses_links_escapes_and_devices(
    tmp_path: Path, member: tuple[str, bytes | None, bytes], reason: str
) -> None:
    archive = archive_of(tmp_path / "model.tar.gz", [("m/config.pbtxt", CONFIG, tarfile.REGTYPE), member])
    with pytest.raises(ConfigError, match=reason):
        unpack_model_archive(archive, tmp_path / "out")
    assert not (tmp_path / "evil").exists()


def test_unpacking_bounds_members_and_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    members: list[tuple[str, bytes | None, bytes]] = [(f"m/{i}", b"x" * 1000, tarfile.REGTYPE) for i in range(5)]
    archive = archive_of(tmp_path / "model.tar.gz", members)
    with pytest.raises(ArchiveLimitError, match="over max_members=3"):
        unpack_model_archive(archive, tmp_path / "a", ArchiveLimits(max_members=3))
    monkeypatch.setenv("PYTEST_TRITON_ARCHIVE_LIMITS", "max_total_bytes=2K")
    with pytest.raises(ArchiveLimitError, match="PYTEST_TRITON_ARCHIVE_LIMITS=max_total_bytes=N") as caught:
        unpack_model_archive(archive, tmp_path / "b")
    assert caught.value.limit == "max_total_bytes"
    monkeypatch.setenv("PYTEST_TRITON_ARCHIVE_LIMITS", "max_total_bytes=1M")
    assert sorted(p.name for p in (unpack_model_archive(archive, tmp_path / "c") / "m").iterdir()) == list("01234")


def test_the_guard_follows_a_pax_size_record(tmp_path: Path) -> None:
    """A member whose size is in its pax header (as tarfile writes sizes over 8 GiB), its ustar size field 0:
    the guard must find the next header where tarfile does, or it would judge data blocks as headers."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("m/1/weights.bin")
        info.size = 1500
        info.pax_headers = {"size": "1500"}
        tar.addfile(info, io.BytesIO(b"x" * 1500))  # not zeros: a zero block would read as the end
        info = tarfile.TarInfo("m/config.pbtxt")
        info.size = len(CONFIG)
        tar.addfile(info, io.BytesIO(CONFIG))
    data = bytearray(buffer.getvalue())
    start = data.find(b"m/1/weights.bin\0")
    data[start + 124 : start + 136] = b"0" * 11 + b"\0"  # the ustar size field says 0
    data[start + 148 : start + 156] = b" " * 8
    data[start + 148 : start + 156] = b"%06o\0 " % sum(data[start : start + 512])
    archive = tmp_path / "model.tar"
    archive.write_bytes(bytes(data))
    with open_guarded(str(archive), ArchiveLimits()) as tar:
        assert [(m.name, m.size) for m in tar] == [("m/1/weights.bin", 1500), ("m/config.pbtxt", len(CONFIG))]
    out = unpack_model_archive(archive, tmp_path / "out")
    assert (out / "m" / "config.pbtxt").read_bytes() == CONFIG
