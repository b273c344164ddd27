"""sftpack's Kimi tokenizer loader (no hub code) on the small Kimi-style test files."""

from __future__ import annotations

import json

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.kimi_reference import kimi_encode
from helpers.small_vocabs import KIMI_ADDED_TOKENS, KIMI_FIRST_SPECIAL_ID, kimi_test_files, kimi_test_ranks
from sftpack.tokenizers.kimi import (
    KIMI_PAT_STR,
    MAX_RUN_CHARS,
    NUM_RESERVED_SPECIAL_TOKENS,
    load_kimi_encoding,
    read_tiktoken_ranks,
)

MIXED = [
    "Hello, world! The quick brown fox.",
    "def add(a, b):\n    return a + b\n",
    "你好，世界！今天天气很好。",
    "emoji 😀👍🏽 👨‍👩‍👧 and rare CJK 龘 and Cyrillic Привет, Ünïcödé",
    "digits 12345 and 1234567 and ٣٤٥",
    "  leading and trailing spaces  \n\n\ttabs\r\n",
    "It's THEY'RE we'll I'M",
    "",
]


@pytest.fixture(scope="module")
def kimi_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("kimi")
    kimi_test_files(path)
    return path


@pytest.fixture(scope="module")
def loaded(kimi_dir):
    return load_kimi_encoding(kimi_dir / "tiktoken.model", kimi_dir / "tokenizer_config.json")


def pieces(enc, ids):
    return [enc.decode_single_token_bytes(i) for i in ids]


def test_files_are_deterministic(kimi_dir, tmp_path):
    kimi_test_files(tmp_path)
    for name in ("tiktoken.model", "tokenizer_config.json"):
        assert (tmp_path / name).read_bytes() == (kimi_dir / name).read_bytes()
    ranks = read_tiktoken_ranks(kimi_dir / "tiktoken.model")
    assert ranks == dict(kimi_test_ranks())
    assert all(ranks[bytes([b])] == b for b in range(256))
    assert 256 + 200 <= len(ranks) <= 256 + 400


def test_special_ids_follow_the_config(kimi_dir, loaded):
    enc, added = loaded
    n_ranks = len(kimi_test_ranks())
    config = json.loads((kimi_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    from_config = {entry["content"]: int(i) for i, entry in config["added_tokens_decoder"].items()}
    assert added == from_config
    assert added == {name: n_ranks + real - KIMI_FIRST_SPECIAL_ID for name, (real, _) in KIMI_ADDED_TOKENS.items()}
    assert added["[BOS]"] == n_ranks and added["<|im_end|>"] == n_ranks + 2 and added["</think>"] == n_ranks + 23
    assert added["[PAD]"] == n_ranks + 255
    for name, token_id in added.items():
        assert enc.encode_single_token(name) == token_id
        assert enc.decode([token_id]) == name
    # Unnamed slots get tokenization_kimi.py's reserved names; there are 256 + 2 slots after the ranks.
    assert enc.encode_single_token(f"<|reserved_token_{n_ranks + 5}|>") == n_ranks + 5
    assert enc.encode_single_token(f"<|reserved_token_{n_ranks + 257}|>") == n_ranks + 257
    assert enc.n_vocab == n_ranks + NUM_RESERVED_SPECIAL_TOKENS
    assert config["bos_token"] == "[BOS]" and config["eos_token"] == "[EOS]" and config["pad_token"] == "[PAD]"


def test_chat_template_is_carried(kimi_dir):
    from helpers.shared import official_template

    template = official_template("kimi_k26.kite1.0_renamed.jinja")
    config = json.loads((kimi_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"] == template


def test_header_encodes_with_single_special_tokens(loaded):
    enc, added = loaded
    header = "<|im_assistant|>assistant<|im_middle|>"
    ids = enc.encode(header, allowed_special="all")
    assert ids[0] == added["<|im_assistant|>"] and ids[-1] == added["<|im_middle|>"]
    assert enc.decode(ids[1:-1]) == "assistant" and not set(ids[1:-1]) & set(added.values())
    assert kimi_encode(enc, header) == ids
    # As plain text (how content must be encoded), no special id appears and the text round-trips.
    plain = kimi_encode(enc, header, allow_special_tokens=False)
    assert not set(plain) & set(added.values()) and enc.decode(plain) == header
    assert enc.encode(header, disallowed_special=()) == plain
    with pytest.raises(ValueError):
        enc.encode(header)  # tiktoken's default refuses special-token text
    think = enc.encode("<think></think>x<|im_end|>", allowed_special="all")
    assert think[:2] == [added["<think>"], added["</think>"]] and think[-1] == added["<|im_end|>"]


@pytest.mark.parametrize("text", MIXED)
def test_round_trip(loaded, text):
    enc, _ = loaded
    for ids in (enc.encode(text, disallowed_special=()), kimi_encode(enc, text)):
        assert enc.decode(ids) == text
        assert b"".join(pieces(enc, ids)) == text.encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.one_of(st.sampled_from(list("a Z9\n\t你好🙂'")), st.characters(blacklist_categories=("Cs",))), max_size=40))
def test_round_trip_property(loaded, text):
    enc, _ = loaded
    assert enc.decode(kimi_encode(enc, text, allow_special_tokens=False)) == text


def test_digits_split_in_threes(loaded):
    enc, _ = loaded
    ranks = dict(kimi_test_ranks())
    assert b"12345" in ranks  # the vocabulary could write it as one token; the pattern does not let it
    ids = enc.encode("12345")
    assert enc.decode(ids) == "12345"
    assert _boundary_at(enc, ids, 3)
    assert _boundary_at(enc, enc.encode("1234567"), 3) and _boundary_at(enc, enc.encode("1234567"), 6)
    assert _boundary_at(enc, enc.encode("x 12345"), 2)  # the space stays apart from the digits


def _boundary_at(enc, ids, offset):
    pos, cuts = 0, set()
    for piece in pieces(enc, ids):
        pos += len(piece)
        cuts.add(pos)
    return offset in cuts


def test_han_runs_are_pieces(loaded):
    enc, _ = loaded
    ranks = dict(kimi_test_ranks())
    assert "你好".encode() in ranks
    ids = enc.encode("abc你好def")
    decoded = pieces(enc, ids)
    assert "你好".encode() in decoded
    text = "Hello你好世界abc，世界"
    ids = enc.encode(text)
    assert _boundary_at(enc, ids, len(b"Hello")) and _boundary_at(enc, ids, len("Hello你好世界".encode()))


def _chain(word: bytes, start: int) -> dict[bytes, int]:
    """Ranks for every prefix of ``word`` (2+ bytes), so BPE can build ``word`` left to right."""
    return {word[:k]: start + k for k in range(2, len(word) + 1)}


def test_pattern_keeps_han_apart_in_tiktoken():
    # A vocabulary holding the cross-boundary token "o你" (cheapest) and the Han run "你好世界": without
    # pre-tokenization "o你" forms; with Kimi's pattern the Han run is its own piece and "你好世界" forms.
    ranks = {bytes([b]): b for b in range(256)}
    ranks.update(_chain("o你".encode(), 256))
    ranks.update({k: v for k, v in _chain("你好世界".encode(), 300).items() if k not in ranks})
    ranks = {token: rank for rank, token in enumerate(sorted(ranks, key=ranks.get))}
    kimi = tiktoken.Encoding("kimi-tiny", pat_str=KIMI_PAT_STR, mergeable_ranks=ranks, special_tokens={})
    whole = tiktoken.Encoding("no-split", pat_str=r"[\s\S]+", mergeable_ranks=ranks, special_tokens={})
    text = "Hello你好世界, 世界abc"
    assert "o你".encode() in pieces(whole, whole.encode(text))
    got = pieces(kimi, kimi.encode(text))
    assert "o你".encode() not in got and "你好世界".encode() in got
    assert b"".join(got) == text.encode()


def test_long_runs_are_cut_like_the_hub_tokenizer(loaded):
    enc, _ = loaded
    text = "a" * (MAX_RUN_CHARS + 10) + " b"
    expected = enc.encode("a" * MAX_RUN_CHARS) + enc.encode("a" * 10 + " b")
    assert kimi_encode(enc, text) == expected
    assert enc.decode(expected) == text


def test_rejects_sparse_ranks(tmp_path):
    (tmp_path / "bad.model").write_text("YQ== 0\nYg== 2\n", encoding="ascii")
    with pytest.raises(ValueError):
        read_tiktoken_ranks(tmp_path / "bad.model")


def test_the_ranks_are_read_once_per_process_and_then_from_the_cache(kimi_dir, tmp_path, monkeypatch):
    """A second load in this process gives the same encoding; a new process (its encodings forgotten) reads the ranks
    from sftpack's cache, without parsing tiktoken.model, and encodes as the reference does."""
    from sftpack.tokenizers import encodings, kimi, ranks_cache

    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(ranks_cache, "_KNOWN", {})
    encodings.forget()
    parsed = []
    parse = kimi.parse_tiktoken_ranks
    monkeypatch.setattr(kimi, "parse_tiktoken_ranks", lambda data, path: parsed.append(path) or parse(data, path))
    files = kimi_dir / "tiktoken.model", kimi_dir / "tokenizer_config.json"
    try:
        first, _ = load_kimi_encoding(*files)
        assert load_kimi_encoding(*files)[0] is first and len(parsed) == 1
        encodings.forget()
        again, added = load_kimi_encoding(*files)
        assert again is not first and len(parsed) == 1  # from the cache
        assert isinstance(again, tiktoken.Encoding) and added == first_added(kimi_dir)
        for text in MIXED:
            assert again.encode(text, allowed_special="all") == kimi_encode(first, text)
    finally:
        encodings.forget()


def first_added(kimi_dir) -> dict:
    config = json.loads((kimi_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    return {entry["content"]: int(key) for key, entry in config["added_tokens_decoder"].items()}
