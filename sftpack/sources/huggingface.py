"""Sources a Hugging Face user already has: a ``datasets`` ``save_to_disk`` directory, and a hub dataset id at a
revision (``ORG/NAME@REVISION``), read through ``datasets`` itself (``load_from_disk``, ``load_dataset(...,
revision=)``) and then straight from the Arrow files it leaves, memory-mapped.

A hub id's revision is resolved to a commit id before loading, so the build record names the exact commit
whichever branch or tag was given.
"""

from __future__ import annotations

import json
import re
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


def saved_split(path: Path) -> Path:
    """The directory holding the ``train`` split of a saved ``DatasetDict`` (or its only split); ``path`` itself
    for a saved ``Dataset``."""
    if (path / "state.json").is_file():
        return path
    try:
        splits = json.loads((path / "dataset_dict.json").read_text(encoding="utf-8"))["splits"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"--source {path}: dataset_dict.json is unreadable ({type(e).__name__}: {e})") from e
    if SPLIT in splits:
        return path / SPLIT
    if len(splits) == 1:
        return path / splits[0]
    raise UsageError(f"--source {path}: a saved DatasetDict with splits {', '.join(splits)} and no {SPLIT!r}: "
                     "pass the split's directory (--source PATH/SPLIT)")


def load_saved(path: Path) -> list[str]:
    """The Arrow files of a saved dataset (``datasets.load_from_disk``), in order."""
    import datasets

    directory = saved_split(path)
    try:
        dataset = datasets.load_from_disk(str(directory))
    except Exception as e:  # datasets raises FileNotFoundError, ValueError, its own errors: one line each
        raise UsageError(f"--source {path}: not a loadable save_to_disk directory ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:200] if str(e) else ''})") from e
    if not isinstance(dataset, datasets.Dataset):
        raise UsageError(f"--source {path}: expected one split, got {type(dataset).__name__}")
    return [f["filename"] for f in dataset.cache_files]


def resolve_revision(repo: str, revision: str | None) -> str:
    """The commit id ``revision`` (default: main) of dataset ``repo`` on the hub."""
    from huggingface_hub import HfApi

    try:
        info = HfApi().dataset_info(repo, revision=revision or "main")
    except Exception as e:  # the hub's HTTP errors, connection errors: one line
        raise UsageError(f"--source {repo}@{revision or 'main'}: not found on the hub ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:200] if str(e) else ''})") from e
    return info.sha


def load_hub(repo: str, commit: str, label: str | None = None) -> list[str]:
    """The Arrow files of the ``train`` split of hub dataset ``repo`` at ``commit`` (``datasets.load_dataset``);
    ``label`` names the source in an error (default ``--source REPO``)."""
    import datasets

    try:
        dataset = datasets.load_dataset(repo, revision=commit, split=SPLIT)
    except Exception as e:  # datasets raises many kinds (network, cache, schema); each is one line here
        raise UsageError(f"{label or '--source ' + repo}: loading {repo}@{commit} failed ({type(e).__name__}: "
                         f"{str(e).splitlines()[0][:200] if str(e) else ''})") from e
    return [f["filename"] for f in dataset.cache_files]
