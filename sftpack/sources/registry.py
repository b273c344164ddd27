"""The source readers sftpack knows, by kind: what ``--source`` opens. A kind is a word ``--source`` takes as it is
(``hub``, ``sample``), a file suffix (``.jsonl``), or what sftpack recognises a path or an id to be (``save_to_disk``,
``parquet-shards``, ``hub-dataset``); each names a :class:`~sftpack.sources.base.SourceReader` class.

    >>> path_kind(Path("conversations.JSONL"))
    '.jsonl'
    >>> get_source_reader(".csv")
    Traceback (most recent call last):
    ...
    sftpack.base.refs.UnknownName: unknown source kind '.csv'; known: .arrow, .json, .jsonl, .parquet, hub, hub-dataset, parquet-shards, sample, save_to_disk
"""

from __future__ import annotations

from pathlib import Path

from sftpack.base.refs import UnknownName
from sftpack.sources import readers
from sftpack.sources.base import SourceReader
from sftpack.sources.huggingface import is_saved_dataset

SAVED, SHARDS, HUB_DATASET = "save_to_disk", "parquet-shards", "hub-dataset"

SOURCE_READERS: dict[str, type[SourceReader]] = {
    "hub": readers.TuluHub,
    "sample": readers.Sample,
    HUB_DATASET: readers.HubDataset,
    SAVED: readers.SavedDataset,
    SHARDS: readers.ParquetShards,
    ".parquet": readers.Parquet,
    ".jsonl": readers.JsonLines,
    ".json": readers.JsonList,
    ".arrow": readers.ArrowFile,
}


def get_source_reader(kind: str, spec: str | None = None) -> type[SourceReader]:
    try:
        return SOURCE_READERS[kind]
    except KeyError:
        where = f"--source {spec}: " if spec is not None else ""
        what = repr(kind) if kind else "'' (a file without a suffix)"
        raise UnknownName(f"{where}unknown source kind {what}; known: {', '.join(sorted(SOURCE_READERS))}") from None


def register_source_reader(kind: str, reader: type[SourceReader]) -> None:
    """Add a reader at run time (a plugin): ``kind`` a word ``--source`` takes, or a file suffix (``.csv``)."""
    if kind in SOURCE_READERS:
        raise ValueError(f"Duplicate source kind {kind!r}")
    if not (isinstance(reader, type) and issubclass(reader, SourceReader)):
        raise TypeError(f"source kind {kind!r}: {reader!r} is not a SourceReader class")
    if kind.startswith(".") and kind != kind.lower():
        raise ValueError(f"source kind {kind!r}: a suffix is registered in lower case (it matches any case)")
    SOURCE_READERS[kind] = reader


def is_word(spec: str) -> bool:
    """Whether ``--source spec`` names a kind by its word (``hub``, ``sample``, a plugin's word), not a path."""
    return spec in SOURCE_READERS and not spec.startswith(".") and spec not in (SAVED, SHARDS, HUB_DATASET)


def path_kind(path: Path) -> str:
    """The kind of an existing path: a ``save_to_disk`` directory, another directory (parquet shards), else the
    file's suffix in lower case."""
    if is_saved_dataset(path):
        return SAVED
    if path.is_dir():
        return SHARDS
    return path.suffix.lower()
