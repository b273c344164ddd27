"""Read source conversations in Tulu 3's schema (``id``, ``messages``, ``source``) with random access.

The build walks a seeded permutation of the whole source, so a source must answer ``len()`` and
``take(indices)``. Large sources stay on disk (memory-mapped Arrow, or line offsets into a JSONL file): only
the conversations the rows need are ever read. Which reader opens a ``--source`` is the registry's
(:mod:`sftpack.sources.registry`): by its word (``hub``, ``sample``), by what the path is, by the file's suffix.

    >>> src = open_source("sample")
    >>> conv_id, messages = src.take([0])[0]
    >>> len(src), messages[0]["role"] in ("system", "user")
    (3000, True)
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pyarrow as pa

from sftpack.base.aside import Aside
from sftpack.base.bundled import SAMPLE_PATH
from sftpack.base.errors import UsageError
from sftpack.sources.base import (
    RESERVED_ID_PREFIX,
    RowError,
    Source,
    SourceChanged,
    SourceInfo,
    SourceReader,
    SourceRequest,
    check_plain_file,
    generated_id,
    local_sha256,
    source_id,
)
from sftpack.sources.huggingface import hub_id
from sftpack.sources.jsonl import JsonLinesSource
from sftpack.sources.memory import ListSource, source_from_rows
from sftpack.sources.registry import (HUB_DATASET, SOURCE_READERS, get_source_reader, is_word, path_kind,
                                      register_source_reader)
from sftpack.sources.sharegpt import COLUMN as SHAREGPT_COLUMN, missing_column
from sftpack.sources.table import TableSource
from sftpack.sources.remote import fetch, is_url

__all__ = ["JsonLinesSource", "ListSource", "RESERVED_ID_PREFIX", "RowError", "SAMPLE_PATH", "SOURCE_READERS",
           "Source", "SourceChanged", "SourceInfo", "SourceReader", "SourceRequest", "TableSource", "generated_id",
           "open_source", "register_source_reader", "source_from_rows", "source_id"]


# hashing 32 MiB takes about as long as forking a process that holds a loaded tokenizer (0.02 s)
ASIDE_FROM_BYTES = 32 << 20


def open_source(spec: str = "hub", *, revision: str | None = None, sharegpt: bool = False,
                hash_aside: bool = False) -> Source:
    """``hub`` (the Tulu 3 mixture at ``revision``, default the pinned one), ``sample`` (bundled synthetic sample),
    a path (``.parquet``, ``.jsonl``, ``.json``, ``.arrow``, a directory of parquet shards, a ``datasets``
    ``save_to_disk`` directory; any kind in ``SOURCE_READERS``), the URL of such a file or directory of shards
    (``s3://``, ``gs://``, ``hf://``: :mod:`sftpack.sources.remote`), or a hub dataset id ``ORG/NAME[@REVISION]``
    (``revision`` when no ``@``; default main). ``sharegpt``: the rows hold ShareGPT's ``conversations: [{from,
    value}]``, read as messages. ``hash_aside``: a local source of ASIDE_FROM_BYTES or more has its ``info.sha256``
    computed in a forked process while the caller goes on, waited for when first read
    (:class:`sftpack.base.aside.Aside`)."""
    request = SourceRequest(spec, revision, sharegpt)
    if is_word(spec):
        return get_source_reader(spec)().open(request)
    if is_url(spec):  # object storage: this machine's copy, recorded by its URL and version
        local, version = fetch(spec)
        source = open_source(str(local), sharegpt=sharegpt)
        source.info = request.info(spec, "url", version)
        return source
    path = Path(spec)
    if not path.exists():
        if hub_id(spec) is None:
            raise UsageError(f"--source {spec}: no such file or directory (use hub, sample, a path, or a hub dataset "
                             "id ORG/NAME[@REVISION])")
        return get_source_reader(HUB_DATASET)().open(request)
    check_plain_file(path, spec)
    reader = get_source_reader(path_kind(path), spec)
    try:
        source = reader().open(request)
    except UsageError:
        raise
    except (OSError, ValueError, RecursionError, pa.ArrowException) as e:  # RecursionError: a deeply nested .json
        raise UsageError(f"--source {spec}: cannot read it ({type(e).__name__}: {str(e)[:300]})") from e
    _check_first_row(source, spec)
    if source.info.sha256 is None:  # what identifies a local source in its build's record
        aside = hash_aside and _size(path) >= ASIDE_FROM_BYTES
        source.info.sha256 = Aside(partial(local_sha256, path)) if aside else local_sha256(path)
    return source


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size


def _check_first_row(source: Source, spec: str) -> None:
    """A JSON source whose first row lacks its shape's column but has the other shape's: one line now, rather
    than every row skipped later."""
    keys = source.first_keys()
    if keys is None:
        return
    sharegpt = source.info.shape == "sharegpt"
    wanted, other = (SHAREGPT_COLUMN, "messages") if sharegpt else ("messages", SHAREGPT_COLUMN)
    if wanted not in keys and other in keys:
        raise UsageError(missing_column(spec, keys, sharegpt))
