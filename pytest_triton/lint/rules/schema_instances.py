"""Schema checks of instance_group (ValidateInstanceGroup) that hold on any machine.

Whether a listed GPU id exists depends on the machine Triton runs on, so only ids that can
never exist (negative ones) are reported; KIND_GPU without GPUs is left to the server too.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.rules.schema_common import TENSORRT_PLAN
from pytest_triton.lint.rules.schema_common import enum_label
from pytest_triton.lint.rules.schema_common import first_present
from pytest_triton.lint.rules.schema_common import fmt_list
from pytest_triton.lint.rules.schema_common import has_field
from pytest_triton.lint.rules.schema_common import model_name
from pytest_triton.lint.rules.schema_common import normalized

_KINDS = ("KIND_AUTO", "KIND_GPU", "KIND_CPU", "KIND_MODEL")
_STOI = re.compile(r"\s*([+-]?\d+)")
_INT_MAX = 2**31 - 1


def _stoi(text: str) -> int | None:
    """What C++ ``std::stoi`` reads from ``text`` (a leading integer), None where it throws."""
    match = _STOI.match(text)
    if match is None:
        return None
    value = int(match.group(1))
    return value if -_INT_MAX - 1 <= value <= _INT_MAX else None


def check_instance_groups(model: ModelContext) -> None:
    """S245-S251: kinds, GPU ids, counts and TensorRT profiles of each instance group."""
    config = model.config
    if has_field(config, "ensemble_scheduling"):
        return  # Triton ignores instance groups of ensembles (the ensemble family reports them)
    name = model_name(model)
    platform = normalized(model).platform
    for index, group in enumerate(config.instance_group):
        at = ("instance_group", index)
        # Triton names an unnamed group <model>_<index> before it validates
        label = f"instance group {group.name or f'{name}_{index}'} of model {name}"
        _check_kind(model, label, group, at)
        count = int(group.count)
        if count < 0:
            model.report(
                "S248",
                f"{label} has count: {count}; Triton replaces a count below 1 with its default "
                "(1, or 2 for KIND_CPU with the onnxruntime or tensorflow backend)",
                "set count to the number of instances you want (1 or more), or remove it to take the default",
                *first_present(model, (*at, "count"), at),
            )
        _check_profiles(model, label, group, at, platform)


def _check_kind(model: ModelContext, label: str, group: Any, at: tuple[str | int, ...]) -> None:
    kind = enum_label(group, "kind")
    gpus = [int(g) for g in group.gpus]
    gpus_at = ((*at, "gpus"), at)  # where a finding about the GPUs points, the first written
    if kind not in _KINDS:
        model.report(
            "S251",
            f"{label} has unexpected kind {kind} (kind: {kind}; Triton knows {', '.join(_KINDS)})",
            "use kind: KIND_GPU, KIND_CPU or KIND_MODEL, or leave kind out (KIND_AUTO)",
            *first_present(model, (*at, "kind"), at),
        )
    elif kind in ("KIND_CPU", "KIND_MODEL") and gpus:
        model.report(
            "S245" if kind == "KIND_CPU" else "S246",
            f"{label} has kind {kind} but specifies one or more GPUs (gpus: {fmt_list(gpus)})",
            "remove gpus, or use kind: KIND_GPU to place the instances on those GPUs",
            *first_present(model, *gpus_at),
        )
    elif kind in ("KIND_GPU", "KIND_AUTO"):
        negative = next((i for i, g in enumerate(gpus) if g < 0), None)
        if negative is None:
            return
        gpu = gpus[negative]
        if kind == "KIND_GPU":
            message = (
                f"{label} specifies invalid or unsupported gpu id {gpu}. GPUs with at least the minimum "
                f"required CUDA compute compatibility are numbered from 0 (gpus: {fmt_list(gpus)})"
            )
        else:
            message = (
                f"{label} lists gpu id {gpu}, which no GPU has: KIND_AUTO then falls back to KIND_CPU and "
                f"Triton fails with 'has kind KIND_CPU but specifies one or more GPUs' (gpus: {fmt_list(gpus)})"
            )
        model.report(
            "S247",
            message,
            "list GPU ids as nvidia-smi numbers them (0, 1, ...), or drop gpus to use every GPU",
            *first_present(model, (*at, "gpus", negative), *gpus_at),
        )


def _check_profiles(model: ModelContext, label: str, group: Any, at: tuple[str | int, ...], platform: str) -> None:
    profiles = [str(p) for p in group.profile]
    if not profiles:
        return
    if platform != TENSORRT_PLAN:
        model.report(
            "S249",
            f"{label} and platform {platform} specifies profile field which is only supported for TensorRT "
            f"models (profile: {fmt_list(profiles)})",
            "remove profile: optimization profiles exist only in TensorRT plans",
            *first_present(model, (*at, "profile"), at),
        )
        return
    for k, profile in enumerate(profiles):
        number = _stoi(profile)
        if not profile:
            message = f"profile name must not be empty ({label}, profile: {fmt_list(profiles)})"
        elif number is None:
            message = f"unable to parse '{profile}': stoi ({label}, profile: {fmt_list(profiles)})"
        elif number < 0:
            message = (
                f"{label} and platform {platform} specifies invalid profile {profile}. The field should contain "
                "the string representation of a non-negative integer."
            )
        else:
            continue
        model.report(
            "S250",
            message,
            'name TensorRT optimization profiles by their index as a string: profile: [ "0" ]',
            *first_present(model, (*at, "profile", k), (*at, "profile")),
        )


CHECKS = [check_instance_groups]
