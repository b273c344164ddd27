"""byte_layout (a whole batch's byte positions, computed at once) against each text encoded on its own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sftpack.tokenizers.layout import byte_layout

# one character of each UTF-8 width, and a combining mark
ALPHABET = st.sampled_from(["a", " ", "\n", "\u00e9", "\u0301", "\u6771", "\U0001f600", "<", "|"])


class Marks:
    """A stand-in for quicktok's exactness check: a text is exact unless it holds U+0301."""

    unsafe = np.zeros(0x110000, dtype=bool)
    unsafe[0x301] = True

    def exact_points(self, points, starts, wide=None):
        # byte_layout hands over where the non-ASCII characters are: exactly there
        assert wide is None or wide.tolist() == [i for i, p in enumerate(points.tolist()) if p >= 0x80]
        bad = np.concatenate(([0], np.cumsum(self.unsafe[points])))
        return bad[starts[1:]] == bad[starts[:-1]]


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n=st.integers(1, 6))
def test_positions_equal_each_text_encoded_alone(data, n):
    texts = [data.draw(st.text(ALPHABET, min_size=1, max_size=12)) for _ in range(n)]
    spans = []
    for text in texts:
        cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
        spans.append(list(zip(cuts[0::2], cuts[1::2])))
    text_start, lo, hi, exact = byte_layout(texts, spans, "".join(texts).isascii(), Marks())
    sizes = [len(t.encode()) for t in texts]
    assert text_start.tolist() == np.concatenate(([0], np.cumsum(sizes))).tolist()
    want = [(text_start[i] + len(t[:a].encode()), text_start[i] + len(t[:b].encode()))
            for i, (t, text_spans) in enumerate(zip(texts, spans)) for a, b in text_spans if b > a]
    assert list(zip(lo.tolist(), hi.tolist())) == want
    assert exact.tolist() == ["\u0301" not in t for t in texts]


def test_ascii_batch_and_no_faster_engine():
    text_start, lo, hi, exact = byte_layout(["ab", "cde"], [[(0, 2)], [(1, 1), (1, 3)]], True, None)
    assert (text_start.tolist(), lo.tolist(), hi.tolist(), exact) == ([0, 2, 5], [0, 3], [2, 5], None)


@pytest.mark.parametrize("text", ["x\ud800", "\udfffy"])
def test_lone_surrogate_gives_none(text):
    assert byte_layout(["ok", text], [[], [(0, 1)]], False, None) is None
