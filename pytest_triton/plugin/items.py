"""What the plugin's own items share (lint, contract and baseline items): a report line naming their kind, and a
failure shown as its message, which says everything (the findings, the contract's report), instead of a traceback
into the plugin.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from typing import ClassVar

import pytest


class TritonItem(pytest.Item):
    """A base of the plugin's items: ``kind`` names them in reports (``triton-lint: NAME``), ``line`` is the
    0-based line reported for them (None: none), and a failure raised as one of ``plain_failures`` is shown as
    its message."""

    kind: ClassVar[str]
    line: ClassVar[int | None] = None
    plain_failures: ClassVar[tuple[type[BaseException], ...]] = ()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        # Node.repr_failure takes a style, pytest's Function.repr_failure does not: never pass it on
        if isinstance(excinfo.value, self.plain_failures) and str(excinfo.value):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.line, f"{self.kind}: {self.name}"
