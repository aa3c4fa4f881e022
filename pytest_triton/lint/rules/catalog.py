"""Every rule id the linter can report. Ids are stable and never reused.

Families: C config file, L layout, S schema (Triton core's checks), E ensembles,
A execution accelerators, O ONNX model vs config, D deployment (SageMaker, images),
X the linter itself. Each family's module owns its table (:class:`.family.Family`); the C and X rows, which the
runner reports itself, are here.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping

from pytest_triton.lint.finding import Rule
from pytest_triton.lint.finding import Severity
from pytest_triton.lint.rules.family import RuleTable

_TABLE: list[tuple[str, Severity, str]] = [  # the runner's own families: C config file, X the linter
    # config file
    ("C001", "error", "config.pbtxt is not valid protobuf text for inference.ModelConfig"),
    ("C002", "warning", "config.pbtxt is missing (Triton auto-completes it)"),
    ("C003", "error", "config.pbtxt cannot be read"),
    ("C004", "error", "config.pbtxt is larger than the lint limit"),
    ("C005", "error", "config.pbtxt holds a literal longer than the lint limit"),
    # the linter itself
    ("X001", "error", "internal error in a lint rule (a linter bug: please report it)"),
    ("X002", "info", "a library warned while linting (caught and shown, never raised)"),
]


def build_catalog(tables: Iterable[RuleTable]) -> dict[str, Rule]:
    """Rules by id from the tables; an id given two different definitions is an error."""
    rules: dict[str, Rule] = {}
    for table in tables:
        for rule_id, severity, title in table:
            rule = Rule(rule_id, severity, title)
            if rules.get(rule_id, rule) != rule:
                raise ValueError(f"rule id {rule_id!r} is registered twice: {rules[rule_id]} and {rule}")
            rules[rule_id] = rule
    return rules


@functools.cache
def rules() -> dict[str, Rule]:
    """Every rule: the runner's own (above) and the table of each family."""
    from pytest_triton.lint.rules import families

    return build_catalog([_TABLE, *(family.rules for family in families())])


class _Rules(Mapping[str, Rule]):
    """``RULES[id]``: the catalogue, built on first use (the families import this module)."""

    def __getitem__(self, rule_id: str) -> Rule:
        return rules()[rule_id]

    def __iter__(self) -> Iterator[str]:
        return iter(rules())

    def __len__(self) -> int:
        return len(rules())


RULES: Mapping[str, Rule] = _Rules()
