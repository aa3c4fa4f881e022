"""The family of docs/lint.md's "Writing a rule", verbatim from ``from pytest_triton`` on (checked by a test)."""

from __future__ import annotations

from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.rules import Family
from pytest_triton.lint.rules import register_family


def check_instance_count(model: ModelContext) -> None:
    """Z901: more instances of a model than the team's runners have cores."""
    for index, group in enumerate(model.config.instance_group):
        if group.count > 8:
            message = f"instance_group {index} asks for count {group.count}; our runners have 8 cores"
            model.report("Z901", message, "lower count to 8 or less", "instance_group", index, "count")


TEAM_RULES = Family(
    "Z",
    "team conventions",
    [("Z901", "warning", "more model instances than a runner has cores")],
    model_checks=[check_instance_count],
)
register_family(TEAM_RULES)
