"""The quicktok engine is built once per vocabulary and process, from tables kept in sftpack's cache under the ranks'
sha256: a damaged entry is found by its sums and rebuilt, two vocabularies never share one, a second build in a
process builds no engine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sftpack.tokenizers import backend
from sftpack.tokenizers.backend import forget_engines, quicktok_for
from sftpack.tokenizers.quicktok_tables import NAME, SUMS, QuicktokTables

quicktok = pytest.importorskip("quicktok")

MERGES = [b"he", b"ll", b"hell", b"hello", b" w", b"or", b" wor", b"ld", b" world"]
TEXT = "hello world<|x|>hello"
# by hand: "hello" is rank 256 + 3, " world" 256 + 8, then the special token, then "hello" again
TOKENS = [259, 264, 300, 259]


def toy(merges=MERGES, specials=None):
    import tiktoken

    ranks = {bytes([b]): b for b in range(256)}
    ranks.update({m: 256 + i for i, m in enumerate(merges)})
    specials = specials or {"<|x|>": 300, "<|end|>": 301}
    return tiktoken.Encoding("toy", pat_str=backend.QWEN2_PATTERN, mergeable_ranks=ranks, special_tokens=specials)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty cache and no engine built in this process (both put back afterwards)."""
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(backend, "_ENGINES", {})
    monkeypatch.setattr(backend, "_KEYS", backend.weakref.WeakKeyDictionary())
    return tmp_path / "quicktok"


@pytest.fixture
def constructed(monkeypatch) -> list:
    """The directories quicktok's constructor was called on."""
    calls, real = [], quicktok.Tokenizer

    def counting(name, directory=""):
        calls.append(directory)
        return real(name, directory)

    monkeypatch.setattr(quicktok, "Tokenizer", counting)
    return calls


def test_an_entry_is_written_under_the_ranks_sha256_and_loaded_from_there(cache, constructed):
    import hashlib

    from sftpack.tokenizers.quicktok_vocab import vocab_bytes

    enc = toy()
    assert quicktok_for(enc).encode(TEXT) == TOKENS
    (entry,) = cache.iterdir()
    assert entry.name.startswith(hashlib.sha256(vocab_bytes(enc._mergeable_ranks)).hexdigest() + "-")
    assert (entry / (NAME + ".vocab")).read_bytes() == vocab_bytes(enc._mergeable_ranks)
    written = {p.name: p.stat().st_mtime_ns for p in entry.iterdir()}
    forget_engines()  # as in a new process
    assert quicktok_for(toy()).encode(TEXT) == TOKENS
    assert {p.name: p.stat().st_mtime_ns for p in entry.iterdir()} == written  # read, not written again
    assert constructed == [str(entry)] * 2
    assert [p.name for p in cache.parent.iterdir()] == ["quicktok"]  # no staging directory left


DAMAGES = {
    "truncated": lambda entry: (entry / (NAME + ".vocab")).write_bytes((entry / (NAME + ".vocab")).read_bytes()[:-7]),
    "a byte changed": lambda entry: _flip(entry / (NAME + ".vocab")),
    "special tokens changed": lambda entry: _flip(entry / (NAME + ".special")),
    "a file missing": lambda entry: (entry / (NAME + ".enc")).unlink(),
    "a file added": lambda entry: (entry / "stray").write_text("x"),
    "sums missing": lambda entry: (entry / SUMS).unlink(),
    "sums garbled": lambda entry: (entry / SUMS).write_text("not a sum line\n"),
    "sums made to match another vocabulary": lambda entry: _swap_vocab(entry),
}


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def _swap_vocab(entry: Path) -> None:
    """The ranks file of another vocabulary, with sums that match it: the entry is whole but not this vocabulary's."""
    import hashlib

    from sftpack.tokenizers.quicktok_vocab import vocab_bytes

    other = vocab_bytes(toy(MERGES[:-1])._mergeable_ranks)
    (entry / (NAME + ".vocab")).write_bytes(other)
    lines = [(line.split("  ", 1)) for line in (entry / SUMS).read_text().splitlines()]
    sums = {name: hashlib.sha256(other).hexdigest() if name == NAME + ".vocab" else sha for sha, name in lines}
    (entry / SUMS).write_text("".join(f"{sha}  {name}\n" for name, sha in sums.items()))


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_entry_is_rebuilt_and_the_tokens_stay_right(cache, damage):
    enc = toy()
    quicktok_for(enc)
    (entry,) = cache.iterdir()
    good = {p.name: p.read_bytes() for p in entry.iterdir()}
    DAMAGES[damage](entry)
    assert QuicktokTables(enc, "qwen").check(entry) == "damaged"
    forget_engines()
    fast = quicktok_for(toy())
    assert fast is not None and fast.encode(TEXT) == TOKENS
    assert {p.name: p.read_bytes() for p in entry.iterdir()} == good  # rebuilt whole
    assert sorted(p.name for p in cache.iterdir()) == [entry.name]  # the damaged one moved aside and removed


def test_two_vocabularies_never_share_an_entry(cache):
    same_ranks_other_specials = toy(specials={"<|x|>": 301, "<|end|>": 300})
    other_ranks = toy(MERGES[:-1])
    engines = [quicktok_for(enc) for enc in (toy(), same_ranks_other_specials, other_ranks)]
    entries = sorted(p.name for p in cache.iterdir())
    assert len(entries) == 3
    assert len({name.split("-")[0] for name in entries}) == 2  # two rank files, three entries
    assert engines[0].encode(TEXT) == TOKENS
    assert engines[1].encode(TEXT) == [259, 264, 301, 259]
    assert engines[2].encode(TEXT) == [259, 256 + 6, 256 + 7, 300, 259]  # no " world": " wor" + "ld"


def test_an_unwritable_cache_still_gives_the_engine(cache, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(blocker))
    assert quicktok_for(toy()).encode(TEXT) == TOKENS


def test_a_second_build_in_the_process_builds_no_engine(cache, constructed, tmp_path, monkeypatch):
    from sftpack import BuildConfig, build

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    records = [build(BuildConfig(model="Qwen3.5-122B-A10B", source="sample", rows=1, out=str(tmp_path / str(k)),
                                 progress=False)) for k in range(2)]
    assert len(constructed) == 1
    assert records[0]["rows_sha256"] == records[1]["rows_sha256"]
    assert records[1]["tokenizer_backends"] == records[0]["tokenizer_backends"]
    assert any(engine.startswith("quicktok") for engine in records[1]["tokenizer_backends"])


def test_the_cache_directory_follows_the_settings(monkeypatch, tmp_path):
    from sftpack.base.cache import cache_dir

    monkeypatch.delenv("SFTPACK_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "sftpack"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "sftpack"
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    assert not os.path.exists(tmp_path / "mine")  # not created until something is written
