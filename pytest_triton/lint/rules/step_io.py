"""What Triton validates an ensemble step against: the step model's config after its backend's auto-complete.

A config without inputs (``batch_input`` entries count) or without outputs is completed by the backend when it
loads. The onnxruntime backend reads the ONNX file's graph I/O; the python backend runs the model's
``auto_complete_config`` when model.py defines one (else the config stays as written). What the linter cannot see
is returned as the side left open, for the ensemble rules to name (E323).
"""

from __future__ import annotations

from typing import Any

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.files import RefusedFile
from pytest_triton.lint.files import read_bounded
from pytest_triton.lint.rules.onnx_model import autocompleted
from pytest_triton.lint.rules.onnx_model import model_files
from pytest_triton.lint.rules.schema_common import normalized

ENSEMBLE_PLATFORM = "ensemble"  # the platform of an ensemble config
_MODEL_PY_LIMIT = 8 << 20  # a model.py larger than this is not searched for auto_complete_config


def step_io(step_model: ModelContext) -> tuple[Any, frozenset[str]]:
    """The step model's config as Triton validates the ensemble against it, and which of its I/O is unknown.

    A config without inputs (``batch_input`` entries count) or without outputs is completed by the backend
    at load: from the ONNX file, as the onnxruntime backend does, where the file is there and readable;
    otherwise the declared side is still checked and the other side is ``"input"`` or ``"output"`` here."""
    cfg = step_model.config
    if cfg.platform == ENSEMBLE_PLATFORM:
        return cfg, frozenset()
    missing = frozenset(
        kind
        for kind, count in (("input", len(cfg.input) + len(cfg.batch_input)), ("output", len(cfg.output)))
        if not count
    )
    if not missing:
        return cfg, missing
    backend = normalized(step_model).backend
    if backend == "python":
        return cfg, missing if _python_completes(step_model) else frozenset()
    completed = autocompleted(step_model) if backend == "onnxruntime" else None
    return (completed, frozenset()) if completed is not None else (cfg, missing)


def _python_completes(step_model: ModelContext) -> bool:
    """Whether the python backend may add I/O at load: a model.py that defines ``auto_complete_config``
    (or one the linter could not read). Without it Triton validates the ensemble against the config as
    written: an output_map naming an undeclared output is "mapped from non-existing output"."""
    name = str(step_model.config.default_model_filename) or "model.py"
    for version in step_model.versions():
        path = step_model.folder / str(version) / name
        if not path.is_file():
            continue
        if step_model.repository is not None and not step_model.repository.holds_content(path):
            return True
        try:
            source = read_bounded(path, root=step_model.folder, limit=_MODEL_PY_LIMIT)
        except (RefusedFile, OSError):
            return True
        if b"auto_complete_config" in source:
            return True
    return False


def why_unknown(step_model: ModelContext) -> str:
    backend = normalized(step_model).backend
    if backend == "python":
        return "its model.py defines auto_complete_config, which the python backend runs when it loads"
    if backend != "onnxruntime":
        return f"the {backend or 'model'}'s backend completes its config when it loads"
    files = model_files(step_model)
    if not files:
        name = str(step_model.config.default_model_filename) or "model.onnx"
        return f"the onnxruntime backend reads them from {name}, which is not in any version folder"
    shown = files[-1].relative_to(step_model.folder).as_posix()
    if step_model.repository is not None and not step_model.repository.holds_content(files[-1]):
        return f"the onnxruntime backend reads them from {shown}, which was too large to read from the archive"
    return f"the onnxruntime backend reads them from {shown}, which could not be read or completed (see O501/O507)"
