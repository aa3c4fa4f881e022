"""Peak memory (RSS) of the model.tar.gz readers and writer, each in a fresh interpreter.

Run: ``python benchmarks/bench_archive_memory.py [--weight-gb 1.5] [--pax-mb 300]`` (from the checkout;
PYTHONPATH picks the tree measured). Rows: packaging a repository whose weight file is a sparse file of
``--weight-gb`` GB (reads as zeros, takes no disk); linting, and unpacking, a ~1 MB model.tar.gz whose
first pax header holds ``--pax-mb`` MB. Each row prints the peak RSS of the child minus that of a child
that only imports the same module, in MB, and the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = (
    "import resource, json, sys; from pathlib import Path; {imports}; {call}; "
    "print(json.dumps(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024))"
)


def peak_mb(imports: str, call: str) -> tuple[float, float]:
    """(peak RSS over the import-only baseline in MB, seconds) of ``call`` in a fresh interpreter."""

    def run(code: str) -> int:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
        if out.returncode not in (0, 1):
            raise SystemExit(out.stderr)
        return int(json.loads(out.stdout.strip().splitlines()[-1]))

    base = run(_CHILD.format(imports=imports, call="None"))
    start = time.perf_counter()
    peak = run(_CHILD.format(imports=imports, call=call))
    return (peak - base) / 1e6, time.perf_counter() - start


def write_huge_pax(path: Path, payload: int) -> None:
    """A gzip'ed tar: one pax header of ``payload`` bytes of comment, then m/config.pbtxt and m/1/model.py."""
    import gzip
    import tarfile

    def header(name: str, size: int, kind: bytes) -> bytes:
        info = tarfile.TarInfo(name)
        info.size, info.type = size, kind
        return info.tobuf(format=tarfile.USTAR_FORMAT)

    digits = len(str(payload))
    head = f"{payload} comment=".encode()
    body = payload - len(head) - 1
    assert len(str(payload)) == digits
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(header("././@PaxHeader", payload, tarfile.XHDTYPE) + head)
        for _ in range(body >> 20):
            out.write(b"A" * (1 << 20))
        out.write(b"A" * (body % (1 << 20)) + b"\n" + b"\0" * (-payload % 512))
        data = b'name: "m"\nbackend: "python"\n'
        out.write(header("m/config.pbtxt", len(data), tarfile.REGTYPE) + data + b"\0" * (-len(data) % 512))
        out.write(header("m/1/model.py", 0, tarfile.REGTYPE) + b"\0" * 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weight-gb", type=float, default=1.5)
    parser.add_argument("--pax-mb", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-archive-") as tmp:
        root = Path(tmp)
        repo = root / "repo"
        (repo / "m" / "1").mkdir(parents=True)
        (repo / "m" / "config.pbtxt").write_text('name: "m"\nbackend: "python"\n')
        with (repo / "m" / "1" / "weights.bin").open("wb") as out:
            out.truncate(int(args.weight_gb * 1e9))
        rows = {
            f"package_model_tar, {args.weight_gb} GB sparse weight": peak_mb(
                "from pytest_triton.repository.sagemaker import package_model_tar",
                f"package_model_tar(Path({str(repo)!r}), Path({str(root / 'model.tar.gz')!r}))",
            )
        }
        pax = root / "pax.tar.gz"
        write_huge_pax(pax, args.pax_mb * 1_000_000)
        size = pax.stat().st_size / 1e6
        rows[f"lint_path, {size:.1f} MB archive with a {args.pax_mb} MB pax header"] = peak_mb(
            "from pytest_triton.lint import lint_path", f"lint_path(Path({str(pax)!r}))"
        )
        unpack = f"unpack_model_archive(Path({str(pax)!r}), Path({str(root / 'out')!r}))"
        guarded = "try:\n " + unpack + "\nexcept Exception as e:\n print(type(e).__name__, file=sys.stderr)"
        rows["unpack_model_archive, same archive (refused or unpacked)"] = peak_mb(
            "from pytest_triton.archive.model_tar import unpack_model_archive", f"exec({guarded!r})"
        )
    for name, (mb, seconds) in rows.items():
        print(f"{name:<70} peak RSS +{mb:8.1f} MB  {seconds:6.1f} s")


if __name__ == "__main__":
    main()
