"""Schema rules (S2xx): what Triton core 2.51 checks when it loads a model configuration.

The messages quote Triton's own error text (users grep server logs for it) and add the field
and value at fault. The checks live in sibling modules, one per part of the config:

- :mod:`.schema_platform`: platform/backend pair, ensemble_scheduling, max_batch_size,
  dynamic batching (S201-S212);
- :mod:`.schema_sequence`: sequence batching and the response cache (S213-S225);
- :mod:`.schema_io`: inputs, outputs, batch inputs and batch outputs (S226-S244);
- :mod:`.schema_instances`: instance groups (S245-S251).

Ids and titles are registered in :mod:`.schema_common`. Ensemble steps, maps and the
"ensemble scheduling must be set" rule belong to the ensemble family.
"""

from __future__ import annotations

from pytest_triton.lint.rules import schema_instances
from pytest_triton.lint.rules import schema_io
from pytest_triton.lint.rules import schema_platform
from pytest_triton.lint.rules import schema_sequence
from pytest_triton.lint.rules.family import Family
from pytest_triton.lint.rules.schema_common import RULE_TABLE

FAMILY = Family(
    "S",
    "schema",
    RULE_TABLE,
    model_checks=[*schema_platform.CHECKS, *schema_sequence.CHECKS, *schema_io.CHECKS, *schema_instances.CHECKS],
)

__all__ = ["FAMILY"]
