"""Properties: print/parse round-trips, mutations yield their rule, the linter never crashes."""

from __future__ import annotations

import io
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from pytest_triton.config import parse_config
from pytest_triton.config import print_config
from pytest_triton.lint import lint_path
from pytest_triton.strategies import RepositorySpec
from pytest_triton.strategies import model_configs
from pytest_triton.strategies import repositories
from pytest_triton.strategies import write_repository

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(model_configs())
def test_print_then_parse_gives_the_same_message(config: Any) -> None:
    assert parse_config(print_config(config)).message == config


@FAST
@given(repositories())
def test_generated_repositories_are_clean(spec: RepositorySpec) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        findings = lint_path(write_repository(spec, Path(tmp)))
    assert [f for f in findings if f.severity == "error"] == []


def _rename(config: Any) -> None:
    config.name = config.name + "_other"


def _zero_dim(config: Any) -> None:
    config.input[0].dims[-1] = 0


def _negative_batch(config: Any) -> None:
    config.max_batch_size = -1


def _preferred_above_max(config: Any) -> None:
    config.max_batch_size = 4
    config.dynamic_batching.preferred_batch_size.append(5)


def _cpu_with_gpus(config: Any) -> None:
    config.instance_group.add(kind="KIND_CPU", gpus=[0])


def _ensemble_scheduling_on_python(config: Any) -> None:
    config.ensemble_scheduling.step.add(model_name="x")


MUTATIONS: dict[str, Callable[[Any], None]] = {
    "L103": _rename,
    "S229": _zero_dim,
    "S205": _negative_batch,
    "S207": _preferred_above_max,
    "S245": _cpu_with_gpus,
    "S204": _ensemble_scheduling_on_python,
}


@FAST
@given(repositories(max_models=2), st.sampled_from(sorted(MUTATIONS)))
def test_each_config_mutation_yields_its_rule(spec: RepositorySpec, rule: str) -> None:
    first = spec.models[0]
    assert first.config_text is not None
    config = parse_config(first.config_text).message
    MUTATIONS[rule](config)
    mutated = RepositorySpec((type(first)(first.folder, print_config(config), first.files), *spec.models[1:]))
    with tempfile.TemporaryDirectory() as tmp:
        rules = {f.rule for f in lint_path(write_repository(mutated, Path(tmp)))}
    assert rule in rules


@FAST
@given(repositories(max_models=2))
def test_missing_version_folder_yields_l101(spec: RepositorySpec) -> None:
    first = spec.models[0]
    moved = type(first)(first.folder, first.config_text, {"v1/model.py": b""})
    with tempfile.TemporaryDirectory() as tmp:
        rules = [f.rule for f in lint_path(write_repository(RepositorySpec((moved, *spec.models[1:])), Path(tmp)))]
    assert "L101" in rules
    assert "L102" in rules


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=400))
def test_any_text_gives_findings_never_a_traceback(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "m" / "1").mkdir(parents=True)
        (Path(tmp) / "m" / "config.pbtxt").write_text(text)
        findings = lint_path(tmp)
    assert "X001" not in {f.rule for f in findings}


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_findings_never_a_traceback(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "m" / "1").mkdir(parents=True)
        (Path(tmp) / "m" / "config.pbtxt").write_bytes(data)
        (Path(tmp) / "m" / "1" / "model.onnx").write_bytes(data)
        archive = Path(tmp) / "model.tar.gz"
        archive.write_bytes(data)
        findings = lint_path(tmp) + lint_path(archive)
    assert "X001" not in {f.rule for f in findings}


_PATHS = st.lists(
    st.tuples(
        st.lists(
            st.sampled_from(["m", "1", "v1", ".hidden", "config.pbtxt", "model.py", "model.onnx", ".."]),
            min_size=1,
            max_size=4,
        ),
        st.booleans(),
    ),
    max_size=8,
)


@settings(max_examples=100, deadline=None)
@given(_PATHS)
def test_any_folder_shape_or_tarball_gives_findings_never_a_traceback(entries: list[tuple[list[str], bool]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            for parts, is_dir in entries:
                rel = "/".join(parts)
                info = tarfile.TarInfo(rel)
                if is_dir:
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                else:
                    info.size = 3
                    tar.addfile(info, io.BytesIO(b"abc"))
                if ".." in parts:
                    continue
                target = root / rel
                try:
                    if is_dir:
                        target.mkdir(parents=True, exist_ok=True)
                    else:
                        target.parent.mkdir(parents=True, exist_ok=True)
                        target.write_bytes(b"abc")
                except OSError:
                    pass  # a file where a folder was asked for: the shape simply differs
        archive = Path(tmp) / "model.tar.gz"
        archive.write_bytes(buffer.getvalue())
        findings = lint_path(root) + lint_path(archive)
    assert "X001" not in {f.rule for f in findings}
