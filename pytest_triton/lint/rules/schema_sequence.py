"""Schema checks of sequence_batching (controls, strategies) and of the response cache."""

from __future__ import annotations

from typing import Any

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.rules.schema_common import enum_label
from pytest_triton.lint.rules.schema_common import first_present
from pytest_triton.lint.rules.schema_common import fmt_list
from pytest_triton.lint.rules.schema_common import has_field
from pytest_triton.lint.rules.schema_common import model_name
from pytest_triton.lint.rules.schema_common import quote

_BOOLEAN_KINDS = ("CONTROL_SEQUENCE_START", "CONTROL_SEQUENCE_END", "CONTROL_SEQUENCE_READY")
_CORRID = "CONTROL_SEQUENCE_CORRID"
_VALUE_FIELDS = ("int32_false_true", "fp32_false_true", "bool_false_true")
_CORRID_TYPES = ("TYPE_UINT64", "TYPE_INT64", "TYPE_UINT32", "TYPE_INT32", "TYPE_STRING")
_BASE = ("sequence_batching", 0)


def check_sequence_batching(model: ModelContext) -> None:
    """S213-S224: what Triton checks of sequence_batching (ValidateModelConfig)."""
    config = model.config
    if not has_field(config, "sequence_batching"):
        return
    name = model_name(model)
    if config.response_cache.enable:
        model.report(
            "S224",
            f"Response Cache does not currently support model {name} with sequence batching scheduler. "
            "Please disable the response cache. (response_cache: enable: true)",
            "remove response_cache or set enable: false for this sequence model",
            *first_present(model, ("response_cache", 0, "enable"), ("response_cache",)),
        )
    _check_controls(model, name)
    _check_strategies(model, name)


def _check_controls(model: ModelContext, name: str) -> None:
    batching = model.config.sequence_batching
    tensors: set[str] = set()
    kinds: dict[str, str] = {}
    for i, control_input in enumerate(batching.control_input):
        where = (*_BASE, "control_input", i)
        tensor = str(control_input.name)
        if not tensor:
            model.report(
                "S213",
                f"sequence batching control tensor must have a name for {name} (control_input {i}: name is empty)",
                "name the control tensor as the model's input is called",
                *where,
            )
        elif tensor in tensors:
            model.report(
                "S214",
                f"sequence batching control tensor '{tensor}' is specified for multiple control kinds for {name} "
                f"(control_input name: {quote(tensor)} appears again)",
                "give each control kind its own tensor, listed once",
                *first_present(model, (*where, "name"), where),
            )
        tensors.add(tensor)
        for j, control in enumerate(control_input.control):
            _check_control(model, name, tensor, control, (*where, "control", j), kinds)


def _check_control(
    model: ModelContext, name: str, tensor: str, control: Any, where: tuple[str | int, ...], kinds: dict[str, str]
) -> None:
    kind = enum_label(control, "kind")
    at_kind = first_present(model, (*where, "kind"), where)
    if kind in kinds:
        model.report(
            "S215",
            f"sequence batching specifies multiple {kind} tensors for {name} "
            f"(control_input '{kinds[kind]}' and '{tensor}' both have kind: {kind})",
            f"keep {kind} on one control tensor only",
            *at_kind,
        )
    else:
        kinds[kind] = tensor
    given = [field for field in _VALUE_FIELDS if len(getattr(control, field)) > 0]
    if kind == _CORRID:
        if given:
            model.report(
                "S219",
                "sequence batching must not specify either 'int32_false_true', 'fp32_false_true' or "
                f"'bool_false_true' for {kind} for {name} ({given[0]}: {fmt_list(getattr(control, given[0]))})",
                "remove the false/true values: the CORRID tensor carries the correlation id, set its data_type",
                *first_present(model, (*where, given[0]), at_kind),
            )
        data_type = enum_label(control, "data_type")
        if data_type not in _CORRID_TYPES:
            model.report(
                "S220",
                f"unexpected data type for control {kind} for {name}. Allowed data types are TYPE_UINT64, "
                f"TYPE_INT64, TYPE_UINT32, TYPE_INT32 and TYPE_STRING (data_type: {data_type})",
                "set data_type of the CORRID control to TYPE_UINT64 (or another listed type)",
                *first_present(model, (*where, "data_type"), at_kind),
            )
        return
    if kind not in _BOOLEAN_KINDS:
        return  # a kind this schema does not know: Triton ignores it
    if not given:
        model.report(
            "S216",
            "sequence batching must specify either 'int32_false_true', 'fp32_false_true' or 'bool_false_true' "
            f"for {kind} for {name} (control_input '{tensor}' gives none)",
            "add the values the model reads as false and true, e.g. int32_false_true: [ 0, 1 ]",
            *at_kind,
        )
    elif len(given) > 1:
        model.report(
            "S217",
            "sequence batching specifies more than one from 'int32_false_true', 'fp32_false_true' and "
            f"'bool_false_true' for {kind} for {name} ({' and '.join(given)} are both set)",
            "keep the one list that matches the data type of the control tensor",
            *first_present(model, (*where, given[1]), at_kind),
        )
    else:
        values = getattr(control, given[0])
        if len(values) != 2:
            model.report(
                "S218",
                f"sequence batching control '{given[0]}' must have exactly 2 entries for {kind} for {name} "
                f"({given[0]}: {fmt_list(values)})",
                "give the false value then the true value, e.g. [ 0, 1 ]",
                *first_present(model, (*where, given[0]), at_kind),
            )


def _check_strategies(model: ModelContext, name: str) -> None:
    batching = model.config.sequence_batching
    max_batch = int(model.config.max_batch_size)
    if has_field(batching, "oldest"):
        for index, size in enumerate(batching.oldest.preferred_batch_size):
            where = (*_BASE, "oldest", 0, "preferred_batch_size", index)
            if size <= 0:
                model.report(
                    "S221",
                    f"sequence batching preferred batch size must be positive for {name} "
                    f"(oldest preferred_batch_size: {size})",
                    "list batch sizes from 1 to max_batch_size, or drop preferred_batch_size",
                    *where,
                )
            elif size > max_batch:
                model.report(
                    "S222",
                    f"sequence batching preferred batch size must be <= max batch size for {name} "
                    f"(oldest preferred_batch_size: {size} > max_batch_size: {max_batch})",
                    "lower the preferred size or raise max_batch_size",
                    *where,
                )
    if has_field(batching, "direct"):
        utilization = float(batching.direct.minimum_slot_utilization)
        if utilization < 0.0 or utilization > 1.0:
            model.report(
                "S223",
                f"sequence batching minimum slot utilization must be in range (0.0, 1.0] for {name} "
                f"(minimum_slot_utilization: {utilization:g})",
                "use a fraction of the batch slots, e.g. minimum_slot_utilization: 0.5",
                *first_present(model, (*_BASE, "direct", 0, "minimum_slot_utilization"), (*_BASE, "direct")),
            )


def check_response_cache_decoupled(model: ModelContext) -> None:
    """S225: the response cache cannot serve decoupled models."""
    config = model.config
    if config.model_transaction_policy.decoupled and config.response_cache.enable:
        model.report(
            "S225",
            f"Response Cache does not currently support model {model_name(model)} with 'decoupled' transaction "
            "policy. Please disable the response cache. (response_cache: enable: true, decoupled: true)",
            "remove response_cache or set enable: false for this decoupled model",
            *first_present(model, ("response_cache", 0, "enable"), ("response_cache",)),
        )


CHECKS = [check_sequence_batching, check_response_cache_decoupled]
