"""The options of ``python -m pytest_triton cloud-cleanup`` (light: the parser is built without boto3)."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", help="AWS region to search (default: the configured one)")
    parser.add_argument(
        "--run", dest="runs", action="append", default=[], metavar="RUN_ID", help="Only this run (repeatable)"
    )
    parser.add_argument(
        "--ledger",
        dest="ledgers",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="A ledger file, or a folder of them, to read besides the state folder (repeatable)",
    )
    parser.add_argument(
        "--s3-uri", dest="s3_uris", action="append", default=[], metavar="S3_URI", help="Also search s3://BUCKET/PREFIX"
    )
    parser.add_argument("--yes", action="store_true", help="Delete what is listed (needs --run or --all)")
    parser.add_argument("--all", action="store_true", help="With --yes: every run found, live ones included")
