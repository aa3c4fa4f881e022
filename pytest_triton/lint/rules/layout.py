"""Layout: what Triton's repository poller sees before it reads any config.

Every folder at the repository root is a model (hidden folders too); a model needs a
config (unless auto-complete can guess the backend from a file name), at least one version
folder named by a plain integer, and the model file its backend loads.
"""

from __future__ import annotations

from pytest_triton.config import CONFIG_FILENAME
from pytest_triton.lint.context import INT64_MAX
from pytest_triton.lint.context import ModelContext
from pytest_triton.lint.context import RepositoryContext
from pytest_triton.lint.context import is_canonical_version
from pytest_triton.lint.context import read_version
from pytest_triton.lint.rules.family import Family
from pytest_triton.lint.rules.family import RuleTable
from pytest_triton.lint.walk import folder_identity
from pytest_triton.lint.walk import not_plain

RULES: RuleTable = [  # L107, L109, L111 and L112 are reported by the runner as it walks the target
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
]

# default model file per platform and per backend (Triton's and each backend's defaults)
PLATFORM_FILES: dict[str, tuple[str, ...]] = {
    "tensorrt_plan": ("model.plan",),
    "onnxruntime_onnx": ("model.onnx",),
    "pytorch_libtorch": ("model.pt",),
    "tensorflow_savedmodel": ("model.savedmodel",),
    "tensorflow_graphdef": ("model.graphdef",),
}
BACKEND_FILES: dict[str, tuple[str, ...]] = {
    "tensorrt": ("model.plan",),
    "onnxruntime": ("model.onnx",),
    "pytorch": ("model.pt", "model.pt2", "model.py"),
    "tensorflow": ("model.savedmodel", "model.graphdef"),
    "openvino": ("model.xml",),
    "python": ("model.py",),
}
# file extension → backend, as auto-complete guesses it when the config names none
EXTENSION_BACKENDS = {
    ".plan": "tensorrt",
    ".onnx": "onnxruntime",
    ".pt": "pytorch",
    ".savedmodel": "tensorflow",
    ".graphdef": "tensorflow",
    ".py": "python",
    ".xml": "openvino",
}


def _number_in(name: str) -> str | None:
    """The number a skipped folder name seems to mean ('v1', 'version_2', '01'), for the hint."""
    digits = name.lstrip("vV").removeprefix("ersion").lstrip("_-").lstrip("0") or ("0" if "0" in name else "")
    return digits if digits.isdigit() else None


def check_repository_root(repo: RepositoryContext) -> None:
    models = 0
    for entry in repo.reporter.folders.entries(repo.root):
        child = entry.path
        if entry.is_dir:
            models += 1
            if child.name.startswith("."):
                repo.reporter.add(
                    "L105",
                    child,
                    f"hidden folder {child.name!r} is polled as a model by Triton",
                    "move it out of the repository (Triton does not skip dot-folders)",
                    model=child,
                )
        elif child.name == CONFIG_FILENAME and repo.tarball is None:
            # Triton ignores files at the root of a plain repository (inside a SageMaker archive
            # the same file makes the container exit: D601)
            repo.reporter.add(
                "L106",
                child,
                "config.pbtxt at the repository root is ignored by Triton: it expects <model>/config.pbtxt",
                "move it into a folder named after the model, beside a version folder such as 1/",
                line=1,
                col=1,
            )
    if models == 0 and not repo.reporter.folders.was_unreadable(repo.root):
        repo.reporter.add(
            "L109", repo.root, "repository has no model folders", "add <model>/config.pbtxt and <model>/1/"
        )


def check_model_folders(repo: RepositoryContext) -> None:
    for model in repo.models.values():
        _check_versions(model)
        if model.parsed is None and not model.has_config:
            _check_missing_config(model)


def _check_versions(model: ModelContext) -> None:
    children = model.subfolders()
    skipped = []
    for child in children:
        version = read_version(child.name)
        if version is None:
            number = _number_in(child.name)
            if number is not None:
                skipped.append(child.name)
                model.report_file("L102", child, ignored_version_message(child.name), f"rename it to {number}/")
        elif not -INT64_MAX - 1 <= version <= INT64_MAX:
            model.report_file(
                "L110",
                child,
                f"version folder {child.name!r} does not fit in int64: tritonserver aborts while polling "
                "(terminate called after throwing an instance of 'std::out_of_range', what(): stoll)",
                "use a small integer such as 1/",
            )
        elif not is_canonical_version(child.name):
            model.report_file(
                "L102",
                child,
                f"version folder {child.name!r} is read as version {version}, but Triton looks for its files "
                f"in {version}/",
                f"rename it to {version}/",
            )
    if not model.loaded_versions():
        policy = ""
        if model.parsed is not None and model.config.HasField("version_policy"):
            policy = f" (version_policy: {_policy_text(model)}; versions found: {model.versions() or 'none'})"
        elif skipped:
            policy = f" ({', '.join(repr(n) for n in skipped)} ignored)"
        model.report_file(
            "L101",
            model.folder,
            f"at least one version must be available under the version policy of model {model.name!r}"
            + (policy or ": no version folder"),
            "add a folder named 1/ holding the model file" if not policy else "fix version_policy or the folders",
        )


def ignored_version_message(name: str) -> str:
    """The warning Triton logs when it skips the folder ``name`` of a model (model_lifecycle.cc)."""
    if len(name) > 1 and name.startswith("0"):
        return f"ignore version directory '{name}' which contains leading zeros in its directory name"
    return f"ignore version directory '{name}' which fails to convert to integral number"


def _policy_text(model: ModelContext) -> str:
    from google.protobuf import text_format

    return " ".join(text_format.MessageToString(model.config.version_policy, as_one_line=True).split()) or "{}"


def _check_missing_config(model: ModelContext) -> None:
    guessed = _backend_from_files(model)
    if guessed is None:
        model.report_file(
            "L108",
            model.folder,
            f"Invalid model name: Could not determine backend for model '{model.name}' with no backend in "
            "model configuration. Expected model name of the form 'model.<backend_name>'.",
            "add config.pbtxt with platform or backend, or name the model file model.<backend> "
            "(model.onnx, model.plan, model.py, ...)",
        )
    else:
        model.report_file(
            "C002",
            model.config_path,
            f"config.pbtxt is missing: Triton auto-completes it for the {guessed} backend (a server started "
            "with --strict-model-config=true or --disable-auto-complete-config refuses the model)",
            "write config.pbtxt with name, backend, max_batch_size, inputs and outputs so the interface is explicit",
        )


def _backend_from_files(model: ModelContext) -> str | None:
    folders = model.reporter.folders
    for version in model.loaded_versions():
        if str(version) not in folders.names(model.folder):
            continue
        for entry in folders.entries(model.folder / str(version)):
            item = entry.path
            if item.stem == "model" and item.suffix in EXTENSION_BACKENDS:
                return EXTENSION_BACKENDS[item.suffix]
    return None


def expected_model_files(model: ModelContext) -> tuple[str, ...]:
    """The file names the model's backend would load, honouring default_model_filename."""
    config = model.config
    if config.default_model_filename:
        return (config.default_model_filename,)
    if config.platform == "ensemble":
        return ()
    # a named backend decides which file it loads (a python model labelled tensorrt_plan still
    # loads model.py), except for TensorFlow platforms, whose auto-complete names the file
    if config.backend and not config.platform.startswith("tensorflow_"):
        return BACKEND_FILES.get(config.backend, ())
    return PLATFORM_FILES.get(config.platform, BACKEND_FILES.get(config.backend, ()))


def check_name(model: ModelContext) -> None:
    config = model.config
    if config.name and config.name != model.name:
        model.report(
            "L103",
            f"unexpected directory name '{model.name}' for model '{config.name}', directory name must equal model name",
            f"set name: {model.name!r} in config.pbtxt (or rename the folder to {config.name!r})",
            "name",
        )


def check_platform_known(model: ModelContext) -> None:
    config = model.config
    if config.platform or config.backend:
        return
    if _backend_from_files(model) is None:
        model.report(
            "L108",
            f"Invalid model name: Could not determine backend for model '{model.name}' with no backend in "
            "model configuration. Expected model name of the form 'model.<backend_name>'.",
            'set backend (e.g. backend: "onnxruntime") or platform in config.pbtxt',
        )


def check_model_files(model: ModelContext) -> None:
    names = expected_model_files(model)
    if not names:
        return
    folders = model.reporter.folders
    for version in model.loaded_versions():  # only what the version policy loads
        folder = model.folder / str(version)
        if str(version) not in folders.subfolder_names(model.folder):
            model.report_file(
                "L104",
                model.folder,
                f"version {version} of model {model.name!r} is read from a folder not named {version}/, "
                f"but Triton looks for {' or '.join(names)} in {version}/",
                f"rename the version folder to {version}/",
            )
            continue
        present = folders.names(folder)
        if not any(name in present for name in names):
            found = sorted(present)[:5]
            model.report_file(
                "L104",
                folder,
                f"version {version} of model {model.name!r} has no {' or '.join(names)}"
                + (f" (found: {', '.join(found)})" if found else " (folder is empty)"),
                _model_file_hint(model, names),
            )


def _model_file_hint(model: ModelContext, names: tuple[str, ...]) -> str:
    if model.config.default_model_filename:
        return "put the file there or fix default_model_filename"
    return f"put {names[0]} in the version folder, or set default_model_filename"


# how deep below a model folder special files are looked for: version folders and what a python model ships
_WALK_DEPTH = 4


def check_special_files(repo: RepositoryContext) -> None:
    """L113 for a FIFO, a device, a socket or a link loop in a model folder: reading one blocks or never ends
    (a packager, a copy, a backend that opens it), and the plugin's staging refuses them. A folder reached
    twice through links (a link back up) is listed once."""
    folders = repo.reporter.folders
    for model in repo.models.values():
        seen: set[tuple[int, int]] = set()  # folders reached through a link: each is listed once
        stack = [(model.folder, 0)]
        while stack:
            folder, depth = stack.pop()
            for entry in folders.entries(folder):
                if entry.is_dir:
                    if depth >= _WALK_DEPTH:
                        continue
                    if entry.is_link:
                        if not seen:  # the model folder itself, the first time a link could lead back to it
                            seen.add(folder_identity(model.folder) or (-1, -1))
                        identity = folder_identity(entry.path)
                        if identity is None or identity in seen:
                            continue
                        seen.add(identity)
                    stack.append((entry.path, depth + 1))
                    continue
                if entry.is_file or entry.name == CONFIG_FILENAME:  # a config's read reports it
                    continue
                kind = not_plain(entry)
                if kind is not None:
                    repo.reporter.add(
                        "L113",
                        entry.path,
                        f"{str(entry.path)!r} is {kind}: a copy, a packager or a backend reading it blocks, "
                        "never ends or fails",
                        "remove it; a model folder holds regular files and folders only",
                        model=model.folder,
                    )


FAMILY = Family(
    "L",
    "layout",
    RULES,
    model_checks=[check_name, check_platform_known, check_model_files],
    repository_checks=[check_repository_root, check_model_folders, check_special_files],
)
