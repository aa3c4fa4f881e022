"""The declared inputs of a served model, read from its config.pbtxt: SageMaker has no metadata route.

``/invocations`` and InvokeEndpoint only infer; the inputs a request is checked against come from the
repository that was packaged (or, for a reused endpoint, from the archive the endpoint's model points to).
"""

from __future__ import annotations

from pathlib import Path

from pytest_triton.client.transports import InputSpec
from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.config.model import read_config
from pytest_triton.dtypes import BY_CONFIG
from pytest_triton.errors import ConfigError


def model_input_specs(repository: Path, model: str) -> list[InputSpec]:
    """The inputs of ``model`` as KServe metadata would give them (batch dimension -1 when it batches)."""
    path = repository / model / CONFIG_FILENAME
    if not path.is_file():
        raise ConfigError(f"model {model!r} has no {CONFIG_FILENAME} in {repository} (looked for {path})")
    config = read_config(path).message
    batch: tuple[int, ...] = (-1,) if config.max_batch_size > 0 else ()
    type_names = config.DESCRIPTOR.fields_by_name["input"].message_type.fields_by_name["data_type"].enum_type
    return [
        InputSpec(
            tensor.name,
            BY_CONFIG[type_names.values_by_number[tensor.data_type].name].kserve,
            batch + tuple(int(d) for d in tensor.dims),
        )
        for tensor in config.input
    ]
