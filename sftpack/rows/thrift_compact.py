"""Thrift's compact protocol, as parquet writes its footer: a struct is a list of ``[field id, type, value]`` and a
list is ``(element type, [values])``; :func:`parse_struct` and :func:`encode_struct` read and write it generically
(fields in their order, every value kept), so that a footer re-encoded is the same bytes. The ``*_at`` functions
read one header or value at a position without decoding the rest (for :mod:`sftpack.rows.parts`' fast walk).

    >>> encode_struct(parse_struct(Reader(bytes([0x15, 0x04, 0x18, 0x02, 0x61, 0x62, 0x00]))))
    b'\\x15\\x04\\x18\\x02ab\\x00'
"""

from __future__ import annotations

# the compact protocol's types
TRUE, FALSE, BYTE, I16, I32, I64, DOUBLE, BINARY, LIST, SET, MAP, STRUCT = range(1, 13)


def field_at(src: bytes, pos: int, last: int) -> tuple[int, int, int] | None:
    """The header of the struct field at ``src[pos:]`` (the previous field's id ``last``): (field id, type, where its
    value starts); None at the byte that ends the struct."""
    header = src[pos]
    if header == 0:
        return None
    delta = header >> 4
    if delta:
        return last + delta, header & 0x0F, pos + 1
    fid, value_at = zigzag_at(src, pos + 1)
    return fid, header & 0x0F, value_at


def zigzag_at(src: bytes, pos: int) -> tuple[int, int]:
    n, pos = varint_at(src, pos)
    return (n >> 1) ^ -(n & 1), pos


def list_header_at(src: bytes, pos: int) -> tuple[int, int, int]:
    header = src[pos]
    size, etype = header >> 4, header & 0x0F
    pos += 1
    if size == 15:
        size, pos = varint_at(src, pos)
    return size, etype, pos


def varint_at(src: bytes, pos: int) -> tuple[int, int]:
    shift = n = 0
    while True:
        b = src[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return n, pos
        shift += 7


def skip(src: bytes, pos: int, ftype: int) -> int:
    """Where the value of type ``ftype`` at ``src[pos:]`` ends."""
    if ftype in (I16, I32, I64):
        while src[pos] & 0x80:
            pos += 1
        return pos + 1
    if ftype in (TRUE, FALSE):
        return pos
    if ftype == BINARY:
        n, pos = varint_at(src, pos)
        return pos + n
    if ftype == STRUCT:
        last = 0
        while (field := field_at(src, pos, last)) is not None:
            last, ftype, value_at = field
            pos = skip(src, value_at, ftype)
        return pos + 1
    if ftype in (LIST, SET):
        size, etype, pos = list_header_at(src, pos)
        if etype in (TRUE, FALSE):
            raise ValueError("boolean lists are not expected in a parquet footer")
        for _ in range(size):
            pos = skip(src, pos, etype)
        return pos
    if ftype == BYTE:
        return pos + 1
    if ftype == DOUBLE:
        return pos + 8
    raise ValueError(f"unexpected thrift type {ftype} in a parquet footer")


class Reader:
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


def parse_struct(r: Reader) -> list:
    fields, last = [], 0
    while True:
        header = r.byte()
        if header == 0:
            return fields
        ftype, delta = header & 0x0F, header >> 4
        fid = last + delta if delta else r.zigzag()
        fields.append([fid, ftype, parse_value(r, ftype)])
        last = fid


def parse_value(r: Reader, ftype: int):
    if ftype in (TRUE, FALSE):
        return ftype == TRUE
    if ftype == BYTE:
        return r.byte()
    if ftype in (I16, I32, I64):
        return r.zigzag()
    if ftype == DOUBLE:
        r.pos += 8
        return r.data[r.pos - 8 : r.pos]
    if ftype == BINARY:
        n = r.varint()
        r.pos += n
        return r.data[r.pos - n : r.pos]
    if ftype in (LIST, SET):
        header = r.byte()
        size, etype = header >> 4, header & 0x0F
        if size == 15:
            size = r.varint()
        if etype in (TRUE, FALSE):
            raise ValueError("boolean lists are not expected in a parquet footer")
        return (etype, [parse_value(r, etype) for _ in range(size)])
    if ftype == STRUCT:
        return parse_struct(r)
    raise ValueError(f"unexpected thrift type {ftype} in a parquet footer")


def write_varint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def write_zigzag(out: bytearray, n: int) -> None:
    write_varint(out, (n << 1) ^ (n >> 63))


def write_field_header(out: bytearray, delta: int, fid: int, ftype: int) -> None:
    if 0 < delta <= 15:
        out.append((delta << 4) | ftype)
    else:
        out.append(ftype)
        write_zigzag(out, fid)


def write_list_header(out: bytearray, size: int, etype: int) -> None:
    if size < 15:
        out.append((size << 4) | etype)
    else:
        out.append(0xF0 | etype)
        write_varint(out, size)


def write_value(out: bytearray, ftype: int, value) -> None:
    if ftype in (TRUE, FALSE):
        return  # carried by the field header
    if ftype == BYTE:
        out.append(value & 0xFF)
    elif ftype in (I16, I32, I64):
        write_zigzag(out, value)
    elif ftype == DOUBLE:
        out += value
    elif ftype == BINARY:
        write_varint(out, len(value))
        out += value
    elif ftype in (LIST, SET):
        etype, values = value
        write_list_header(out, len(values), etype)
        for v in values:
            write_value(out, etype, v)
    elif ftype == STRUCT:
        if isinstance(value, bytes):  # a struct encoded earlier (the stitched row groups)
            out += value
        else:
            encode_into(out, value)


def encode_into(out: bytearray, fields: list) -> None:
    last = 0
    for fid, ftype, value in fields:
        if ftype in (TRUE, FALSE):
            ftype = TRUE if value else FALSE
        write_field_header(out, fid - last, fid, ftype)
        write_value(out, ftype, value)
        last = fid
    out.append(0)


def encode_struct(fields: list) -> bytes:
    out = bytearray()
    encode_into(out, fields)
    return bytes(out)
