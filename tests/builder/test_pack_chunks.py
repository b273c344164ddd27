"""pack_chunks (the build's packer: whole chunks at a time) gives exactly pack()'s rows and counts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sftpack.builder.pack import pack, pack_chunks
from sftpack.builder.record import BuildStats

EOS = 99


def conversations(rng, n):
    out = []
    for i in range(n):
        length = int(rng.integers(1, 40))
        mask = (rng.random(length) < rng.choice([0.0, 0.3, 0.9])).astype(np.uint8)
        out.append((f"c{i}", rng.integers(0, 90, length).astype(np.int32), mask))
    return out


def chunked(convs, cuts):
    chunks, start = [], 0
    for stop in [*cuts, len(convs)]:
        part = convs[start:stop]
        if part or stop == len(convs):
            # each conversation preceded by its EOS (mask 0), as a build's workers hand them over
            chunks.append(([c[0] for c in part], np.array([len(c[1]) for c in part], np.int64),
                           np.concatenate([x for c in part for x in ([EOS], c[1])]).astype(np.int32) if part
                           else np.zeros(0, np.int32),
                           np.concatenate([x for c in part for x in ([0], c[2])]).astype(np.uint8) if part
                           else np.zeros(0, np.uint8)))
        start = stop
    return chunks


def snapshot(stats):
    return (stats.conversations, stats.rows_kept, stats.rows_dropped_unsupervised)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(0, 60), width=st.integers(2, 50), pieces=st.integers(0, 8))
def test_same_rows_and_counts_as_pack(seed, n, width, pieces):
    rng = np.random.default_rng(seed)
    convs = conversations(rng, n)
    cuts = sorted(rng.integers(0, n + 1, pieces).tolist())
    want_stats, got_stats = BuildStats(), BuildStats()
    want, got = [], []
    for row in pack(iter(convs), width, EOS, want_stats):
        want.append((row, snapshot(want_stats)))
    pulls = []
    for row in pack_chunks(chunked(convs, cuts), width, EOS, got_stats, pulls.append):
        got.append((row, snapshot(got_stats), pulls[-1]))
    assert len(got) == len(want)
    for (w, ws), (g, gs, pulled) in zip(want, got):
        assert np.array_equal(w.tokens, g.tokens) and np.array_equal(w.loss_mask, g.loss_mask)
        assert w.pieces == g.pieces
        assert ws == gs and pulled == ws[0]  # counted as if pulled one by one, at every row
    assert snapshot(want_stats) == snapshot(got_stats) and want_stats.tail_tokens == got_stats.tail_tokens
    assert pulls[-1] is None and (len(pulls) < 2 or pulls[-2] == n)
