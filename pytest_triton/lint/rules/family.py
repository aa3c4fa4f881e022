"""A lint family: the rules it owns (id, severity, title) and the checks that report them, in one module.

Each family module ends with ``FAMILY = Family(...)``; :mod:`pytest_triton.lint.rules` gathers the families
(the built-in modules, and any added with :func:`pytest_triton.lint.rules.register_family`), the catalogue
builds its table from theirs, and the runner runs their checks. A check may report any id of its family;
an id outside the family's prefix, or one defined twice, is refused when the catalogue is built.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

from pytest_triton.lint.finding import Severity

if TYPE_CHECKING:
    from pytest_triton.lint.context import ModelContext
    from pytest_triton.lint.context import RepositoryContext

RuleTable = list[tuple[str, Severity, str]]
ModelCheck = Callable[["ModelContext"], None]
RepositoryCheck = Callable[["RepositoryContext"], None]


@dataclass(frozen=True)
class Family:
    """Rules sharing an id prefix (``"E"``: ensembles), their table and their checks.

    ``model_checks`` run on every model whose config parsed, ``repository_checks`` once per repository."""

    prefix: str
    name: str
    rules: RuleTable
    model_checks: Sequence[ModelCheck] = ()
    repository_checks: Sequence[RepositoryCheck] = ()

    def __post_init__(self) -> None:
        strays = [rule_id for rule_id, _, _ in self.rules if not rule_id.startswith(self.prefix)]
        if strays:
            raise ValueError(
                f"family {self.name!r} (prefix {self.prefix!r}) lists rule ids {strays!r} of another prefix; "
                "give each rule an id starting with its family's prefix"
            )

    def checks(self) -> Sequence[Any]:
        return [*self.repository_checks, *self.model_checks]
