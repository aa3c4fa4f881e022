from __future__ import annotations

import pytest

from pytest_triton.cloud.instances import budget_key
from pytest_triton.cloud.instances import instance_has_gpu
from pytest_triton.servers.protocol import ServeOptions
from pytest_triton.servers.sagemaker.endpoint import endpoint_hardware


@pytest.mark.parametrize(
    ("instance_type", "gpu", "key"),
    [
        ("ml.g5.xlarge", True, "nvidia-a10g"),
        ("ml.g5.12xlarge", True, "nvidia-a10g"),
        ("ml.g4dn.xlarge", True, "nvidia-t4"),
        ("ml.g6.2xlarge", True, "nvidia-l4"),
        ("ml.g6e.xlarge", True, "nvidia-l40s"),
        ("ml.p4d.24xlarge", True, None),
        ("ml.c5.xlarge", False, None),
        ("ml.m5.large", False, None),
        ("ml.inf2.xlarge", False, None),
        ("ml.trn1.2xlarge", False, None),
    ],
)
def test_instance_gpu_and_budget_key(instance_type: str, gpu: bool, key: str | None) -> None:
    assert instance_has_gpu(instance_type) is gpu
    assert budget_key(instance_type) == key


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        (None, ("nvidia-a10g", "the GPU of the default instance type ml.g5.xlarge")),
        ("ml.g4dn.xlarge", ("nvidia-t4", "the GPU of setting instance_type=ml.g4dn.xlarge")),
        (
            "ml.c5.xlarge",
            (
                "ml.c5.xlarge",
                "setting instance_type=ml.c5.xlarge, whose GPU is not known here "
                "(pass --triton-hardware KEY to pick a table)",
            ),
        ),
    ],
)
def test_a_deployment_is_held_to_the_budgets_of_its_instance_types_gpu(
    instance_type: str | None, expected: tuple[str, str]
) -> None:
    assert endpoint_hardware(ServeOptions(settings={"instance_type": instance_type})) == expected
