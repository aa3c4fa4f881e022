"""Layout cases whose condition Triton itself reports: one model folder each, with Triton's words.

The texts were read from the embedded tritonserver 2.51 (explicit model control, the model loaded through
the repository API): an error of the load, or a warning in the log while the model still loads. The unit
tier checks that the L rule quotes them (test_layout_wording.py); the differential test loads every case
on the embedded server again and checks that Triton still says them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MODEL_PY = "class TritonPythonModel:\n    def execute(self, requests):\n        return []\n"
IO = (
    'input [ { name: "IN" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
    'output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 1 ] } ]\n'
    "instance_group [ { kind: KIND_CPU count: 1 } ]\n"
)


def python_config(name: str) -> str:
    return f'name: "{name}"\nbackend: "python"\nmax_batch_size: 0\n{IO}'


@dataclass(frozen=True)
class LayoutCase:
    """A model folder ``{m}`` (files by relative path; None: an empty folder) and what Triton says of it."""

    id: str
    rule: str
    files: dict[str, str | None]
    triton: str  # with {m} for the folder's name
    logged: bool = False  # a warning in Triton's log (the model loads), else the load's error

    def write(self, root: Path, name: str) -> Path:
        folder = root / name
        folder.mkdir(parents=True)
        for rel, content in self.files.items():
            target = folder / rel.replace("{m}", name)
            if content is None:
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content.replace("{m}", name))
        return folder

    def text(self, name: str) -> str:
        return self.triton.replace("{m}", name)


CASES = [
    LayoutCase(
        "no_version",
        "L101",
        {"config.pbtxt": python_config("{m}")},
        "at least one version must be available under the version policy of model '{m}'",
    ),
    LayoutCase(
        "leading_zero",
        "L102",
        {"config.pbtxt": python_config("{m}"), "1/model.py": MODEL_PY, "01/model.py": MODEL_PY},
        "ignore version directory '01' which contains leading zeros in its directory name",
        logged=True,
    ),
    LayoutCase(
        "not_a_number",
        "L102",
        {"config.pbtxt": python_config("{m}"), "1/model.py": MODEL_PY, "v2/model.py": MODEL_PY},
        "ignore version directory 'v2' which fails to convert to integral number",
        logged=True,
    ),
    LayoutCase(
        "name_differs",
        "L103",
        {"config.pbtxt": python_config("{m}_other"), "1/model.py": MODEL_PY},
        "unexpected directory name '{m}' for model '{m}_other', directory name must equal model name",
    ),
    LayoutCase(
        "no_backend",
        "L108",
        {"config.pbtxt": 'name: "{m}"\nmax_batch_size: 0\n' + IO, "1": None},
        "Invalid model name: Could not determine backend for model '{m}' with no backend in model configuration. "
        "Expected model name of the form 'model.<backend_name>'.",
    ),
]
