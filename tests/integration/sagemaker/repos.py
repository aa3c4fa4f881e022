"""Small repositories for the SageMaker tests: the example python_add model, and variants that fail."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PYTHON_ADD = ROOT / "model_repos" / "examples" / "python_add"

# initialize() raises: the container never answers /ping, as with a model that cannot load on the instance
FAILING_INIT = """
class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("weights not found: /opt/ml/model/python_add/1/weights.bin")

    def execute(self, requests):
        return []
"""

# a request whose A starts with a negative number is refused by the model: the container answers an error
REFUSES_NEGATIVE = """
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "B").as_numpy()
            if a.flat[0] < 0:
                responses.append(pb_utils.InferenceResponse(error=pb_utils.TritonError("A must not be negative")))
            else:
                responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("SUM", a + b)]))
        return responses
"""


def add_repository(dest: Path, *, model_py: str | None = None, name: str = "python_add") -> Path:
    """A repository holding python_add (its model.py replaced by ``model_py`` when given)."""
    shutil.copytree(PYTHON_ADD, dest / name)
    if name != "python_add":
        config = dest / name / "config.pbtxt"
        config.write_text(config.read_text().replace('name: "python_add"', f'name: "{name}"'))
    if model_py is not None:
        (dest / name / "1" / "model.py").write_text(model_py)
    return dest


# every request takes a second: longer than the front door's invocation limit in the timeout test
SLOW_ADD = """
import time

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        time.sleep(1.0)
        responses = []
        for request in requests:
            a = pb_utils.get_input_tensor_by_name(request, "A").as_numpy()
            b = pb_utils.get_input_tensor_by_name(request, "B").as_numpy()
            responses.append(pb_utils.InferenceResponse(output_tensors=[pb_utils.Tensor("SUM", a + b)]))
        return responses
"""
