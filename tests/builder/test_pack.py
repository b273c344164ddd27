"""Packing invariants (SPEC rules 6-7), checked on hand-made streams."""

from __future__ import annotations

import numpy as np

from sftpack.builder.pack import pack
from sftpack.builder.record import BuildStats

EOS = 99


def conv(name, n, supervised_from=1, base=0):
    ids = np.arange(base, base + n, dtype=np.int32)
    mask = np.zeros(n, dtype=np.uint8)
    mask[supervised_from:] = 1
    return name, ids, mask


def test_eos_between_conversations_not_before_first_or_after_last():
    convs = [conv("a", 3, base=10), conv("b", 2, base=20), conv("c", 2, base=30)]
    rows = list(pack(convs, row_tokens=9, eos_id=EOS))
    assert [r.tokens.tolist() for r in rows] == [[10, 11, 12, EOS, 20, 21, EOS, 30, 31]]
    # EOS carries mask 0; position 0 is forced to 0
    assert rows[0].loss_mask.tolist() == [0, 1, 1, 0, 0, 1, 0, 0, 1]


def test_position_zero_is_never_a_target():
    convs = [conv("a", 10, supervised_from=0)]
    rows = list(pack(convs, row_tokens=4, eos_id=EOS))
    assert len(rows) == 2  # the 2-token tail is dropped, nothing padded
    assert all(r.loss_mask[0] == 0 for r in rows)
    assert rows[1].loss_mask.tolist() == [0, 1, 1, 1]


def test_rows_without_targets_are_dropped_and_not_counted():
    convs = [conv("a", 4, supervised_from=4), conv("b", 3, supervised_from=1, base=50)]
    stats = BuildStats()
    rows = list(pack(convs, row_tokens=4, eos_id=EOS, stats=stats))
    # stream: 0 1 2 3 | EOS 50 51 52 -> row 1 has no target, row 2 has 51, 52
    assert [r.tokens.tolist() for r in rows] == [[EOS, 50, 51, 52]]
    assert stats.rows_kept == 1 and stats.rows_dropped_unsupervised == 1


def test_row_with_only_position_zero_supervised_is_dropped():
    convs = [conv("a", 4, supervised_from=4), conv("b", 8, supervised_from=0, base=50)]
    rows = list(pack(convs, row_tokens=5, eos_id=EOS))
    # stream: 0 1 2 3 EOS | 50..54 | 55 56 57 (tail dropped); row 1 all zero -> dropped
    assert [r.tokens.tolist() for r in rows] == [[50, 51, 52, 53, 54]]
    assert rows[0].loss_mask.tolist() == [0, 1, 1, 1, 1]


def test_conversation_spanning_rows_has_provenance_in_each():
    convs = [conv("a", 3, base=10), conv("long", 12, base=100), conv("c", 5, base=200)]
    rows = list(pack(convs, row_tokens=6, eos_id=EOS))
    # stream: 10 11 12 EOS 100 101 | 102..107 | 108..111 EOS 200 | 201..204 (tail)
    assert [r.tokens.tolist() for r in rows] == [
        [10, 11, 12, EOS, 100, 101],
        [102, 103, 104, 105, 106, 107],
        [108, 109, 110, 111, EOS, 200],
    ]
    pieces = [[(p.conversation, p.start, p.length, p.offset) for p in r.pieces] for r in rows]
    assert pieces == [
        [("a", 0, 3, 0), ("long", 4, 2, 0)],
        [("long", 0, 6, 2)],
        [("long", 0, 4, 8), ("c", 5, 1, 0)],
    ]


def test_lazy_pulls_only_what_the_rows_need():
    pulled = []

    def source():
        for i in range(1000):
            pulled.append(i)
            yield conv(str(i), 5, base=i * 10)

    rows = pack(source(), row_tokens=8, eos_id=EOS)
    first_two = [next(rows), next(rows)]
    assert len(first_two) == 2
    # 2 rows = 16 tokens = conversations of 5 (+1 EOS): the third conversation completes row 2
    assert pulled == [0, 1, 2]


def test_exact_row_count_and_no_padding():
    convs = [conv(str(i), 7, base=i * 10) for i in range(50)]
    rows = list(pack(convs, row_tokens=16, eos_id=EOS))
    assert len(rows) == (50 * 7 + 49) // 16
    assert all(len(r.tokens) == 16 and r.tokens.dtype == np.int32 for r in rows)
