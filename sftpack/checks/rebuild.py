"""``sftpack verify --rebuild``: build the rows a declaration describes and verify them."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from sftpack.base.errors import UsageError
from sftpack.builder import interrupts
from sftpack.checks.identity import built_as
from sftpack.checks.verify import Check, rows_mismatch, verify_rows
from sftpack.rows.formats import get_row_format


def verify_rebuild(declared: dict, source: str | None = None, tokenizer: str | None = None,
                   workers: int | None = None, progress: bool | None = None, keep: str | Path | None = None,
                   on_mismatch=None, model: str | None = None) -> list[Check]:
    """Build the rows ``declared`` describes into a temporary directory (or ``keep``) and verify them, including
    the tokenizer files used against the sha256s in the declaration. ``on_mismatch(parquet_path, checks)`` is called
    while the rebuilt rows still exist when their rows_sha256 does not match (``verify --against``)."""
    from sftpack.builder.config import BuildConfig
    from sftpack.builder.pipeline import build

    if model is None:
        model = declared.get("model")
        if declared.get("kind") == "build record":  # a profile file outside the package: the record keeps where it is
            model, kept = _model_files_of(declared["path"], model)
            tokenizer = tokenizer or kept
    if not model:
        raise UsageError(f"{declared['path']}: names no model (top-level `model:`), so it cannot be rebuilt")
    missing = [k for k in ("name", "rows", "row_tokens", "seed") if k not in declared]
    if missing:
        raise UsageError(f"{declared['path']}: cannot rebuild without {', '.join(missing)}")
    dataset = declared.get("dataset") or {}
    source = _source_for(declared, dataset, source)
    revision = dataset.get("revision") if source == "hub" and dataset.get("revision") else None
    rows_format = declared.get("rows_format") or "parquet"  # rebuilt in the format the declared file is in
    suffix = get_row_format(rows_format).suffix
    if keep:
        _check_keep(Path(keep), declared["name"], suffix)
    with tempfile.TemporaryDirectory(prefix="sftpack-verify-") as tmp:
        out = Path(keep) if keep else Path(tmp)
        config = BuildConfig(
            model=model, source=source, tokenizer=tokenizer, rows=declared["rows"], row_tokens=declared["row_tokens"],
            seed=declared["seed"], out=str(out), name=_explicit_name(declared), workers=workers, overwrite=False,
            dataset_revision=revision, sharegpt=dataset.get("shape") == "sharegpt",
            progress=sys.stderr.isatty() if progress is None else progress, format=rows_format)
        rows_file = build(config).paths.parquet
        interrupts.reset()  # the rebuild is done; a Ctrl-C from here interrupts the checking
        checks = verify_rows(declared, rows_file)
        if on_mismatch is not None and rows_mismatch(checks):
            on_mismatch(rows_file, checks)
    checks.insert(0, Check("rebuilt from", f"model {model}", f"--source {source}" + (f" --tokenizer {tokenizer}" if tokenizer else ""), None,
                           f"rows written to {keep}" if keep else "in a temporary directory, removed afterwards"))
    return checks


def _model_files_of(path: str, model: str | None) -> tuple[str | None, str | None]:
    from sftpack.base.safe_yaml import load_file
    from sftpack.builder.model_files import model_of

    data = load_file(Path(path))
    return model_of(model, data.get("model_files") if isinstance(data, dict) else None, path)


def _check_keep(keep: Path, name: str, suffix: str) -> None:
    """``--keep DIR`` never replaces files: refuse a directory that already holds the rows' files (verify has no
    --overwrite to give)."""
    held = sorted(f.name for f in keep.glob(f"{name}*") if f.name.endswith((suffix, ".build.yaml")))
    if held:
        raise UsageError(f"--keep {keep}: already holds {', '.join(held)}; verify --rebuild never replaces files: "
                         "give a new or empty directory, or remove them")


def _explicit_name(declared: dict) -> str | None:
    """``--name`` for the rebuild: none when the declared name is the one the build derives by itself (then the
    files are named as the declared build named them), else the declared name."""
    stated = built_as(declared["name"])
    if stated is not None and (stated.seed, stated.row_tokens) == (declared["seed"], declared["row_tokens"]):
        return None
    return declared["name"]


def _rebuild_from(declared: dict, hub: bool) -> str:
    """What rebuilds the declared rows: the hub, or a local copy of the same dataset."""
    if hub:
        return "run verify --rebuild where the hub is reachable, or add --source PATH (a local copy of that revision)"
    return "add --source PATH (the same file)"


def _source_for(declared: dict, dataset: dict, source: str | None) -> str:
    """The ``--source`` that rebuilds the declared rows: the one given, else the one the declaration names. The
    bundled sample never rebuilds rows that came from another dataset: refused before anything is built."""
    from sftpack.sources.pins import TULU_REPO

    from sftpack.checks.identity import dataset_text
    from sftpack.base.hub import hub_reachable

    origin = dataset.get("source")
    where = dataset_text(dataset) if origin else "the recipe's dataset"
    hub = origin not in ("sample", "file", "save_to_disk", "memory", "url", None)
    if source == "sample" and origin != "sample":
        raise UsageError(f"{declared['path']}: its {declared['rows']:,} rows come from {where}; --source sample (the "
                         "bundled 3,000 synthetic conversations) cannot rebuild them: " + _rebuild_from(declared, hub))
    if source is not None:
        return source
    if hub and not hub_reachable():
        raise UsageError(f"{declared['path']}: its rows come from {where} on the Hugging Face hub, unreachable from "
                         "here (or HF_HUB_OFFLINE is set): " + _rebuild_from(declared, hub))
    if origin == TULU_REPO:
        return "hub"
    if origin == "sample":
        return "sample"
    if origin == "hub-dataset" and dataset.get("name"):
        return f"{dataset['name']}@{dataset['revision']}" if dataset.get("revision") else dataset["name"]
    if origin == "url" and dataset.get("name"):  # object storage: the same URL
        return dataset["name"]
    raise UsageError(
        f"{declared['path']}: the rows were built from {dataset.get('name') or origin or 'an unnamed source'}; "
        "pass --source PATH (the same file) to rebuild them"
    )
