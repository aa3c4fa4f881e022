"""Which warnings filters make the plugin's warnings errors: the ini option first, then ``-W``, the later one
winning, read the way the warnings module reads a filter."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_triton.errors import TritonInconclusiveWarning
from pytest_triton.errors import TritonUnstableWarning
from pytest_triton.plugin.warning_filters import error_filter


@pytest.fixture(autouse=True)
def interpreter_defaults() -> Iterator[None]:
    """The interpreter's filters at a session's start: pytest adds this repository's own (``error``) around each
    test, which would decide every case here."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        yield


class Config:
    """The two things error_filter reads from a pytest.Config: the ini filters and the ``-W`` values."""

    def __init__(self, ini: list[str], cmdline: list[str] | None = None) -> None:
        self.ini = ini
        self.known_args_namespace = SimpleNamespace(pythonwarnings=cmdline)

    def getini(self, name: str) -> Any:
        assert name == "filterwarnings"
        return self.ini


@pytest.mark.parametrize(
    ("ini", "cmdline", "expected"),
    [
        ([], None, None),
        (["error"], None, "the warnings filter 'error' (ini filterwarnings)"),
        (
            ["error::pytest_triton.errors.PytestTritonWarning"],
            None,
            "the warnings filter 'error::pytest_triton.errors.PytestTritonWarning' (ini filterwarnings)",
        ),
        (
            ["err::UserWarning"],
            None,
            "the warnings filter 'err::UserWarning' (ini filterwarnings)",
        ),  # an unambiguous prefix, as the warnings module reads it
        (["error::DeprecationWarning"], None, None),  # another category
        # a later filter of another module does not decide the probe: the error filter is named
        (
            ["error::pytest_triton.errors.PytestTritonWarning", "always::UserWarning:elsewhere"],
            None,
            "the warnings filter 'error::pytest_triton.errors.PytestTritonWarning' (ini filterwarnings)",
        ),
        (["error", "ignore::pytest_triton.errors.TritonInconclusiveWarning"], None, None),  # the later one wins
        (["error"], ["default::pytest_triton.errors.PytestTritonWarning"], None),  # -W after the ini option
        (
            [],
            ["error::pytest_triton.errors.TritonInconclusiveWarning"],
            "the warnings filter 'error::pytest_triton.errors.TritonInconclusiveWarning' (-W)",
        ),
        (["error::no.such.Warning", "nonsense:::::"], None, None),  # filters pytest itself rejects are skipped
    ],
)
def test_error_filter(ini: list[str], cmdline: list[str] | None, expected: str | None) -> None:
    assert error_filter(Config(ini, cmdline), TritonInconclusiveWarning) == expected  # type: ignore[arg-type]


def test_a_filter_of_one_class_leaves_the_other() -> None:
    config = Config(["error::pytest_triton.errors.TritonUnstableWarning"])
    assert error_filter(config, TritonUnstableWarning) is not None  # type: ignore[arg-type]
    assert error_filter(config, TritonInconclusiveWarning) is None  # type: ignore[arg-type]


def test_the_probe_leaves_the_filters_and_shows_nothing(recwarn: pytest.WarningsRecorder) -> None:
    before = list(warnings.filters)
    assert error_filter(Config(["default"]), TritonInconclusiveWarning) is None  # type: ignore[arg-type]
    assert list(warnings.filters) == before
    assert len(recwarn) == 0
