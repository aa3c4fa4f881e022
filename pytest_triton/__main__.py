"""Command line: ``python -m pytest_triton lint PATH... | rules | serve REPO | init REPO | docs [PAGE] |
cloud-cleanup | report merge`` (installed as the ``pytest-triton`` script too)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path


def _lint_main(args: argparse.Namespace) -> int:
    from pytest_triton.lint import has_errors
    from pytest_triton.lint import lint_paths
    from pytest_triton.lint.limits import LintLimits

    limits = LintLimits(**{name: getattr(args, name) for name in LintLimits.names()})
    findings = lint_paths(args.paths, sagemaker_default_model=args.sagemaker_default_model, limits=limits)
    if args.format == "json":
        print(json.dumps([f.as_dict() for f in findings], indent=2))
    elif args.format == "github":  # workflow annotations on the PR's diff
        from pytest_triton.lint.github import annotation

        for finding in findings:
            print(annotation(finding))
    else:
        for finding in findings:
            print(finding.format())
        counts = {s: sum(f.severity == s for f in findings) for s in ("error", "warning", "info")}
        summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items())
        print(f"{len(args.paths)} path{'s' if len(args.paths) != 1 else ''} linted: {summary}", file=sys.stderr)
    return 1 if has_errors(findings) else 0


def _rules_main(args: argparse.Namespace) -> int:
    from pytest_triton.lint.rules.catalog import RULES

    rules = sorted(RULES.values(), key=lambda r: r.id)
    if args.format == "markdown":
        print("| rule | severity | what it finds |\n|---|---|---|")
        for rule in rules:
            print(f"| {rule.id} | {rule.severity} | {rule.title} |")
    else:
        for rule in rules:
            print(f"{rule.id}  {rule.severity:<7}  {rule.title}")
    return 0


DESCRIPTION = (
    "pytest-triton's command line: lint model repositories, list the lint rules, serve a repository on Triton, "
    "write contracts files for a repository (init), print a documentation page (docs), or clean up what a "
    "killed --cloud run left in AWS."
)
LIMIT_HELP = {
    "max_config_bytes": "Largest config.pbtxt parsed, in bytes (K/M/G suffixes allowed; default %(default)s)",
    "max_literal_bytes": "Longest string or value in a config.pbtxt (default %(default)s)",
    "max_archive_members": "Most members read from a model.tar.gz (default %(default)s)",
    "max_archive_bytes": "Most uncompressed bytes read from a model.tar.gz (default %(default)s)",
    "max_member_bytes": "Largest model.tar.gz member written out to be checked (default %(default)s)",
    "max_archive_header_bytes": "Largest pax or GNU long-name header read from a model.tar.gz (default %(default)s)",
    "max_written_bytes": "Most bytes written out in all to check a model.tar.gz (default %(default)s)",
}


def _size(text: str) -> int:
    from pytest_triton.errors import ConfigError
    from pytest_triton.lint.limits import parse_size

    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def invoked_as() -> str:
    """How the user called the command line, for usage lines: the console script or the module."""
    script = Path(sys.argv[0]).name
    return script if script in ("pytest-triton", "pytest-triton.exe") else "python -m pytest_triton"


def _docs_main(args: argparse.Namespace) -> int:
    """Print a documentation page shipped in the package, or list them."""
    from importlib.resources import files

    pages = files("pytest_triton") / "docs"
    names = sorted(p.name.removesuffix(".md") for p in pages.iterdir() if p.name.endswith(".md"))
    if args.page is None:
        print("\n".join(names))
        return 0
    if args.page.removesuffix(".md") not in names:
        print(f"error: page={args.page!r}: expected one of {', '.join(names)}", file=sys.stderr)
        return 2
    print((pages / f"{args.page.removesuffix('.md')}.md").read_text(encoding="utf-8"), end="")
    return 0


def build_parser(prog: str = "python -m pytest_triton") -> argparse.ArgumentParser:
    from pytest_triton.lint.limits import LintLimits

    parser = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True)
    lint = commands.add_parser("lint", help="Lint model repositories, model folders or model.tar.gz files")
    lint.add_argument("paths", nargs="+", metavar="PATH")
    lint.add_argument(
        "--format",
        choices=("text", "json", "github"),
        default="text",
        help="Output format (github: GitHub Actions annotations, ::error file=F,line=L,col=C,title=RULE::message)",
    )
    lint.add_argument(
        "--sagemaker-default-model",
        metavar="NAME",
        help="Check that SAGEMAKER_TRITON_DEFAULT_MODEL_NAME=NAME names a model folder",
    )
    defaults = LintLimits()
    group = lint.add_argument_group("limits (a target over one gets a finding that names it)")
    for name in LintLimits.names():
        flag = "--" + name.replace("_", "-")
        group.add_argument(
            flag, dest=name, type=_size, default=getattr(defaults, name), metavar="N", help=LIMIT_HELP[name]
        )
    rules = commands.add_parser("rules", help="List every lint rule id with its severity and title")
    rules.add_argument("--format", choices=("text", "markdown"), default="text", help="Output format")
    commands.add_parser("serve", help="Serve a repository on Triton; prints one JSON line once ready", add_help=False)
    commands.add_parser(
        "report", help="report merge: the shards' reports as one report and one verdict", add_help=False
    )
    commands.add_parser("init", help="Write contracts files for a model repository, green as written", add_help=False)
    docs = commands.add_parser("docs", help="Print a documentation page shipped in the package (none: list them)")
    docs.add_argument("page", nargs="?", metavar="PAGE", help="A page name, e.g. contracts or options")
    cleanup = commands.add_parser(
        "cloud-cleanup",
        help="List what killed --cloud runs left in AWS (by tag and ledger); delete it with --yes",
        description="Finds endpoints, endpoint configs, models (tag pytest-triton-run) and S3 objects of --cloud "
        "runs, and the ledger files the runs wrote; lists them; deletes them with --yes. Exit 1 when anything "
        "is left at the end.",
    )
    from pytest_triton.cloud.cleanup_args import add_arguments

    add_arguments(cleanup)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = invoked_as()
    if argv and argv[0] == "serve":
        from pytest_triton.servers.serve_cli import serve_main

        return int(serve_main(argv[1:], prog=f"{prog} serve"))
    if argv and argv[0] == "report":
        from pytest_triton.bench.merge import report_main

        return report_main(argv[1:])
    if argv and argv[0] == "init":
        from pytest_triton.contracts.init import init_main

        return init_main(argv[1:], prog=f"{prog} init")
    args = build_parser(prog).parse_args(argv)
    if args.command == "rules":
        return _rules_main(args)
    if args.command == "docs":
        return _docs_main(args)
    if args.command == "cloud-cleanup":
        from pytest_triton.cloud.cleanup import cleanup_main

        return cleanup_main(args)
    return _lint_main(args)


def _run() -> int:
    try:
        return main()
    except BrokenPipeError:  # output piped into head(1) and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(_run())
