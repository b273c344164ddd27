"""sftpack's own source readers, one small class per kind: each turns a :class:`SourceRequest` into the
:class:`Source` that reads it (the Arrow tables of :mod:`~sftpack.sources.table`, the lazy JSONL file of
:mod:`~sftpack.sources.jsonl`, rows in memory). :mod:`sftpack.sources.registry` names them."""

from __future__ import annotations

import json
from functools import lru_cache

from sftpack.base import hub
from sftpack.base.bundled import SAMPLE_PATH
from sftpack.base.errors import UsageError
from sftpack.base.hashing import file_sha256
from sftpack.sources.base import Source, SourceInfo, SourceReader, SourceRequest, check_plain_file, check_utf8
from sftpack.sources.huggingface import hub_id, load_hub, load_saved, resolve_revision
from sftpack.sources.jsonl import JsonLinesSource
from sftpack.sources.memory import ListSource
from sftpack.sources.pins import TULU_REVISION
from sftpack.sources.table import (TableSource, open_hub, open_parquet, quiet_datasets, read_arrow, read_arrow_files,
                                   sample_table)


@lru_cache(maxsize=1)
def sample_sha256() -> str:
    """The bundled sample's sha256, which identifies it in a build's record (hashed once per process)."""
    return file_sha256(SAMPLE_PATH).sha256


class TuluHub(SourceReader):
    """``--source hub``: the Tulu 3 mixture at the pinned revision (or ``--dataset-revision``)."""

    def open(self, request: SourceRequest) -> Source:
        return open_hub(request.revision or TULU_REVISION)


class Sample(SourceReader):
    """``--source sample``: the bundled synthetic sample."""

    def open(self, request: SourceRequest) -> Source:
        return TableSource(sample_table(), SourceInfo("sftpack synthetic Tulu-schema sample", "sample",
                                                      sha256=sample_sha256()))


class HubDataset(SourceReader):
    """``ORG/NAME[@REVISION]``: a hub dataset's ``train`` split, its revision resolved to a commit first."""

    def open(self, request: SourceRequest) -> Source:
        repo, revision = hub_id(request.spec)
        if not hub.hub_reachable():
            raise UsageError(f"--source {repo}: cannot reach the Hugging Face hub to load it (or HF_HUB_OFFLINE is set)")
        commit = resolve_revision(repo, revision or request.revision)
        with quiet_datasets():
            files = load_hub(repo, commit)
        table, maps = read_arrow_files(files)
        return TableSource(table, request.info(repo, "hub-dataset", commit), maps)


class SavedDataset(SourceReader):
    """A ``datasets`` ``save_to_disk`` directory (a ``Dataset``, or a ``DatasetDict``'s ``train`` split)."""

    def open(self, request: SourceRequest) -> Source:
        table, maps = read_arrow_files(load_saved(request.path))
        return TableSource(table, request.info(request.path.name, "save_to_disk"), maps)


class ParquetShards(SourceReader):
    """A directory of ``.parquet`` shards, read in name order as one table."""

    def open(self, request: SourceRequest) -> Source:
        shards = sorted(p for p in request.path.glob("*.parquet") if not p.name.startswith((".", "_")))
        if not shards:
            raise UsageError(f"--source {request.spec}: the directory holds no .parquet files (nor a save_to_disk "
                             "dataset)")
        for shard in shards:  # a FIFO among the shards would hang the reader as one given alone would
            check_plain_file(shard, str(shard))
        return open_parquet(shards, request.info(request.path.name, "file"))


class Parquet(SourceReader):
    def open(self, request: SourceRequest) -> Source:
        return open_parquet([request.path], request.info(request.path.name, "file"))


class JsonLines(SourceReader):
    def open(self, request: SourceRequest) -> Source:
        check_utf8(request.path, request.spec)
        return JsonLinesSource(request.path, request.info(request.path.name, "file"))


class JsonList(SourceReader):
    """A ``.json`` file holding a list of rows, read into memory."""

    def open(self, request: SourceRequest) -> Source:
        check_utf8(request.path, request.spec)
        with open(request.path, encoding="utf-8-sig") as f:
            rows = json.load(f)
        if not isinstance(rows, list):
            raise UsageError(f"--source {request.spec}: a .json source must hold a list of rows")
        return ListSource(rows, request.info(request.path.name, "file"))


class ArrowFile(SourceReader):
    """An Arrow IPC file or stream, memory-mapped."""

    def open(self, request: SourceRequest) -> Source:
        table, mapped = read_arrow(request.path)
        return TableSource(table, request.info(request.path.name, "file"), [mapped])
