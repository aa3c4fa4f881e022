"""Benchmarks of pytest-triton: scripts run from the project's root with ``python -m benchmarks.NAME``.

Not part of the installed package. Shared pieces live in ``common`` (the root, the machine, NLI requests),
``perf_analyzer`` (installing and running it) and ``gpu_common`` (what the GPU phases share); the scripts import
those and never each other's private names (tests/unit/test_package_graph.py checks the module graph).
"""
