"""The conversations as Arrow record batches, a Parquet file or an Arrow IPC file."""

from __future__ import annotations

import os
from typing import Iterator

import pyarrow as pa

from .conversation import synthetic_conversations

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("messages", pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))),
        ("source", pa.string()),
    ]
)


def record_batch(rows: list[dict]) -> pa.RecordBatch:
    ids, sources, contents, roles, offsets = [], [], [], [], [0]
    for row in rows:
        ids.append(row["id"])
        sources.append(row["source"])
        for m in row["messages"]:
            contents.append(m["content"])
            roles.append(m["role"])
        offsets.append(len(contents))
    struct = pa.StructArray.from_arrays(
        [pa.array(contents, pa.string()), pa.array(roles, pa.string())], fields=list(SCHEMA.field("messages").type.value_type)
    )
    messages = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct, type=SCHEMA.field("messages").type)
    return pa.RecordBatch.from_arrays([pa.array(ids, pa.string()), messages, pa.array(sources, pa.string())], schema=SCHEMA)


def synthetic_batches(n: int, seed: int = 0, batch_size: int = 4096) -> Iterator[pa.RecordBatch]:
    """The conversations of :func:`synthetic_conversations` as Arrow record batches of ``batch_size`` rows."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    rows: list[dict] = []
    for row in synthetic_conversations(n, seed):
        rows.append(row)
        if len(rows) == batch_size:
            yield record_batch(rows)
            rows = []
    if rows:
        yield record_batch(rows)


# Fixed writer settings: the same call gives byte-identical files (for a given pyarrow version).
PARQUET_OPTIONS = dict(
    version="2.6",
    compression="zstd",
    compression_level=3,
    # Dictionary encoding and min/max statistics only where they pay: low-cardinality columns and ids (the
    # statistics of a free-text column would copy whole messages into the footer).
    use_dictionary=["source", "messages.list.element.role"],
    write_statistics=["id", "source", "messages.list.element.role"],
    data_page_version="1.0",
    data_page_size=1 << 20,
    write_batch_size=1024,
    dictionary_pagesize_limit=1 << 20,
    use_compliant_nested_type=True,
    store_schema=True,
    write_page_index=False,
    write_page_checksum=False,
)


def write_synthetic_parquet(path, n: int, seed: int = 0, row_group_size: int = 4096) -> None:
    """Write ``n`` synthetic conversations to a Parquet file, one row group per ``row_group_size`` rows.

    Streams one row group at a time (memory stays bounded for millions of rows) with the fixed settings of
    ``PARQUET_OPTIONS`` (zstd level 3, no timestamps), so the same call gives byte-identical files with the same
    pyarrow version. The file appears under ``path`` only once complete.
    """
    import pyarrow.parquet as pq

    if row_group_size < 1:
        raise ValueError(f"row_group_size must be >= 1, got {row_group_size}")
    tmp = f"{os.fspath(path)}.tmp"
    try:
        with pq.ParquetWriter(tmp, SCHEMA, **PARQUET_OPTIONS) as writer:
            for batch in synthetic_batches(n, seed, row_group_size):
                writer.write_table(pa.Table.from_batches([batch]), row_group_size=row_group_size)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_synthetic_arrow(path, n: int, seed: int = 0, batch_size: int = 4096) -> None:
    """Write ``n`` synthetic conversations to an uncompressed Arrow IPC file (memory-mappable with
    ``pa.memory_map``), streaming one record batch of ``batch_size`` rows at a time."""
    tmp = f"{os.fspath(path)}.tmp"
    try:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
            for batch in synthetic_batches(n, seed, batch_size):
                writer.write_batch(batch)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
