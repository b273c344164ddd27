"""One parquet file from row groups compressed in parallel, byte for byte the file one writer would write.

pyarrow's ``ParquetWriter`` compresses a file's pages in the calling thread, one after another: at 16 build
workers, zstd over the ``tokens`` column was the build's serial bottleneck. Here each
row group is written as a standalone in-memory parquet file (:func:`part`, in any thread: pyarrow releases the GIL
while it encodes and compresses), and :class:`Stitcher` appends the parts' row-group bytes to the output and writes
one footer: the empty file's footer with every part's row-group metadata appended, its file offsets shifted to
where the bytes landed. The footer is Thrift compact protocol; :func:`_parse` and :func:`_encode` read and write
it generically (fields in their order, every value kept), so that nothing else in it changes.

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

MAGIC = b"PAR1"

# Thrift compact protocol types
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)

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
        self._template = _parse_struct(_Reader(_footer(empty.getvalue().to_pybytes())))
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
        footer = bytes(_footer(data))
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
        replace = {_FILE_NUM_ROWS: self.rows, _FILE_ROW_GROUPS: (_STRUCT, self._groups)}
        out = _encode_struct([(fid, ftype, replace.get(fid, value)) for fid, ftype, value in self._template])
        self._write(out)
        self._write(struct.pack("<I", len(out)) + MAGIC)


def _footer(data) -> memoryview:
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
    while (field := _field_at(footer, pos, last)) is not None:
        last, ftype, value_at = field
        if last > _FILE_SCHEMA and not schema_end:
            schema_end = pos
        if last == _FILE_ROW_GROUPS:
            size, etype, pos = _list_header_at(footer, value_at)
            groups = []
            for _ in range(size):
                end = _skip(footer, pos, etype)
                groups.append((pos, end))
                pos = end
            return groups, schema_end
        pos = _skip(footer, value_at, ftype)
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
        size, _, pos = _list_header_at(src, at)
        out += src[at:pos]
        for _ in range(size):
            pos = _copy_struct(src, pos, out, chunk)
        return pos

    def num_rows(src: bytes, at: int, out: bytearray) -> int:
        value, end = _zigzag_at(src, at)
        rows.append(value)
        out += src[at:end]
        return end

    def set_ordinal(src: bytes, at: int, out: bytearray) -> int:
        _zigzag(out, ordinal)
        return _zigzag_at(src, at)[1]

    _copy_struct(src, pos, out, {_GROUP_COLUMNS: columns, _GROUP_NUM_ROWS: num_rows,
                                 _GROUP_FILE_OFFSET: _shifted(shift), _GROUP_ORDINAL: set_ordinal})
    return rows[0] if rows else 0


def _copy_struct(src: bytes, pos: int, out: bytearray, edits: dict) -> int:
    """The struct at ``src[pos:]`` into ``out``: a field whose id is in ``edits`` written by
    ``edits[id](src, where its value starts, out)`` (which returns where the value ends), the others copied as they
    are; returns where the struct ends."""
    last = 0
    while (field := _field_at(src, pos, last)) is not None:
        last, ftype, value_at = field
        out += src[pos:value_at]  # the field's header, unchanged
        edit = edits.get(last)
        if edit is None:
            pos = _skip(src, value_at, ftype)
            out += src[value_at:pos]
        else:
            pos = edit(src, value_at, out)
    out.append(0)
    return pos + 1


def _shifted(shift: int, keep_zero: bool = False):
    """An edit for :func:`_copy_struct`: the integer plus ``shift`` (left at 0 with ``keep_zero``)."""
    def edit(src: bytes, at: int, out: bytearray) -> int:
        value, end = _zigzag_at(src, at)
        _zigzag(out, value + shift if value or not keep_zero else value)
        return end
    return edit


def _page_index(src: bytes, at: int, out: bytearray) -> int:
    raise ValueError("parquet parts with page indexes are not supported")


def _field_at(src: bytes, pos: int, last: int) -> tuple[int, int, int] | None:
    """The header of the struct field at ``src[pos:]`` (the previous field's id ``last``): (field id, type, where its
    value starts); None at the byte that ends the struct."""
    header = src[pos]
    if header == 0:
        return None
    delta = header >> 4
    if delta:
        return last + delta, header & 0x0F, pos + 1
    fid, value_at = _zigzag_at(src, pos + 1)
    return fid, header & 0x0F, value_at


def _zigzag_at(src: bytes, pos: int) -> tuple[int, int]:
    n, pos = _varint_at(src, pos)
    return (n >> 1) ^ -(n & 1), pos


def _list_header_at(src: bytes, pos: int) -> tuple[int, int, int]:
    header = src[pos]
    size, etype = header >> 4, header & 0x0F
    pos += 1
    if size == 15:
        size, pos = _varint_at(src, pos)
    return size, etype, pos


def _varint_at(src: bytes, pos: int) -> tuple[int, int]:
    shift = n = 0
    while True:
        b = src[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, pos
        shift += 7


def _skip(src: bytes, pos: int, ftype: int) -> int:
    """Where the value of type ``ftype`` at ``src[pos:]`` ends."""
    if ftype in (_I16, _I32, _I64):
        while src[pos] & 0x80:
            pos += 1
        return pos + 1
    if ftype in (_TRUE, _FALSE):
        return pos
    if ftype == _BINARY:
        n, pos = _varint_at(src, pos)
        return pos + n
    if ftype == _STRUCT:
        last = 0
        while (field := _field_at(src, pos, last)) is not None:
            last, ftype, value_at = field
            pos = _skip(src, value_at, ftype)
        return pos + 1
    if ftype in (_LIST, _SET):
        size, etype, pos = _list_header_at(src, pos)
        if etype in (_TRUE, _FALSE):
            raise ValueError("boolean lists are not expected in a parquet footer")
        for _ in range(size):
            pos = _skip(src, pos, etype)
        return pos
    if ftype == _BYTE:
        return pos + 1
    if ftype == _DOUBLE:
        return pos + 8
    raise ValueError(f"unexpected thrift type {ftype} in a parquet footer")


# ---------------------------------------------------------------------------------------------------------
# Thrift compact protocol: a struct is a list of [field id, type, value]; a list is (element type, [values]).


class _Reader:
    def __init__(self, data):
        self.data = bytes(data)
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)


def _parse_struct(r: _Reader) -> list:
    fields, last = [], 0
    while True:
        header = r.byte()
        if header == 0:
            return fields
        ftype, delta = header & 0x0F, header >> 4
        fid = last + delta if delta else r.zigzag()
        fields.append([fid, ftype, _parse_value(r, ftype)])
        last = fid


def _parse_value(r: _Reader, ftype: int):
    if ftype in (_TRUE, _FALSE):
        return ftype == _TRUE
    if ftype == _BYTE:
        return r.byte()
    if ftype in (_I16, _I32, _I64):
        return r.zigzag()
    if ftype == _DOUBLE:
        r.pos += 8
        return r.data[r.pos - 8 : r.pos]
    if ftype == _BINARY:
        n = r.varint()
        r.pos += n
        return r.data[r.pos - n : r.pos]
    if ftype in (_LIST, _SET):
        header = r.byte()
        size, etype = header >> 4, header & 0x0F
        if size == 15:
            size = r.varint()
        if etype in (_TRUE, _FALSE):
            raise ValueError("boolean lists are not expected in a parquet footer")
        return (etype, [_parse_value(r, etype) for _ in range(size)])
    if ftype == _STRUCT:
        return _parse_struct(r)
    raise ValueError(f"unexpected thrift type {ftype} in a parquet footer")


def _varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _zigzag(out: bytearray, n: int) -> None:
    _varint(out, (n << 1) ^ (n >> 63))


def _field_header(out: bytearray, delta: int, fid: int, ftype: int) -> None:
    if 0 < delta <= 15:
        out.append((delta << 4) | ftype)
    else:
        out.append(ftype)
        _zigzag(out, fid)


def _list_header(out: bytearray, size: int, etype: int) -> None:
    if size < 15:
        out.append((size << 4) | etype)
    else:
        out.append(0xF0 | etype)
        _varint(out, size)


def _value(out: bytearray, ftype: int, value) -> None:
    if ftype in (_TRUE, _FALSE):
        return  # carried by the field header
    if ftype == _BYTE:
        out.append(value & 0xFF)
    elif ftype in (_I16, _I32, _I64):
        _zigzag(out, value)
    elif ftype == _DOUBLE:
        out += value
    elif ftype == _BINARY:
        _varint(out, len(value))
        out += value
    elif ftype in (_LIST, _SET):
        etype, values = value
        _list_header(out, len(values), etype)
        for v in values:
            _value(out, etype, v)
    elif ftype == _STRUCT:
        if isinstance(value, bytes):  # a struct encoded earlier (the stitched row groups)
            out += value
        else:
            _encode_into(out, value)


def _encode_into(out: bytearray, fields: list) -> None:
    last = 0
    for fid, ftype, value in fields:
        if ftype in (_TRUE, _FALSE):
            ftype = _TRUE if value else _FALSE
        _field_header(out, fid - last, fid, ftype)
        _value(out, ftype, value)
        last = fid
    out.append(0)


def _encode_struct(fields: list) -> bytes:
    out = bytearray()
    _encode_into(out, fields)
    return bytes(out)
