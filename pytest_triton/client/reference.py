"""In-process ONNX Runtime as a transport: the reference every served variant is compared with."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import final

from numpy.typing import NDArray

from pytest_triton.client.transports import InputSpec
from pytest_triton.dtypes import BY_ONNX_NAME
from pytest_triton.errors import MissingDependency


@final
class OnnxReference:
    """Runs an ONNX file with ONNX Runtime in this process (fp32, CPU by default)."""

    def __init__(self, path: str | Path, *, providers: Sequence[str] = ("CPUExecutionProvider",)) -> None:
        try:
            import onnxruntime
        except ImportError as exc:
            raise MissingDependency("onnxruntime", "serve") from exc
        self.path = Path(path)
        self.session: Any = onnxruntime.InferenceSession(str(self.path), providers=list(providers))

    def input_specs(self, model: str) -> list[InputSpec]:
        return [
            InputSpec(
                i.name,
                BY_ONNX_NAME[i.type].kserve if i.type in BY_ONNX_NAME else i.type,
                tuple(d if isinstance(d, int) else -1 for d in i.shape),
            )
            for i in self.session.get_inputs()
        ]

    def infer(self, model: str, inputs: Mapping[str, NDArray[Any]], outputs: Sequence[str]) -> dict[str, NDArray[Any]]:
        from pytest_triton.client.transports import validate_inputs

        validate_inputs(model, self.input_specs(model), inputs)
        names = list(outputs) or [o.name for o in self.session.get_outputs()]
        return dict(zip(names, self.session.run(names, dict(inputs))))
