"""pytester runs pytest in this process and afterwards forgets every module the inner run
imported; C extensions (protobuf's upb, numpy) crash when imported a second time. Import
them here, once, so the inner runs find them already loaded."""

from __future__ import annotations

import google.protobuf.text_format  # noqa: F401
import numpy  # noqa: F401

from pytest_triton.config import model_config_class

model_config_class()
