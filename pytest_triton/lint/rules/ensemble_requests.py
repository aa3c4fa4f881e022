"""Requests for some of an ensemble's outputs (E322): the sets Triton 2.51 answers with a deadlock.

Triton loads such an ensemble; it is the request naming only some outputs that fails, at run time, with
``in ensemble 'E', ... unexpected deadlock, at least one output is not set while no more ensemble steps
can be made`` (the pruning is in :mod:`pytest_triton.config.ensemble_outputs`). A warning, on the
first ensemble output that a step also reads (the usual cause), naming the failing sets and some that work.
"""

from __future__ import annotations

import itertools

from pytest_triton.config.ensemble_outputs import DEADLOCK
from pytest_triton.config.ensemble_outputs import failing_output_sets
from pytest_triton.config.ensemble_outputs import output_names
from pytest_triton.config.ensemble_outputs import request_works
from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.rules.ensemble import is_ensemble
from pytest_triton.lint.rules.family import Family
from pytest_triton.lint.rules.family import RuleTable

RULES: RuleTable = [
    ("E322", "warning", "a request for only some of the ensemble's outputs deadlocks in Triton"),
]

SHOWN = 4  # sets named in a finding, of each kind


def _sets(sets: list[tuple[str, ...]]) -> str:
    shown = ", ".join("{" + ", ".join(s) + "}" for s in sets[:SHOWN])
    return shown + (f" and {len(sets) - SHOWN} more" if len(sets) > SHOWN else "")


def check_partial_requests(model: ModelContext) -> None:
    if not is_ensemble(model):
        return
    cfg = model.config
    steps = cfg.ensemble_scheduling.step
    if len(cfg.output) < 2 or not len(steps) or any(not (len(s.input_map) and len(s.output_map)) for s in steps):
        return
    if not request_works(cfg, []):  # some output is never written: E309 says so
        return
    failing = failing_output_sets(cfg)
    if not failing:
        return
    name = str(cfg.name) or model.name
    outputs = output_names(cfg)
    read = {t for s in steps for t in s.input_map.values()}
    causes = [o for o in outputs if o in read]
    failed = set(failing)
    working = [s for size in range(1, len(outputs)) for s in itertools.combinations(outputs, size) if s not in failed]
    outcome = (
        "gets no output from Triton (a decoupled ensemble sends only its final flag instead of the deadlock error)"
        if _decoupled(model)
        else f"fails in Triton: '{DEADLOCK}'"
    )
    message = f"in ensemble '{name}', a request for only the outputs {_sets(failing)} {outcome}"
    because = (
        f"{', '.join(causes)} {'is an output' if len(causes) == 1 else 'are outputs'} that a later step also "
        "reads: a request without it prunes the step that writes it, and the step reading it never runs"
        if causes
        else "a request without some outputs prunes the steps that write them, and an ensemble input left "
        "without readers then prunes step 0 too (Triton takes step 0 as the writer of a tensor no step writes)"
    )
    works = f"sets that work: {_sets(working)}, or all outputs" if working else "only a request for all outputs works"
    where = ("output", outputs.index(causes[0])) if causes else ("ensemble_scheduling",)
    model.report("E322", message, f"{because}; {works} (a request naming no output gets them all)", *where)


def _decoupled(model: ModelContext) -> bool:
    """Whether a step model is decoupled (Triton then marks the ensemble decoupled)."""
    models = model.repository.models if model.repository is not None else {}
    steps = [models.get(s.model_name) for s in model.config.ensemble_scheduling.step]
    return any(s is not None and s.parsed is not None and s.config.model_transaction_policy.decoupled for s in steps)


FAMILY = Family(
    "E",
    "ensemble requests",
    RULES,
    model_checks=[check_partial_requests],
)
