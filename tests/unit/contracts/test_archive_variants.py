"""A contracts variant whose repository is a model.tar.gz is unpacked through the guarded reader: its limits
(``$PYTEST_TRITON_ARCHIVE_LIMITS``) hold, links and special members are refused, and a refused archive leaves
nothing in the staging folder; the unpacked folders go when the servers do."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from pytest_triton.contracts.serving import ContractServers
from pytest_triton.errors import ConfigError
from pytest_triton.servers import ServeOptions
from pytest_triton.servers import ServerFactory


def archive(path: Path, members: list[tarfile.TarInfo], data: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            tar.addfile(member, io.BytesIO(data[member.name]) if member.name in data else None)
    return path


def file_member(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    return info


def servers(staging: Path) -> ContractServers:
    return ContractServers(ServerFactory("local", ServeOptions()), staging, gpu=False)


def test_an_archive_is_unpacked_once_and_removed_with_the_servers(tmp_path: Path) -> None:
    config = b'name: "m"\nbackend: "python"\n'
    source = archive(
        tmp_path / "model.tar.gz", [file_member("m/config.pbtxt", len(config))], {"m/config.pbtxt": config}
    )
    contract = servers(tmp_path / "staging")
    folder = contract.folder(source)
    assert (folder / "m" / "config.pbtxt").read_bytes() == config
    assert contract.folder(source) == folder
    contract.stop_all()
    assert not folder.exists()


def test_an_archive_over_the_limits_is_refused_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = 64 << 10
    source = archive(tmp_path / "model.tar.gz", [file_member("m/model.bin", big)], {"m/model.bin": b"\0" * big})
    monkeypatch.setenv("PYTEST_TRITON_ARCHIVE_LIMITS", "max_written_bytes=16K")
    staging = tmp_path / "staging"
    with pytest.raises(ConfigError, match=r"over max_written_bytes=16,384; raise it with PYTEST_TRITON_ARCHIVE"):
        servers(staging).folder(source)
    assert list(staging.iterdir()) == []


def test_a_link_member_is_refused(tmp_path: Path) -> None:
    link = tarfile.TarInfo("m/model.onnx")
    link.type = tarfile.SYMTYPE
    link.linkname = "other.onnx"  # inside the archive: tarfile's data filter lets it through
    staging = tmp_path / "staging"
    with pytest.raises(ConfigError, match=r"member 'm/model.onnx' is a link \(to 'other.onnx'\)"):
        servers(staging).folder(archive(tmp_path / "model.tar.gz", [link], {}))
    assert list(staging.iterdir()) == []


def test_an_archive_that_unpacks_to_hundreds_of_times_its_size_is_refused(tmp_path: Path) -> None:
    # 80 MiB of zeros gzip to ~80 KB: past 64 MiB, more than max_expansion (200) bytes per archive byte
    size = 80 << 20
    source = archive(tmp_path / "model.tar.gz", [file_member("m/zeros.bin", size)], {"m/zeros.bin": bytes(size)})
    assert source.stat().st_size < 1 << 20
    staging = tmp_path / "staging"
    with pytest.raises(
        ConfigError, match=r"bytes unpacked from [\d,]+ at member 'm/zeros.bin', over max_expansion=200"
    ):
        servers(staging).folder(source)
    assert list(staging.iterdir()) == []
