"""The table of code points that send a text to tiktoken: filled a plane at a time, with the whole table's values."""

from __future__ import annotations

import unicodedata

import numpy as np

from helpers.unsafe import unsafe_table
from sftpack.tokenizers.code_points import UnsafeTable


def test_the_unsafe_table_fills_the_planes_it_meets_with_the_whole_tables_values():
    for marks in (False, True):
        whole = unsafe_table(marks)
        table = UnsafeTable(marks)
        assert table.filled.tolist() == [True] + [False] * 16
        emoji = np.array([0x41, 0x1F600, 0x301], dtype=np.uint32)
        assert table[emoji].tolist() == whole[emoji].tolist() == [False, False, marks]
        assert np.flatnonzero(table.filled).tolist() == [0, 1]
        every = np.arange(0x110000, dtype=np.uint32)
        assert np.array_equal(table[every], whole)
        assert table.filled.all()


def test_the_table_follows_this_pythons_unicode_categories():
    marks = [c for c in range(0x300, 0x370)]  # combining diacritical marks
    unassigned = [c for c in range(0x370, 0x400) if unicodedata.category(chr(c)) == "Cn"]
    letters = [ord(c) for c in "aZ\u00e9\u6771"]
    for with_marks in (False, True):
        table = UnsafeTable(with_marks)
        assert not table[np.array(letters)].any()
        assert table[np.array(unassigned)].all() and unassigned
        assert (table[np.array(marks)] == with_marks).all()
        assert table[np.array([0xD800, 0xDFFF])].all()  # surrogates
        assert table[np.array([0x40000, 0xDFFFF])].all()  # planes 4-13: unassigned
