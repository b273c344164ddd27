"""One parquet file from row groups compressed in parallel, byte for byte the file one writer would write.

pyarrow's ``ParquetWriter`` compresses a file's pages in the calling thread, one after another: at 16 build
workers, zstd over the ``tokens`` column was the build's serial bottleneck. Here each
row group is written as a standalone in-memory parquet file (:func:`part`, in any thread: pyarrow releases the GIL
while it encodes and compresses), and :class:`Stitcher` appends the parts' row-group bytes to the output and writes
one footer: the empty file's footer with every part's row-group metadata appended, its file offsets shifted to
where the bytes landed. The footer is Thrift compact protocol; :mod:`sftpack.rows.thrift_compact` reads and
writes it generically (fields in their order, every value kept), so that nothing else in it changes.

    >>> import pyarrow as pa, pyarrow.parquet as pq, io
    >>> schema = pa.schema([pa.field("x", pa.int32())])
    >>> out = io.BytesIO(); s = Stitcher(out, schema, {})
    >>> for k in range(3): s.add(part(pa.table({"x": pa.array([k, k + 1], pa.int32())}), schema, {}))
    >>> s.close()
    >>> one = io.BytesIO()
    >>> with pq.ParquetWriter(one, schema) as w:
    ...     for k in range(3): w.write_table(pa.table({"x": pa.array([k, k + 1], pa.int32())}))
    >>> out.getvalue() == one.getvalue()
    True
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.parquet as pq

from sftpack.rows.thrift_compact import (
    STRUCT,
    Reader,
    encode_struct,
    field_at,
    list_header_at,
    parse_struct,
    skip,
    write_zigzag,
    zigzag_at,
)

MAGIC = b"PAR1"

# Parquet's FileMetaData -> RowGroup -> ColumnChunk -> ColumnMetaData field ids (parquet.thrift)
_FILE_SCHEMA, _FILE_NUM_ROWS, _FILE_ROW_GROUPS = 2, 3, 4
_GROUP_COLUMNS, _GROUP_NUM_ROWS, _GROUP_FILE_OFFSET, _GROUP_ORDINAL = 1, 3, 5, 7
_CHUNK_FILE_OFFSET, _CHUNK_META = 2, 3
_META_OFFSETS = (9, 10, 11)  # data_page_offset, index_page_offset, dictionary_page_offset
_CHUNK_OTHER_OFFSETS = (4, 6)  # offset_index_offset, column_index_offset (absent here: no page index)


def part(table: pa.Table, schema: pa.Schema, options: dict) -> pa.Buffer:
    """``table`` as a standalone parquet file of one row group, in memory."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, **options) as writer:
        writer.write_table(table, row_group_size=max(table.num_rows, 1))
    return sink.getvalue()


class Stitcher:
    """Writes ``PAR1``, then each added part's row groups, then the merged footer, to ``sink`` (``write()``)."""

    def __init__(self, sink, schema: pa.Schema, options: dict):
        self.sink = sink
        empty = pa.BufferOutputStream()
        pq.ParquetWriter(empty, schema, **options).close()
        self._template = parse_struct(Reader(footer_of(empty.getvalue().to_pybytes())))
        self._groups: list[bytes] = []
        self._known = b""  # the footer's version and schema fields, as the last part had them
        self.rows = 0
        self.position = 0
        self._write(MAGIC)

    def _write(self, data) -> None:
        self.sink.write(data)
        self.position += len(data)

    def add(self, data: pa.Buffer) -> None:
        data = memoryview(data)
        footer = bytes(footer_of(data))
        body = data[len(MAGIC) : len(data) - len(footer) - 8]
        shift = self.position - len(MAGIC)
        groups, schema_end = _row_groups(footer, self._known)
        self._known = footer[:schema_end]
        for start, _ in groups:
            out = bytearray()
            self.rows += _copy_group(footer, start, out, shift, len(self._groups))
            self._groups.append(bytes(out))
        self._write(body)

    def close(self) -> None:
        # The empty file's footer, with the row count and every part's (already encoded, shifted) row groups.
        replace = {_FILE_NUM_ROWS: self.rows, _FILE_ROW_GROUPS: (STRUCT, self._groups)}
        out = encode_struct([(fid, ftype, replace.get(fid, value)) for fid, ftype, value in self._template])
        self._write(out)
        self._write(struct.pack("<I", len(out)) + MAGIC)


def footer_of(data) -> memoryview:
    """The footer bytes of a parquet file's ``data`` (between the last row group and the length and magic)."""
    data = memoryview(data)
    if bytes(data[-4:]) != MAGIC:
        raise ValueError("not a parquet file")
    (size,) = struct.unpack("<I", data[-8:-4])
    return data[len(data) - 8 - size : len(data) - 8]


# ---------------------------------------------------------------------------------------------------------
# The row groups of a part, copied with their offsets shifted, without decoding the rest: a full parse and
# re-encode of every part held the GIL ~9% of a 16-worker build.


def _row_groups(footer: bytes, known: bytes = b"") -> tuple[list[tuple[int, int]], int]:
    """The byte ranges of FileMetaData.row_groups' elements in ``footer``, and where the fields before them (the
    version and the schema, the same in every part) end. ``known``: those fields' bytes in an earlier part; when
    ``footer`` starts with them, they are not walked again."""
    pos, last = (len(known), _FILE_SCHEMA) if known and footer.startswith(known) else (0, 0)
    schema_end = pos
    while (field := field_at(footer, pos, last)) is not None:
        last, ftype, value_at = field
        if last > _FILE_SCHEMA and not schema_end:
            schema_end = pos
        if last == _FILE_ROW_GROUPS:
            size, etype, pos = list_header_at(footer, value_at)
            groups = []
            for _ in range(size):
                end = skip(footer, pos, etype)
                groups.append((pos, end))
                pos = end
            return groups, schema_end
        pos = skip(footer, value_at, ftype)
    return [], schema_end


def _copy_group(src: bytes, pos: int, out: bytearray, shift: int, ordinal: int) -> int:
    """RowGroup at ``src[pos:]`` into ``out``: file_offset and its column chunks' offsets shifted, its ordinal
    set; returns its num_rows."""
    rows = []
    meta = {fid: _shifted(shift) for fid in _META_OFFSETS}
    chunk = {_CHUNK_FILE_OFFSET: _shifted(shift, keep_zero=True),
             _CHUNK_META: lambda src, at, out: _copy_struct(src, at, out, meta),
             **{fid: _page_index for fid in _CHUNK_OTHER_OFFSETS}}

    def columns(src: bytes, at: int, out: bytearray) -> int:
        size, _, pos = list_header_at(src, at)
        out += src[at:pos]
        for _ in range(size):
            pos = _copy_struct(src, pos, out, chunk)
        return pos

    def num_rows(src: bytes, at: int, out: bytearray) -> int:
        value, end = zigzag_at(src, at)
        rows.append(value)
        out += src[at:end]
        return end

    def set_ordinal(src: bytes, at: int, out: bytearray) -> int:
        write_zigzag(out, ordinal)
        return zigzag_at(src, at)[1]

    _copy_struct(src, pos, out, {_GROUP_COLUMNS: columns, _GROUP_NUM_ROWS: num_rows,
                                 _GROUP_FILE_OFFSET: _shifted(shift), _GROUP_ORDINAL: set_ordinal})
    return rows[0] if rows else 0


def _copy_struct(src: bytes, pos: int, out: bytearray, edits: dict) -> int:
    """The struct at ``src[pos:]`` into ``out``: a field whose id is in ``edits`` written by
    ``edits[id](src, where its value starts, out)`` (which returns where the value ends), the others copied as they
    are; returns where the struct ends."""
    last = 0
    while (field := field_at(src, pos, last)) is not None:
        last, ftype, value_at = field
        out += src[pos:value_at]  # the field's header, unchanged
        edit = edits.get(last)
        if edit is None:
            pos = skip(src, value_at, ftype)
            out += src[value_at:pos]
        else:
            pos = edit(src, value_at, out)
    out.append(0)
    return pos + 1


def _shifted(shift: int, keep_zero: bool = False):
    """An edit for :func:`_copy_struct`: the integer plus ``shift`` (left at 0 with ``keep_zero``)."""
    def edit(src: bytes, at: int, out: bytearray) -> int:
        value, end = zigzag_at(src, at)
        write_zigzag(out, value + shift if value or not keep_zero else value)
        return end
    return edit


def _page_index(src: bytes, at: int, out: bytearray) -> int:
    raise ValueError("parquet parts with page indexes are not supported")
