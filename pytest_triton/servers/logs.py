"""The server log: a file read incrementally, and Triton's own wording pulled out of it.

Triton log lines look like ``E1129 08:56:33.066373 4152 model_lifecycle.cc:642] "failed to load 'bad'
version 1: Internal: ValueError: boom\\n..."``: a severity letter, a timestamp, the thread id, the source
location, then the message as a quoted, escaped string. Some lines come from elsewhere, unquoted: protobuf's
``[libprotobuf ERROR ...] Error parsing text-format inference.ModelConfig: 3:57: Expected ",", found "{".``
right before Triton's ``Poll failed for model directory 'NAME': failed to read text proto from ...``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import final

_TRITON_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]\s]+\] ?(?P<msg>.*)$")
_PROTOBUF_LINE = re.compile(r"^\[libprotobuf \w+ [^\]]*\] ?(?P<msg>.*)$")
# Triton 2.51's words for a model folder without a version folder (an ensemble's empty 1/, which git does not keep)
NO_VERSION = "at least one version must be available under the version policy"
NO_VERSION_HINT = "git keeps no empty folder: put a .gitkeep in the version folder (an ensemble's is empty)"


def message(line: str) -> str:
    """The message of one log line, unquoted and unescaped (the line itself if it is not Triton's)."""
    match = _TRITON_LINE.match(line)
    if match is None:
        return line
    text = match.group("msg").strip()
    if len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        try:
            decoded = json.loads(text)
        except ValueError:
            return text[1:-1]
        return str(decoded)
    return text


def is_error(line: str) -> bool:
    """Whether a raw log line reports an error (``E...``, ``F...``, ``error: ...``, protobuf errors)."""
    return bool(re.match(r"^[EF]\d{4} ", line) or line.startswith("error:") or line.startswith("[libprotobuf ERROR"))


def model_failure_reason(lines: list[str], model: str) -> str:
    """What the log says about why ``model`` did not load ("" when it says nothing).

    Looks for ``failed to load 'M' version V: ...``, ``Poll failed for model directory 'M': ...``
    (with the protobuf parse error printed just before it), ``failed to poll model 'M': ...`` and
    ``failed to load model 'M': ...`` (a model Triton could not even start loading, e.g. one without a version
    folder: it is then missing from the repository index). A known cause gets its hint on the next line.
    """
    quoted = f"'{model}'"
    found: list[str] = []
    for i, line in enumerate(lines):
        text = message(line)
        if quoted not in text:
            continue
        if text.startswith(f"failed to load {quoted} version") or text.startswith(
            (
                f"Poll failed for model directory {quoted}",
                f"failed to poll model {quoted}",
                f"failed to load model {quoted}",
            )
        ):
            if i > 0 and (proto := _PROTOBUF_LINE.match(lines[i - 1])) is not None:
                text += f" ({proto.group('msg').strip()})"
            if NO_VERSION in text:
                text += f"\n  hint: {model}/ has no version folder (e.g. {model}/1/); {NO_VERSION_HINT}"
            if text not in found:
                found.append(text)
    return "\n".join(found)


def loaded_models(lines: list[str]) -> tuple[set[str], set[str]]:
    """The models the log reports as ``successfully loaded`` and as ``failed to load``."""
    ok: set[str] = set()
    failed: set[str] = set()
    for line in lines:
        text = message(line)
        if (m := re.match(r"^successfully loaded '(.+)'$", text)) is not None:
            ok.add(m.group(1))
        elif (m := re.match(r"^failed to load '(.+?)'", text)) is not None:
            failed.add(m.group(1))
    return ok, failed


def last_error(lines: list[str]) -> str:
    """The last error line of the log, as a message ("" if there is none)."""
    for line in reversed(lines):
        if is_error(line):
            return message(line).strip()
    return ""


def condensed(lines: list[str]) -> list[str]:
    """The lines worth showing in an error: no blank lines, no ``+---+`` table borders, and no rows of
    the startup ``| Option | Value |`` table (about 20 lines that would push the errors out of a tail).
    The backend and model tables (``| add | 1 | UNAVAILABLE: ...``) are kept."""
    kept = []
    in_options = False
    for line in lines:
        if line.startswith("| Option "):
            in_options = True
        elif not line.startswith(("|", "+")):
            in_options = False
        if in_options or not line.strip() or line.startswith("+-"):
            continue
        kept.append(line)
    return kept


def server_error(lines: list[str]) -> str:
    """The server's own initialisation error (``E... tritonserver.cc:NNNN] "..."``), else the last error."""
    for line in reversed(lines):
        if re.match(r"^E\d{4} .* tritonserver\.cc:\d+\]", line):
            return message(line).strip()
    return last_error(lines)


@final
class LogFile:
    """A log file written by the server, read incrementally; :meth:`freeze` keeps it after the file goes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = ""
        self._lines: list[str] = []
        self._cursor = 0
        self._frozen = False

    def _read(self) -> None:
        if self._frozen:
            return
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return
        if not chunk:
            return
        self._offset += len(chunk)
        text = self._partial + chunk.decode("utf-8", errors="replace")
        *complete, self._partial = text.split("\n")
        self._lines.extend(line.rstrip("\r") for line in complete)

    def read_new(self) -> list[str]:
        """The complete lines written since the previous call (whatever other methods read meanwhile)."""
        self._read()
        new = self._lines[self._cursor :]
        self._cursor = len(self._lines)
        return new

    def lines(self) -> list[str]:
        """Every complete line so far (plus a trailing unterminated one)."""
        self._read()
        return [*self._lines, self._partial] if self._partial else list(self._lines)

    def text(self) -> str:
        """The whole log so far."""
        lines = self.lines()
        return "\n".join(lines) + ("\n" if lines and not self._partial else "")

    def tail(self, lines: int = 50) -> str:
        """The last ``lines`` meaningful lines (see :func:`condensed`)."""
        kept = condensed(self.lines())
        return "\n".join(kept[-lines:]) if lines > 0 else ""

    def freeze(self) -> None:
        """Read what is left and stop reading the file (it may be removed afterwards)."""
        self._read()
        self._frozen = True


# what Triton prints at error level on a machine without a GPU (CUDA and NVML probes at startup): true, and
# no help in the log of a failing test there
_GPU_NOISE = re.compile(
    r"CUDA driver version is insufficient|Failed to initialize NVML|Unable to get number of CUDA devices"
    r"|no CUDA-capable device|Failed to initialize CUDA|unable to get CUDA device count|cudaGetDeviceCount"
)


def without_gpu_noise(text: str) -> str:
    """``text`` without the GPU probe errors of a server that sees no GPU, with one line saying so."""
    lines = text.splitlines()
    kept = [line for line in lines if not _GPU_NOISE.search(line)]
    dropped = len(lines) - len(kept)
    if dropped:
        kept.append(f"({dropped} CUDA/NVML probe lines of a machine without a GPU left out)")
    return "\n".join(kept)
