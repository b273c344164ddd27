"""A rank file's ranks are kept in binary in sftpack's cache under the file's sha256: read back equal to the parse,
without parsing; a damaged entry is found by its sums or its lengths and written again, two files never share one,
an unwritable cache still gives the ranks; quicktok's ranks file comes with them, the same bytes as made from the
ranks."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest

from sftpack.tokenizers import ranks_cache
from sftpack.tokenizers.offline import parse_ranks
from sftpack.tokenizers.quicktok_vocab import vocab_bytes
from sftpack.tokenizers.ranks_cache import FORMAT, LENGTHS, SUMS, VOCAB, cached_ranks, known_vocab

# a rank file written by hand: 256 single bytes, then three merges
TOKENS = [bytes([b]) for b in range(256)] + [b"he", b"llo", b"hello"]
FILE = b"".join(base64.b64encode(t) + b" %d\n" % rank for rank, t in enumerate(TOKENS))


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ranks_cache, "_KNOWN", {})
    return tmp_path / "ranks"


def counting(calls: list):
    def parse(data: bytes) -> dict[bytes, int]:
        calls.append(1)
        return parse_ranks(data)
    return parse


def test_ranks_are_kept_under_the_files_sha256_and_read_back_without_parsing(cache):
    sha = hashlib.sha256(FILE).hexdigest()
    calls = []
    first = cached_ranks(FILE, sha, counting(calls))
    again = cached_ranks(FILE, sha, counting(calls))
    assert calls == [1]  # parsed once, then read from the entry
    assert again == first == {t: rank for rank, t in enumerate(TOKENS)}
    assert list(again) == TOKENS  # in rank order, as the file has them
    assert sorted(os.listdir(cache / f"{sha}-{FORMAT}")) == sorted([VOCAB, LENGTHS, SUMS])
    # quicktok's ranks file comes with them: the bytes made from the ranks, and its sha256
    vocab, digest = known_vocab(again)
    assert vocab == vocab_bytes(again) and digest == hashlib.sha256(vocab).hexdigest()
    assert known_vocab(dict(again)) is None  # other ranks, though equal: not these


def damage_vocab_byte(entry: Path):  # a token's byte changed, the sums left: the sums catch it
    data = bytearray((entry / VOCAB).read_bytes())
    data[10] ^= 1
    (entry / VOCAB).write_bytes(bytes(data))


def damage_consistently(entry: Path):  # a length and the sums changed together: the lengths do not fit the records
    lengths = bytearray((entry / LENGTHS).read_bytes())
    lengths[0], lengths[2] = 2, 0  # token 0 two bytes long, token 1 none: the same total
    (entry / LENGTHS).write_bytes(bytes(lengths))
    (entry / SUMS).write_text("".join(f"{hashlib.sha256((entry / n).read_bytes()).hexdigest()}  {n}\n"
                                      for n in (LENGTHS, VOCAB)))


@pytest.mark.parametrize("damage", [
    lambda e: (e / VOCAB).write_bytes((e / VOCAB).read_bytes()[:-3]),  # cut short
    damage_vocab_byte,
    damage_consistently,
    lambda e: (e / LENGTHS).unlink(),
    lambda e: (e / "extra").write_text("x"),
    lambda e: (e / SUMS).write_text("not sums"),
])
def test_a_damaged_entry_is_written_again_and_the_ranks_stay_right(cache, damage):
    sha = hashlib.sha256(FILE).hexdigest()
    cached_ranks(FILE, sha, parse_ranks)
    damage(cache / f"{sha}-{FORMAT}")
    calls = []
    assert cached_ranks(FILE, sha, counting(calls)) == parse_ranks(FILE) and calls == [1]
    assert cached_ranks(FILE, sha, counting(calls)) == parse_ranks(FILE) and calls == [1]  # whole again


def test_two_files_never_share_an_entry(cache):
    other = FILE.replace(base64.b64encode(b"hello"), base64.b64encode(b"hellp"))  # one token's bytes
    ranks = [cached_ranks(f, hashlib.sha256(f).hexdigest(), parse_ranks) for f in (FILE, other, FILE)]
    assert ranks[0] == ranks[2] != ranks[1] == parse_ranks(other)
    assert len(os.listdir(cache)) == 2


def test_an_unwritable_cache_still_gives_the_ranks(cache, tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(blocked))
    calls = []
    for _ in range(2):
        assert cached_ranks(FILE, hashlib.sha256(FILE).hexdigest(), counting(calls)) == parse_ranks(FILE)
    assert calls == [1, 1]  # parsed each time, as without a cache
