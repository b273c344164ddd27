"""gpt-oss builds offline with no manual step: o200k_base.tiktoken is derived from the quicktok-v1 package's data,
checked against the sha256 tiktoken itself expects (read here from tiktoken's own source), and recorded as such.
"""

from __future__ import annotations

import hashlib
import os

import pytest

import sftpack
from helpers.harmony_vocab import seed_caches, tiktoken_expected_hash
from sftpack.base.errors import UsageError
from sftpack.tokenizers import quicktok_o200k
from sftpack.tokenizers.offline import O200K_BASE_SHA256, load_o200k_harmony


def test_the_derived_file_is_tiktokens_file():
    derived = quicktok_o200k.derive_o200k_base(tiktoken_expected_hash())
    assert hashlib.sha256(derived.content).hexdigest() == tiktoken_expected_hash() == O200K_BASE_SHA256
    assert derived.origin.startswith("quicktok-v1 ")


def test_a_derived_file_with_another_hash_is_refused(tmp_path, monkeypatch):
    vocab = quicktok_o200k.quicktok_vocab_path().read_bytes()
    tampered = tmp_path / "o200k.vocab"
    # the first token's first byte changed: still a well-formed quicktok file, no longer tiktoken's ranks
    tampered.write_bytes(vocab[:6] + bytes([vocab[6] ^ 1]) + vocab[7:])
    monkeypatch.setattr(quicktok_o200k, "quicktok_vocab_path", lambda: tampered)
    with pytest.raises(UsageError, match="not tiktoken's expected"):
        quicktok_o200k.derive_o200k_base(O200K_BASE_SHA256)


def build(tmp_path, name: str, **kwargs):
    return sftpack.build(sftpack.BuildConfig(model="gpt-oss-20b", source="sample", rows=4, out=str(tmp_path / name),
                                             workers=1, progress=False, **kwargs))


def test_offline_gpt_oss_builds_from_an_empty_tiktoken_cache_with_the_rows_of_tiktokens_own_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(empty))
    derived = build(tmp_path, "derived")
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(empty) and not list(empty.iterdir())  # nothing left behind
    assert "quicktok-v1" in derived["tokenizer"] and "tiktoken's expected sha256" in derived["tokenizer"]
    assert list(derived["tokenizer_files"].values()) == [tiktoken_expected_hash()]
    assert derived["pinned"] is False

    seeded, _ = seed_caches(tmp_path / "seeded")  # tiktoken's own cache holding its file: the path before
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(seeded))
    cached = build(tmp_path, "cached")
    assert "quicktok" not in cached["tokenizer"]
    assert derived["rows_sha256"] == cached["rows_sha256"]


def test_the_vocabulary_loads_with_tiktokens_cache_turned_off_by_an_unset_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.setenv("DATA_GYM_CACHE_DIR", str(tmp_path / "gym"))  # where tiktoken would look: empty
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    vocab = load_o200k_harmony()
    assert vocab.encode("<|start|>assistant<|channel|>final<|message|>Hi<|return|>").tolist()[:1] == [200006]
    assert "TIKTOKEN_CACHE_DIR" not in os.environ
