"""Schema checks of the model as a whole: platform and backend, batch size, dynamic batching."""

from __future__ import annotations

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.rules.schema_common import ENSEMBLE
from pytest_triton.lint.rules.schema_common import KNOWN_BACKENDS
from pytest_triton.lint.rules.schema_common import KNOWN_PLATFORMS
from pytest_triton.lint.rules.schema_common import PLATFORM_BACKEND
from pytest_triton.lint.rules.schema_common import enum_label
from pytest_triton.lint.rules.schema_common import first_present
from pytest_triton.lint.rules.schema_common import has_field
from pytest_triton.lint.rules.schema_common import map_entry_index
from pytest_triton.lint.rules.schema_common import model_name
from pytest_triton.lint.rules.schema_common import normalized
from pytest_triton.lint.rules.schema_common import quote


def _platforms_for(backend: str) -> str:
    return " or ".join(f"platform: {quote(p)}" for p, b in PLATFORM_BACKEND.items() if b == backend)


def check_platform_backend(model: ModelContext) -> None:
    """S201-S203: the platform/backend pair Triton accepts (ValidateModelConfig)."""
    config = model.config
    name = model_name(model)
    norm = normalized(model)
    if not norm.backend:
        if norm.platform and norm.platform != ENSEMBLE:
            model.report(
                "S202",
                f"unexpected platform type '{norm.platform}' for {name} (platform: {quote(norm.platform)})",
                f"use one of {', '.join(KNOWN_PLATFORMS)}, or set backend (python, or a custom backend) "
                "and drop platform",
                "platform",
            )
        return  # an empty platform without backend: the layout family reports it
    if norm.platform == ENSEMBLE:
        model.report(
            "S201",
            f"Ensemble model '{name}' must have platform type 'ensemble' and empty backend type "
            f"(backend: {quote(str(config.backend))})",
            "remove the backend line: ensembles are run by Triton core, not by a backend",
            *first_present(model, ("backend",), ("platform",)),
        )
        return
    if norm.backend in KNOWN_BACKENDS and PLATFORM_BACKEND.get(norm.platform) != norm.backend:
        if norm.platform:
            hint = f"backend {quote(norm.backend)} runs {_platforms_for(norm.backend)}: fix platform or backend"
        else:
            hint = (
                f"set {_platforms_for(norm.backend)}; Triton found neither a model.savedmodel folder "
                "nor a model.graphdef file to tell which"
            )
        model.report(
            "S203",
            f"unexpected 'platform' and 'backend' pair, got:{norm.platform}, {norm.backend} "
            f"(platform: {quote(norm.platform)}, backend: {quote(norm.backend)})",
            hint,
            *first_present(model, ("platform",), ("backend",)),
        )


def check_ensemble_scheduling_platform(model: ModelContext) -> None:
    """S204: ensemble_scheduling belongs to platform "ensemble" only."""
    if not has_field(model.config, "ensemble_scheduling"):
        return
    platform = normalized(model).platform
    if platform != ENSEMBLE:
        model.report(
            "S204",
            f"ensemble scheduling cannot be set for model '{model_name(model)}' whose platform is not ensemble "
            f"(platform: {quote(platform)})",
            'set platform: "ensemble" (and no backend) for an ensemble, otherwise remove ensemble_scheduling',
            "ensemble_scheduling",
        )


def check_max_batch_size(model: ModelContext) -> None:
    """S205: max_batch_size >= 0."""
    size = int(model.config.max_batch_size)
    if size < 0:
        model.report(
            "S205",
            f"'max_batch_size' must be non-negative value for {model_name(model)} (max_batch_size: {size})",
            "use 0 for a model that does not batch, else the largest batch the model accepts",
            "max_batch_size",
        )


def check_dynamic_batching(model: ModelContext) -> None:
    """S206-S212: preferred sizes, priority levels and preserve_ordering of dynamic_batching."""
    config = model.config
    if not has_field(config, "dynamic_batching"):
        return
    batching = config.dynamic_batching
    name = model_name(model)
    max_batch = int(config.max_batch_size)
    base = ("dynamic_batching", 0)
    for index, size in enumerate(batching.preferred_batch_size):
        where = (*base, "preferred_batch_size", index)
        if size <= 0:
            model.report(
                "S206",
                f"dynamic batching preferred size must be positive for {name} (preferred_batch_size: {size})",
                "list batch sizes from 1 to max_batch_size, or drop preferred_batch_size",
                *where,
            )
        elif size > max_batch:
            model.report(
                "S207",
                f"dynamic batching preferred size must be <= max batch size for {name} "
                f"(preferred_batch_size: {size} > max_batch_size: {max_batch})",
                "lower the preferred size or raise max_batch_size",
                *where,
            )
    if max_batch == 0:
        model.report(
            "S208",
            f"dynamic_batching is set but max_batch_size: 0 for {name}, so requests are never batched together "
            "(unless a backend's auto-complete raises max_batch_size)",
            "set max_batch_size > 0 (dims then leave out the batch dimension) to batch; keep dynamic_batching "
            "without batching only for its queue policy or priority levels",
            "dynamic_batching",
        )
    _check_priorities(model, name)
    _check_preserve_ordering(model, name)


def _check_priorities(model: ModelContext, name: str) -> None:
    batching = model.config.dynamic_batching
    levels = int(batching.priority_levels)
    if levels == 0:
        return
    base = ("dynamic_batching", 0)
    default = int(batching.default_priority_level)
    if default == 0 or default > levels:
        model.report(
            "S209",
            f"default priority level must be in range [1, {levels}] for {name} "
            f"(default_priority_level: {default}, priority_levels: {levels})",
            f"set default_priority_level between 1 and {levels} (it is required once priority_levels is set)",
            *first_present(model, (*base, "default_priority_level"), (*base, "priority_levels")),
        )
    for level in sorted(batching.priority_queue_policy):
        if level == 0 or level > levels:
            index = map_entry_index(model, (*base, "priority_queue_policy"), int(level))
            where: tuple[str | int, ...] = (*base, "priority_queue_policy")
            if index is not None:
                where = first_present(model, (*where, index, "key"), (*where, index))
            model.report(
                "S210",
                f"priority queue policy must have priority level in range [1, {levels}] for {name} "
                f"(priority_queue_policy key: {level})",
                f"use keys between 1 and priority_levels ({levels})",
                *where,
            )


def _check_preserve_ordering(model: ModelContext, name: str) -> None:
    batching = model.config.dynamic_batching
    if not batching.preserve_ordering:
        return
    base = ("dynamic_batching", 0)
    levels = int(batching.priority_levels)
    if levels > 1:
        model.report(
            "S211",
            f"Only one priority level is allowed when 'preserve_ordering' is true for {name} "
            f"(priority_levels: {levels})",
            "drop preserve_ordering or use a single priority level",
            *first_present(model, (*base, "priority_levels"), (*base, "preserve_ordering")),
        )
    hint = "use timeout_action: REJECT (or no timeout) while preserve_ordering is true"
    policy = batching.default_queue_policy
    if int(policy.default_timeout_microseconds) != 0 and enum_label(policy, "timeout_action") == "DELAY":
        model.report(
            "S212",
            f"Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for {name} "
            f"(default_queue_policy: timeout_action: DELAY, default_timeout_microseconds: "
            f"{int(policy.default_timeout_microseconds)})",
            hint,
            *first_present(
                model, (*base, "default_queue_policy", 0, "timeout_action"), (*base, "default_queue_policy")
            ),
        )
    for level in sorted(batching.priority_queue_policy):
        policy = batching.priority_queue_policy[level]
        if int(policy.default_timeout_microseconds) != 0 and enum_label(policy, "timeout_action") == "DELAY":
            index = map_entry_index(model, (*base, "priority_queue_policy"), int(level))
            where: tuple[str | int, ...] = (*base, "priority_queue_policy")
            if index is not None:
                where = first_present(model, (*where, index, "value", 0, "timeout_action"), (*where, index))
            model.report(
                "S212",
                f"Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for {name} "
                f"(priority_queue_policy {level}: timeout_action: DELAY)",
                hint,
                *where,
            )


CHECKS = [
    check_platform_backend,
    check_ensemble_scheduling_platform,
    check_max_batch_size,
    check_dynamic_batching,
]
