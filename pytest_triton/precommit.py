"""The pre-commit hook ``triton-lint``: lint the repositories that hold the staged ``config.pbtxt`` files, and the
staged ``model.tar.gz`` files, with ``python -m pytest_triton lint``.

pre-commit passes file names; the linter takes repositories (an ensemble is checked against its siblings), so
each ``config.pbtxt`` stands for the repository its model folder is in, linted once however many of its
configs changed. Options before the files (``--format github``, the limits) go to the linter as they are.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path


def lint_targets(files: Sequence[str]) -> list[str]:
    """The lint targets of ``files``: a config.pbtxt's repository (its model folder's parent), an archive as
    it is; each once, in the order first named."""
    targets: list[str] = []
    for name in files:
        path = Path(name)
        if path.name == "config.pbtxt":
            repository = path.parent.parent
            targets.append(str(repository) if str(repository) else ".")
        else:
            targets.append(str(path))
    return list(dict.fromkeys(targets))


def main(argv: Sequence[str] | None = None) -> int:
    from pytest_triton.__main__ import main as cli

    args = list(sys.argv[1:] if argv is None else argv)
    options: list[str] = []
    files: list[str] = []
    words = iter(args)
    for word in words:
        if word.startswith("-"):
            options.append(word)
            if "=" not in word:  # every lint option takes a value: --format github, --max-config-bytes 32M
                options.append(next(words, ""))
        else:
            files.append(word)
    if not files:
        return 0
    return cli(["lint", *options, *lint_targets(files)])


if __name__ == "__main__":
    sys.exit(main())
