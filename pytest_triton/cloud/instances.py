"""SageMaker instance types: which have NVIDIA GPUs, and the latency-budget key of the GPU they carry.

The budget key is what :func:`pytest_triton.hardware.hardware_key` gives on a machine with that GPU (its
``nvidia-smi`` name, lower-cased, dashes for spaces), so an endpoint's latency is held to the budgets of the
same GPU measured elsewhere: ml.g5.* carry an NVIDIA A10G (``nvidia-a10g``, the A10G table of model_repos/budgets.toml).
"""

from __future__ import annotations

# instance family -> the nvidia-smi name of its GPU (families whose name varies by size are left out)
GPU_OF_FAMILY = {
    "g4dn": "NVIDIA T4",
    "g5": "NVIDIA A10G",
    "g6": "NVIDIA L4",
    "g6e": "NVIDIA L40S",
}


def instance_family(instance_type: str) -> str:
    """``ml.g5.xlarge`` -> ``g5``."""
    return instance_type.removeprefix("ml.").split(".")[0]


def instance_has_gpu(instance_type: str) -> bool:
    """Whether a SageMaker instance type has NVIDIA GPUs: families ml.g* and ml.p* (not c, m, r, t, inf, trn)."""
    return instance_family(instance_type)[:1] in ("g", "p")


def budget_key(instance_type: str) -> str | None:
    """The latency-budget hardware key of the instance's GPU (``nvidia-a10g``); None where it is not known:
    pass ``--triton-hardware`` then."""
    name = GPU_OF_FAMILY.get(instance_family(instance_type))
    return None if name is None else name.lower().replace("nvidia ", "nvidia-").replace(" ", "-")
