from __future__ import annotations

import pytest

from pytest_triton.cloud.instances import budget_key
from pytest_triton.cloud.instances import instance_has_gpu


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
