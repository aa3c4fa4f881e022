"""Every rule id the linter can report. Ids are stable and never reused.

Families: C config file, L layout, S schema (Triton core's checks), E ensembles,
A execution accelerators, O ONNX model vs config, D deployment (SageMaker, images),
X the linter itself.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping

from pytest_triton.lint.finding import Rule
from pytest_triton.lint.finding import Severity

_TABLE: list[tuple[str, Severity, str]] = [  # the linter's own families: C, L, D, X
    # config file
    ("C001", "error", "config.pbtxt is not valid protobuf text for inference.ModelConfig"),
    ("C002", "warning", "config.pbtxt is missing (Triton auto-completes it)"),
    ("C003", "error", "config.pbtxt cannot be read"),
    ("C004", "error", "config.pbtxt is larger than the lint limit"),
    ("C005", "error", "config.pbtxt holds a literal longer than the lint limit"),
    # layout
    ("L101", "error", "model has no valid version folder"),
    ("L102", "warning", "folder looks like a version but Triton ignores it"),
    ("L103", "error", "config name differs from the model folder name"),
    ("L104", "error", "model file for the platform/backend is missing"),
    ("L105", "warning", "hidden folder at the repository root is polled as a model"),
    ("L106", "warning", "config.pbtxt at the root of a plain repository (Triton ignores files there)"),
    ("L107", "error", "path is not a model repository, model folder or model.tar.gz"),
    ("L108", "error", "cannot determine the backend of the model"),
    ("L109", "warning", "repository has no model folders"),
    ("L110", "error", "version folder name overflows int64: tritonserver aborts"),
    ("L111", "error", "folder or file cannot be read by the linter's user"),
    ("L112", "warning", "symbolic link loop: a folder links back to one already visited"),
    ("L113", "error", "special file in the repository (FIFO, device, socket) or a link that leads nowhere"),
    ("L114", "warning", "a file the linter reads links outside the repository: not read"),
    # deployment
    ("D601", "error", "SageMaker tarball has config.pbtxt at its root"),
    ("D602", "warning", "several models without SAGEMAKER_TRITON_DEFAULT_MODEL_NAME"),
    ("D603", "error", "SAGEMAKER_TRITON_DEFAULT_MODEL_NAME names no model folder"),
    ("D604", "info", "variable-length dims with dynamic batching only batch same-shape requests"),
    ("D605", "warning", "TensorFlow platform has no backend in -py3 images from 24.08 on"),
    ("D606", "error", "unsafe member in model.tar.gz"),
    ("D607", "error", "model.tar.gz cannot be read"),
    ("D608", "error", "model.tar.gz exceeds a lint limit (members, total bytes or header size)"),
    ("D609", "info", "archive member too large to check: checked by name and size only"),
    ("D610", "warning", "model.tar.gz holds hidden files (.env, .git/): SageMaker unpacks them"),
    ("D611", "warning", "model.tar.gz write budget reached: later members checked by name and size only"),
    ("D612", "error", "the model.tar.gz.env sidecar is not a small regular file beside the archive"),
    # the linter itself
    ("X001", "error", "internal error in a lint rule (a linter bug: please report it)"),
    ("X002", "info", "a library warned while linting (caught and shown, never raised)"),
]

RuleTable = list[tuple[str, Severity, str]]


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
    """Every rule: the linter's own (above) and the ``RULES`` table of each family module."""
    from pytest_triton.lint.rules import load_rule_modules

    return build_catalog([_TABLE, *(module.RULES for module in load_rule_modules() if hasattr(module, "RULES"))])


class _Rules(Mapping[str, Rule]):
    """``RULES[id]``: the catalogue, built on first use (the families import this module)."""

    def __getitem__(self, rule_id: str) -> Rule:
        return rules()[rule_id]

    def __iter__(self) -> Iterator[str]:
        return iter(rules())

    def __len__(self) -> int:
        return len(rules())


RULES: Mapping[str, Rule] = _Rules()
