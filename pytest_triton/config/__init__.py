"""Triton model configuration: parse, print and locate fields of config.pbtxt."""

from __future__ import annotations

from pytest_triton.config.model import CONFIG_FILENAME
from pytest_triton.config.model import ParsedConfig
from pytest_triton.config.model import model_config_class
from pytest_triton.config.model import parse_config
from pytest_triton.config.model import print_config
from pytest_triton.config.model import read_config
from pytest_triton.config.model import write_config
from pytest_triton.config.positions import PositionIndex
from pytest_triton.config.positions import index_positions

__all__ = [
    "CONFIG_FILENAME",
    "ParsedConfig",
    "PositionIndex",
    "index_positions",
    "model_config_class",
    "parse_config",
    "print_config",
    "read_config",
    "write_config",
]
