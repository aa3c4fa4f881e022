"""The one TOML reader: tomllib's data, and the 1-based line:col of every key path."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_triton.config.toml import dotted
from pytest_triton.config.toml import key_positions
from pytest_triton.config.toml import parse_toml
from pytest_triton.config.toml import read_toml
from pytest_triton.errors import ConfigError

TEXT = '''\
# a comment with = and [brackets]
top = 1
[variants.fp32]
repository = "m"   # trailing
precision = { cpu = "fp32", gpu = "fp16" }
"quoted.key" = 'x'
notes = """
[not.a.table]
fake = 1
"""
[latency]
window_ms = 2.5
[[latency.relative]]
variant = "a"
[[latency.relative]]
  variant = "b"
  max_ratio = 2
[latency.relative.sub]
z = 1
[x]
inline = [{a = 1}, {b = 2}]
when = 1979-05-27 07:32:00Z
after = 5
'''


def test_every_key_has_its_1_based_line_and_column() -> None:
    found = key_positions(TEXT)
    assert found[("top",)] == (2, 1)
    assert found[("variants", "fp32")] == (3, 11)
    assert found[("variants", "fp32", "precision", "gpu")] == (5, 29)
    assert found[("variants", "fp32", "quoted.key")] == (6, 1)
    assert ("not", "a", "table") not in found  # inside a multi-line string
    assert found[("latency", "window_ms")] == (12, 1)
    assert found[("latency", "relative", 0, "variant")] == (14, 1)
    assert found[("latency", "relative", 1, "max_ratio")] == (17, 3)
    assert found[("latency", "relative", 1, "sub", "z")] == (19, 1)  # a sub-table of the last element
    assert found[("x", "inline", 1, "b")] == (21, 21)
    assert found[("x", "after")] == (23, 1)


def test_a_missing_key_points_at_its_nearest_written_parent(tmp_path: Path) -> None:
    document = parse_toml(TEXT, tmp_path / "c.toml")
    assert document.position(("latency", "relative", 1, "percentile")) == (15, 11)
    assert document.position(("latency", "relative", "variant")) == (14, 1)  # no index: the first element
    assert document.position(("nowhere",)) == (0, 0)
    error = document.error(("latency", "window_ms"), "latency.window_ms=2.5: too short")
    assert str(error) == f"{tmp_path / 'c.toml'}:12:1: latency.window_ms=2.5: too short"


def test_a_syntax_error_is_a_config_error_at_tomllibs_1_based_position(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.toml:2:5: not valid TOML: Invalid value$"):
        parse_toml("a = 1\nb = = 2\n", tmp_path / "c.toml")


def test_read_goes_through_the_guarded_reader(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b'a = "\xff"\n')
    with pytest.raises(ConfigError, match=r"c\.toml:1:6: byte b'\\xff' is not UTF-8"):
        read_toml(path, "contracts")
    path.unlink()
    path.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="is a character device"):
        read_toml(path, "budgets")


def test_key_paths_are_named_as_errors_name_them() -> None:
    assert dotted(("latency", "relative", 0, "max_ratio")) == "latency.relative[0].max_ratio"
