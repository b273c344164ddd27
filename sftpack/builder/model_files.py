"""A build record's way back to the files it was built with when its model is no shipped profile: the profile file
and its rule (path and sha256) and the ``--tokenizer`` directory, so that ``verify --rebuild``, ``inspect``,
``diff`` and the rollout find them from the record alone, and refuse a profile or rule changed since."""

from __future__ import annotations

from pathlib import Path

from sftpack.base.errors import UsageError
from sftpack.base.hashing import file_sha256


def model_files(profile, tokenizer: str | None) -> dict | None:
    """What the record keeps of a profile outside the package (None for a shipped one: its name finds it)."""
    from sftpack.families.profiles import INFERRED, resource_dir

    if profile.path.parent == resource_dir("configs").resolve() or profile.path.parent == resource_dir("configs"):
        return None
    files = {"profile": {"path": str(profile.path), "sha256": file_sha256(profile.path).sha256}}
    if profile.loss_mask != INFERRED and profile.rule.path is not None:
        rule = Path(profile.rule.path).resolve()
        files["rule"] = {"path": str(rule), "sha256": file_sha256(rule).sha256}
    if tokenizer:
        files["tokenizer"] = str(Path(tokenizer).resolve())
    return files


def model_of(model: str | None, files, where: str) -> tuple[str | None, str | None]:
    """(the ``--model`` to rebuild or decode with, the ``--tokenizer`` directory or None) for a record naming
    ``model`` and keeping ``files``; one line when the profile or its rule is gone or changed."""
    if not isinstance(files, dict) or not isinstance(files.get("profile"), dict):
        return model, None
    for kind in ("profile", "rule"):
        entry = files.get(kind)
        if not isinstance(entry, dict):
            continue
        path = Path(str(entry.get("path")))
        if not path.is_file():
            raise UsageError(f"{where}: the {kind} file it was built with, {path}, is gone: pass --model PATH")
        if file_sha256(path).sha256 != entry.get("sha256"):
            raise UsageError(f"{where}: the {kind} file it was built with, {path}, changed since (sha256 "
                             f"{str(entry.get('sha256'))[:16]}... then): pass --model PATH")
    tokenizer = files.get("tokenizer")
    tokenizer = tokenizer if isinstance(tokenizer, str) and Path(tokenizer).exists() else None
    return str(files["profile"]["path"]), tokenizer
