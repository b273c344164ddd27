"""Sources a Hugging Face user already has: a ``datasets`` ``save_to_disk`` directory, and a hub dataset id at a
revision (``ORG/NAME@REVISION``), read through ``datasets`` itself (``load_from_disk``, ``load_dataset(...,
revision=)``) and then straight from the Arrow files it leaves, memory-mapped.

A hub id's revision is resolved to a commit id before loading, so the build record names the exact commit
whichever branch or tag was given.
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

from sftpack.base.errors import UsageError

HUB_ID = re.compile(r"^(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?$")
SPLIT = "train"


def is_saved_dataset(path: Path) -> bool:
    """A ``Dataset.save_to_disk`` or ``DatasetDict.save_to_disk`` directory."""
    return path.is_dir() and ((path / "state.json").is_file() or (path / "dataset_dict.json").is_file())


def hub_id(spec: str) -> tuple[str, str | None] | None:
    """``(repo, revision)`` when ``spec`` reads as a hub dataset id (``ORG/NAME`` or ``ORG/NAME@REVISION``)."""
    match = HUB_ID.match(spec)
    return (match["repo"], match["revision"]) if match else None


def regular_file_problem(path: Path) -> str | None:
    """Why ``path`` cannot be read as a file (a FIFO would block its reader forever, a device never end), or
    None for a regular file (a symbolic link is followed)."""
    try:
        mode = path.stat().st_mode
    except OSError as e:
        return f"{path.name}: {e.strerror or e}"
    if stat.S_ISREG(mode):
        return None
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))
    return f"{path.name} is {next((name for test, name in kinds if test(mode)), 'not a regular file')}"


def _small_json(path: Path, source: Path, what: str):
    """A saved dataset's JSON file, checked to be a regular file of sane size before it is read."""
    problem = regular_file_problem(path)
    if problem is None and path.stat().st_size > 1 << 20:
        problem = f"{path.name} is over 1 MiB"
    if problem:
        raise UsageError(f"--source {source}: {problem}; not a save_to_disk directory's {what}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"--source {source}: {path.name} is unreadable ({type(e).__name__}: {e})") from e


def _split_names(path: Path) -> list[str]:
    """The split names of a saved ``DatasetDict``, each a plain directory name inside ``path``."""
    data = _small_json(path / "dataset_dict.json", path, "split list")
    splits = data.get("splits") if isinstance(data, dict) else None
    if not isinstance(splits, list) or not splits or not all(isinstance(n, str) for n in splits):
        raise UsageError(f"--source {path}: dataset_dict.json's `splits` is {_shown(splits)}, not a list of split "
                         "names")
    for name in splits:  # a split is a directory of this dataset: never a path that leaves it
        if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
            raise UsageError(f"--source {path}: dataset_dict.json names the split {_shown(name)}, which is not a "
                             "directory inside it")
    return splits


def _shown(value) -> str:
    text = json.dumps(value, ensure_ascii=True)
    return text if len(text) <= 60 else text[:59] + "…"


def saved_split(path: Path) -> Path:
    """The directory holding the ``train`` split of a saved ``DatasetDict`` (or its only split); ``path`` itself
    for a saved ``Dataset``."""
    if (path / "state.json").is_file():
        return path
    splits = _split_names(path)
    if SPLIT in splits:
        return path / SPLIT
    if len(splits) == 1:
        return path / splits[0]
    raise UsageError(f"--source {path}: a saved DatasetDict with splits {', '.join(splits)} and no {SPLIT!r}: "
                     "pass the split's directory (--source PATH/SPLIT)")


def check_saved_files(directory: Path, source: Path) -> None:
    """Every file ``load_from_disk`` opens in a saved split is a regular file inside it: its ``state.json``,
    ``dataset_info.json`` and each Arrow data file ``state.json`` lists (``datasets`` would block on a FIFO, beyond
    the reach of SIGTERM, or read a file named ``../elsewhere``)."""
    if not directory.is_dir():
        raise UsageError(f"--source {source}: the split directory {directory.name} does not exist")
    state = _small_json(directory / "state.json", source, "state.json")
    files = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(files, list) or not all(isinstance(f, dict) and isinstance(f.get("filename"), str)
                                              for f in files):
        raise UsageError(f"--source {source}: {directory.name}/state.json lists no data files (`_data_files`)")
    info = directory / "dataset_info.json"
    if info.exists() or info.is_symlink():
        _small_json(info, source, "dataset_info.json")
    root = directory.resolve()
    for entry in files:
        name = entry["filename"]
        file = directory / name
        if "/" in name or "\\" in name or name in ("", ".", "..") or file.resolve().parent != root:
            raise UsageError(f"--source {source}: state.json names the data file {_shown(name)}, which is not a file "
                             "inside the dataset's directory")
        problem = regular_file_problem(file)
        if problem:
            raise UsageError(f"--source {source}: {problem}; a data file must be a regular file")


def load_saved(path: Path) -> list[str]:
    """The Arrow files of a saved dataset (``datasets.load_from_disk``), in order; every file it opens was
    checked first (:func:`check_saved_files`)."""
    import datasets

    directory = saved_split(path)
    check_saved_files(directory, path)
    try:
        dataset = datasets.load_from_disk(str(directory))
    except Exception as e:  # datasets raises FileNotFoundError, ValueError, its own errors: one line each
        raise UsageError(f"--source {path}: not a loadable save_to_disk directory ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:200] if str(e) else ''})") from e
    if not isinstance(dataset, datasets.Dataset):
        raise UsageError(f"--source {path}: expected one split, got {type(dataset).__name__}")
    return [f["filename"] for f in dataset.cache_files]


def checked_commit(sha, label: str) -> str:
    """The hub's answer for a commit id, refused unless it is one (40 hex digits): it becomes a cache path and the
    record's revision, so ``../../elsewhere`` must never get that far."""
    from sftpack.base.hub import is_commit

    if not is_commit(sha):
        raise UsageError(f"{label}: the hub answered the commit {_shown(sha)}, which is not a commit id (40 hex "
                         "digits); refusing to load from it")
    return sha


def resolve_revision(repo: str, revision: str | None) -> str:
    """The commit id ``revision`` (default: main) of dataset ``repo`` on the hub."""
    from huggingface_hub import HfApi

    from sftpack.base.hub import deadline, quiet_hub, within_deadline

    label = f"--source {repo}@{revision or 'main'}"
    try:
        with quiet_hub():
            info = within_deadline(lambda: HfApi().dataset_info(repo, revision=revision or "main"), deadline(60),
                                   label)
    except UsageError:
        raise
    except Exception as e:  # the hub's HTTP errors, connection errors: one line
        raise UsageError(f"--source {repo}@{revision or 'main'}: not found on the hub ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:200] if str(e) else ''})") from e
    return checked_commit(info.sha, f"--source {repo}@{revision or 'main'}")


def load_hub(repo: str, commit: str, label: str | None = None) -> list[str]:
    """The Arrow files of the ``train`` split of hub dataset ``repo`` at ``commit`` (``datasets.load_dataset``);
    ``label`` names the source in an error (default ``--source REPO``)."""
    import datasets

    from sftpack.base.hub import deadline, within_deadline

    try:
        dataset = within_deadline(lambda: datasets.load_dataset(repo, revision=commit, split=SPLIT), deadline(3600),
                                  label or f"--source {repo}")
    except UsageError:
        raise
    except Exception as e:  # datasets raises many kinds (network, cache, schema); each is one line here
        raise UsageError(f"{label or '--source ' + repo}: loading {repo}@{commit} failed ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:200] if str(e) else ''})") from e
    return [f["filename"] for f in dataset.cache_files]
