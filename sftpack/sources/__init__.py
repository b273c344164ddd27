"""Read source conversations in Tulu 3's schema (``id``, ``messages``, ``source``) with random access.

The build walks a seeded permutation of the whole source, so a source must answer ``len()`` and
``take(indices)``. Large sources stay on disk (memory-mapped Arrow, or line offsets into a JSONL file): only
the conversations the rows need are ever read.

    >>> src = open_source("sample")
    >>> conv_id, messages = src.take([0])[0]
    >>> len(src), messages[0]["role"] in ("system", "user")
    (3000, True)
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from sftpack.base.bundled import SAMPLE_PATH
from sftpack.base.errors import UsageError
from sftpack.sources.base import (
    RESERVED_ID_PREFIX,
    RowError,
    Source,
    SourceChanged,
    SourceInfo,
    generated_id,
    source_id,
    wide_encoding,
)
from sftpack.sources.huggingface import hub_id, is_saved_dataset, load_hub, load_saved, resolve_revision
from sftpack.sources.jsonl import JsonLinesSource
from sftpack.sources.memory import ListSource, source_from_rows
from sftpack.sources.pins import TULU_REVISION
from sftpack.sources.sharegpt import COLUMN as SHAREGPT_COLUMN, ROLE_MAP, missing_column
from sftpack.sources.table import (TableSource, open_hub, open_parquet, quiet_datasets, read_arrow,
                                   read_arrow_files)

__all__ = ["JsonLinesSource", "ListSource", "RESERVED_ID_PREFIX", "RowError", "SAMPLE_PATH", "Source", "SourceChanged",
           "SourceInfo", "TableSource", "generated_id", "open_source", "source_from_rows", "source_id"]


def open_source(spec: str = "hub", *, revision: str | None = None, sharegpt: bool = False) -> Source:
    """``hub`` (the Tulu 3 mixture at ``revision``, default the pinned one), ``sample`` (bundled synthetic sample),
    a path (``.parquet``, ``.jsonl``, ``.json``, ``.arrow``, a directory of parquet shards, a ``datasets``
    ``save_to_disk`` directory), or a hub dataset id ``ORG/NAME[@REVISION]`` (``revision`` when no ``@``; default
    main). ``sharegpt``: the rows hold ShareGPT's ``conversations: [{from, value}]``, read as messages."""
    shape = {"shape": "sharegpt", "roles": dict(ROLE_MAP)} if sharegpt else {}
    if spec == "hub":
        return open_hub(revision or TULU_REVISION)
    if spec == "sample":
        return TableSource(pq.read_table(SAMPLE_PATH), SourceInfo("sftpack synthetic Tulu-schema sample", "sample"))
    path = Path(spec)
    if not path.exists():
        hub = hub_id(spec)
        if hub is None:
            raise UsageError(f"--source {spec}: no such file or directory (use hub, sample, a path, or a hub dataset "
                             "id ORG/NAME[@REVISION])")
        return _open_hub_dataset(hub[0], hub[1] or revision, shape)
    _check_plain_file(path, spec)
    try:
        source = _open_path(spec, path, shape)
    except UsageError:
        raise
    except (OSError, ValueError, RecursionError, pa.ArrowException) as e:  # RecursionError: a deeply nested .json
        raise UsageError(f"--source {spec}: cannot read it ({type(e).__name__}: {str(e)[:300]})") from e
    _check_first_row(source, spec)
    return source


def _open_path(spec: str, path: Path, shape: dict) -> Source:
    info = SourceInfo(path.name, "file", **shape)
    if is_saved_dataset(path):
        table, maps = read_arrow_files(load_saved(path))
        return TableSource(table, SourceInfo(path.name, "save_to_disk", **shape), maps)
    if path.is_dir():
        shards = sorted(p for p in path.glob("*.parquet") if not p.name.startswith((".", "_")))
        if not shards:
            raise UsageError(f"--source {spec}: the directory holds no .parquet files (nor a save_to_disk dataset)")
        for shard in shards:  # a FIFO among the shards would hang the reader as one given alone would
            _check_plain_file(shard, str(shard))
        return open_parquet(shards, info)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return open_parquet([path], info)
    if suffix in (".jsonl", ".json"):
        _check_utf8(path, spec)
    if suffix == ".jsonl":
        return JsonLinesSource(path, info)
    if suffix == ".json":
        with open(path, encoding="utf-8-sig") as f:
            rows = json.load(f)
        if not isinstance(rows, list):
            raise UsageError(f"--source {spec}: a .json source must hold a list of rows")
        return ListSource(rows, info)
    if suffix == ".arrow":
        table, mapped = read_arrow(path)
        return TableSource(table, info, [mapped])
    raise UsageError(f"--source {spec}: unsupported file type (use .parquet, .jsonl, .json, .arrow or a directory)")


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


def _open_hub_dataset(repo: str, revision: str | None, shape: dict) -> Source:
    from sftpack.base import hub

    if not hub.hub_reachable():
        raise UsageError(f"--source {repo}: cannot reach the Hugging Face hub to load it (or HF_HUB_OFFLINE is set)")
    commit = resolve_revision(repo, revision)
    with quiet_datasets():
        files = load_hub(repo, commit)
    table, maps = read_arrow_files(files)
    return TableSource(table, SourceInfo(repo, "hub-dataset", commit, **shape), maps)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISBLK, "a block device"))


def _check_plain_file(path: Path, spec: str) -> None:
    """Refuse, before opening it, a source that is neither a regular file nor a directory: a build reads its
    source more than once (a FIFO opened a second time waits for a writer that never comes)."""
    mode = path.stat().st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a file")
    raise UsageError(f"--source {spec}: not a regular file ({kind}); a build reads its source more than once, so "
                     "save it to a file first")


def _check_utf8(path: Path, spec: str) -> None:
    with open(path, "rb") as f:
        encoding = wide_encoding(f.read(4))
    if encoding is not None:
        raise UsageError(f"--source {spec}: the file is {encoding} text; sftpack reads JSON as UTF-8: convert it "
                         f"(iconv -f {encoding} -t UTF-8)")
