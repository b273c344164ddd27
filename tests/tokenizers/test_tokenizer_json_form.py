"""A ``tokenizer.json``'s tiktoken form, once proved equal to ``tokenizers``, is kept in sftpack's cache under the
file's sha256 and read back without parsing the file with either library: the same tokens as ``tokenizers`` gives;
a damaged entry, another ``tokenizers`` version or a form that fails its proof is proved again (or never kept); a
tokenizer tiktoken cannot express keeps nothing; an unwritable cache still loads."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from helpers.family_vocabs import save_stand_in_dir
from helpers.small_vocabs import gemma_test_tokenizer
from sftpack.tokenizers import encodings, ranks_cache, tokenizer_json
from sftpack.tokenizers.hf_vocab import HFVocab
from sftpack.tokenizers.tiktoken_vocab import TiktokenVocab
from sftpack.tokenizers.tokenizer_json import FORM, SUMS, load_tokenizer_json
from sftpack.tokenizers.vocab import VocabInfo

TEXTS = ["Hello, world! The quick brown fox.", "def add(a, b):\n    return a + b\n", "你好，世界！ 😀👍🏽 Привет",
         "  spaces  \n\n\ttabs\r\n", "<|im_start|>user\nhi<|im_end|>\n"]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ranks_cache, "_KNOWN", {})
    encodings.forget()
    yield tmp_path / "cache" / "tokenizer-json"
    encodings.forget()


@pytest.fixture
def stand_in(tmp_path) -> tuple[Path, str]:
    directory = save_stand_in_dir("nemotron3_nano", tmp_path / "tok")
    return directory / "tokenizer.json", json.loads((directory / "tokenizer_config.json").read_text())["eos_token"]


def load(path: Path, eos: str):
    return load_tokenizer_json(path, eos, VocabInfo("test", "test"))


def parsers_counted(monkeypatch) -> list:
    """Count every parse of a tokenizer.json, by ``tokenizers`` or by sftpack's derivation of its tiktoken form."""
    from tokenizers import Tokenizer

    calls = []
    from_file, derive = Tokenizer.from_file, tokenizer_json._tiktoken_from_tokenizer_json
    monkeypatch.setattr(Tokenizer, "from_file", staticmethod(lambda *a: calls.append("tokenizers") or from_file(*a)))
    monkeypatch.setattr(tokenizer_json, "_tiktoken_from_tokenizer_json", lambda p: calls.append("derive") or derive(p))
    return calls


def tokenizers_ids(path: Path, text: str) -> list[int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False).ids


def test_a_proved_form_is_kept_and_read_back_without_parsing_the_file(cache, stand_in, monkeypatch):
    path, eos = stand_in
    calls = parsers_counted(monkeypatch)
    first = load(path, eos)
    assert isinstance(first, TiktokenVocab) and sorted(calls) == ["derive", "tokenizers"]
    (entry,) = cache.iterdir()
    assert entry.name.startswith(tokenizer_json.file_sha256(path).sha256) and sorted(os.listdir(entry)) == [SUMS, FORM]
    encodings.forget()  # a new process: nothing made yet
    calls.clear()
    again = load(path, eos)
    assert calls == [] and isinstance(again, TiktokenVocab)
    for text in TEXTS:  # the tokens tokenizers itself gives
        assert again.encode(text).tolist() == tokenizers_ids(path, text) == first.encode(text).tolist()
    assert again.special_tokens == first.special_tokens and again.nfc == first.nfc


def wrong_form_with_its_sums(entry: Path):
    wrong = b'{"pattern": 1, "special_tokens": {}, "nfc": false}'
    (entry / FORM).write_bytes(wrong)
    (entry / SUMS).write_text(f"{hashlib.sha256(wrong).hexdigest()}  {FORM}\n")


@pytest.mark.parametrize("damage", [
    lambda e: (e / FORM).write_text((e / FORM).read_text().replace('"nfc": false', '"nfc": true')),  # sums catch it
    lambda e: (e / SUMS).unlink(),
    lambda e: (e / "extra").write_text("x"),
    lambda e: wrong_form_with_its_sums(e),
])
def test_a_damaged_entry_is_proved_again_and_written_whole(cache, stand_in, monkeypatch, damage):
    path, eos = stand_in
    load(path, eos)
    (entry,) = cache.iterdir()
    kept = (entry / FORM).read_bytes()
    damage(entry)
    encodings.forget()
    calls = parsers_counted(monkeypatch)
    vocab = load(path, eos)
    assert sorted(calls) == ["derive", "tokenizers"] and isinstance(vocab, TiktokenVocab)
    assert (entry / FORM).read_bytes() == kept and sorted(os.listdir(entry)) == [SUMS, FORM]
    assert vocab.encode(TEXTS[2]).tolist() == tokenizers_ids(path, TEXTS[2])


def test_another_tokenizers_version_proves_the_form_again(cache, stand_in, monkeypatch):
    import importlib.metadata

    path, eos = stand_in
    load(path, eos)
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "0.0.1" if name == "tokenizers" else real(name))
    encodings.forget()
    calls = parsers_counted(monkeypatch)
    load(path, eos)
    assert "tokenizers" in calls and len(list(cache.iterdir())) == 2


def test_a_form_that_fails_its_proof_is_never_kept(cache, stand_in, monkeypatch):
    path, eos = stand_in
    monkeypatch.setattr(tokenizer_json, "_same_encoding", lambda a, b: False)
    assert isinstance(load(path, eos), HFVocab) and not cache.exists()
    encodings.forget()
    assert isinstance(load(path, eos), HFVocab)


def test_a_tokenizer_tiktoken_cannot_express_keeps_nothing(cache, tmp_path):
    path = tmp_path / "tokenizer.json"
    gemma_test_tokenizer().save(str(path))  # byte fallback: tokenizers only
    assert isinstance(load(path, "<eos>"), HFVocab) and not cache.exists()


def test_an_unwritable_cache_still_loads(tmp_path, stand_in, monkeypatch):
    path, eos = stand_in
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(blocked))
    encodings.forget()
    try:
        for _ in range(2):
            vocab = load(path, eos)
            assert isinstance(vocab, TiktokenVocab)
            assert vocab.encode(TEXTS[0]).tolist() == tokenizers_ids(path, TEXTS[0])
            encodings.forget()
    finally:
        encodings.forget()


def test_an_eos_the_kept_form_lacks_is_named_by_tokenizers(cache, stand_in):
    path, eos = stand_in
    load(path, eos)
    encodings.forget()
    from sftpack.base.errors import UsageError

    with pytest.raises(UsageError, match="'<nope>' is not in the tokenizer"):
        load(path, "<nope>")
    assert np.array_equal(load(path, eos).encode(TEXTS[0]), tokenizers_ids(path, TEXTS[0]))
