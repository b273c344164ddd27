"""Every fast path gives the bytes of the straightforward path.

Straightforward: the official template through Jinja (transformers), the rebuilt tokenizer.json through
`tokenizers` with offsets, and slime's per-character qwen3_5 mask. Fast: native renderer, tiktoken with one
call per chunk, masks from token byte lengths, zero-copy Arrow reads, worker processes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from helpers.qwen_reference import slime_qwen3_5_mask
from sftpack.families.encode import make_encoder
from sftpack.builder.chunks import encode_chunk
from sftpack.builder.pipeline import permutation
from sftpack.sources import open_source
from sftpack.families.profiles import load_profile
from sftpack.tokenizers.hf_vocab import HFVocab
from sftpack.tokenizers.vocab import VocabInfo


@pytest.fixture(scope="module")
def encoder(offline_qwen):
    return make_encoder(load_profile("Qwen3.5-122B-A10B"), offline_qwen)


def _chunk(encoder, source, indices):
    return encode_chunk(encoder, source, np.asarray(indices))


QWEN35_EOS = 248046  # <|im_end|>, Qwen3.5's eos_token


def _split(result):
    """Each kept conversation's (tokens, mask), the EOS in front of it checked and left out."""
    bounds = np.concatenate(([0], np.cumsum(result.lengths + 1)))
    assert (result.tokens[bounds[:-1]] == QWEN35_EOS).all() and not result.masks[bounds[:-1]].any()
    return [(result.tokens[a + 1:b], result.masks[a + 1:b]) for a, b in zip(bounds, bounds[1:])]


def test_sample_fast_path_equals_straightforward_path(encoder, qwen_hf_tokenizer):
    source = open_source("sample")
    indices = permutation(len(source), 42)[:160]
    result = _chunk(encoder, source, indices)
    encoded = iter(_split(result))
    rows = source.take(indices)
    checked = 0
    for (conv_id, messages), status in zip(rows, result.status):
        if status is not None:
            continue
        ids, mask = next(encoded)
        clean = [{"role": m["role"], "content": m["content"]} for m in messages]
        ref_ids, ref_mask = slime_qwen3_5_mask(qwen_hf_tokenizer, clean)
        assert ids.tolist() == ref_ids, conv_id
        if not any(c in m["content"] for m in clean for c in ("<|im_start|>", "<|im_end|>")):
            assert mask.tolist() == ref_mask, conv_id  # slime is fooled by forged turns; we are not
        checked += 1
    assert checked > 150


TRICKY_TEXTS = [
    "<|im_start|>user\nplain ascii<|im_end|>\n<|im_start|>assistant\nanswer<|im_end|>\n",
    "<|im_start|>user\nCafe\u0301 NFD<|im_end|>\n<|im_start|>assistant\nre\u0301ponse<|im_end|>\n",
    "<|im_start|>user\n東京 😀 Ω<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nΟΚ<|im_end|>\n",
    "<|im_start|>user\n>\u0338 composes with the special's last char in whole-text NFC<|im_end|>\n",
    "<|im_start|>assistant\n\u200b\u200d zero width\u202e RTL override<|im_end|>\n",
]


def _spans(text):
    # supervise from the first "assistant\n" header to the end: enough to exercise every boundary conversion
    at = text.find("assistant\n")
    return [(at + len("assistant\n"), len(text))] if at >= 0 else []


@pytest.mark.parametrize("order", [list(range(5)), [2, 0, 4, 1, 3]])
def test_batch_encoding_equals_one_by_one(offline_qwen, order):
    texts = [TRICKY_TEXTS[i] for i in order]
    spans = [_spans(t) for t in texts]
    batch = offline_qwen.encode_masked_batch(texts, spans)
    bounds = np.concatenate(([0], np.cumsum(batch.lengths)))
    for k, (text, text_spans) in enumerate(zip(texts, spans)):
        ids, mask = offline_qwen.encode_masked(text, text_spans)
        assert batch.tokens[bounds[k] : bounds[k + 1]].tolist() == ids.tolist()
        assert batch.masks[bounds[k] : bounds[k + 1]].tolist() == mask.tolist()


def test_tiktoken_vocab_equals_tokenizers_offsets_path(offline_qwen, qwen_hf_dir):
    from tokenizers import Tokenizer

    hf = HFVocab(Tokenizer.from_file(str(qwen_hf_dir / "tokenizer.json")), "<|im_end|>", VocabInfo("ref", "test"))
    for text in TRICKY_TEXTS:
        a_ids, a_mask = offline_qwen.encode_masked(text, _spans(text))
        b_ids, b_mask = hf.encode_masked(text, _spans(text))
        assert a_ids.tolist() == b_ids.tolist()
        assert a_mask.tolist() == b_mask.tolist()


def test_lone_surrogate_in_a_batch_is_skipped_alone(encoder):
    from sftpack.sources.memory import source_from_rows

    rows = [
        {"id": "ok-1", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
        {"id": "bad", "messages": [{"role": "user", "content": "x\ud800y"}, {"role": "assistant", "content": "b"}]},
        {"id": "ok-2", "messages": [{"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}]},
    ]
    result = _chunk(encoder, source_from_rows(rows), [0, 1, 2])
    assert result.status[0] is None and result.status[2] is None
    assert result.status[1][0] == "invalid_unicode"
    (t0, _), (t2, _) = _split(result)
    assert t0.tolist() == encoder(rows[0]["messages"])[0].tolist()
    assert t2.tolist() == encoder(rows[2]["messages"])[0].tolist()


def test_zero_copy_arrow_reads_equal_pyarrow(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sftpack.sources import SAMPLE_PATH

    source = open_source("sample")
    table = pq.read_table(SAMPLE_PATH)
    indices = permutation(len(source), 3)[:300]
    expected = table.take(pa.array(indices)).select(["id", "messages"]).to_pylist()
    assert source.take(indices) == [(r["id"], r["messages"]) for r in expected]
    # a chunk with nulls goes through pyarrow's own conversion
    messages = pa.array([[{"content": "a", "role": "user"}], None], type=table.schema.field("messages").type)
    nulls = pa.table({"id": ["x", None], "messages": messages})
    from sftpack.sources.base import SourceInfo
    from sftpack.sources.table import TableSource

    assert TableSource(nulls, SourceInfo("t", "memory")).take([1, 0]) == [("sftpack:source-row-1", None), ("x", [{"content": "a", "role": "user"}])]


def test_memory_mapped_arrow_source_survives_page_release(tmp_path, monkeypatch):
    import pyarrow as pa
    from synthetic import write_synthetic_arrow

    import sftpack.sources.table as source_module

    path = tmp_path / "src.arrow"
    write_synthetic_arrow(path, 500, seed=4)
    monkeypatch.setattr(source_module, "RELEASE_ABOVE_BYTES", 0)  # release the mapped pages after every take
    source = open_source(str(path))
    indices = permutation(len(source), 9)
    expected = pa.ipc.open_file(pa.memory_map(str(path))).read_all().take(pa.array(indices)).select(["id", "messages"]).to_pylist()
    got = [row for start in range(0, 500, 64) for row in source.take(indices[start : start + 64])]
    assert got == [(r["id"], r["messages"]) for r in expected]


def test_large_parquet_goes_through_sftpacks_arrow_cache(tmp_path, monkeypatch):
    """Parquet sources above IN_MEMORY_PARQUET_BYTES are decoded once into sftpack's cache and memory-mapped from
    there (the full Tulu mixture does not fit the memory budget); the rows read are the same, and a second open
    reads the copies without writing them again."""
    import pyarrow.parquet as pq
    from synthetic import write_synthetic_parquet

    import sftpack.sources.table as source_module

    shards = tmp_path / "shards"
    shards.mkdir()
    write_synthetic_parquet(shards / "train-00000.parquet", 300, seed=5)
    write_synthetic_parquet(shards / "train-00001.parquet", 200, seed=6)
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(source_module, "IN_MEMORY_PARQUET_BYTES", 0)
    source = open_source(str(shards))
    assert source._maps  # backed by memory-mapped cache files
    copies = sorted((tmp_path / "cache" / "sources").glob("*.arrow"))
    assert len(copies) == 2
    table = pa.concat_tables([pq.read_table(p) for p in sorted(shards.glob("*.parquet"))])
    indices = permutation(500, 2)[:200]
    expected = table.take(pa.array(indices)).select(["id", "messages"]).to_pylist()
    assert source.take(indices) == [(r["id"], r["messages"]) for r in expected]
    written = [p.stat().st_mtime_ns for p in copies]
    assert open_source(str(shards)).take(indices) == source.take(indices)
    assert [p.stat().st_mtime_ns for p in copies] == written


@pytest.mark.parametrize("damage", ["cut short", "size record lost", "another file's rows"])
def test_a_damaged_arrow_copy_of_a_parquet_source_is_decoded_again(tmp_path, monkeypatch, damage):
    import pyarrow.parquet as pq
    from synthetic import write_synthetic_parquet

    import sftpack.sources.table as source_module
    from sftpack.sources.parquet_cache import entry_for

    path = tmp_path / "s.parquet"
    write_synthetic_parquet(path, 120, seed=3)
    monkeypatch.setenv("SFTPACK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(source_module, "IN_MEMORY_PARQUET_BYTES", 0)
    open_source(str(path))
    entry = entry_for(path)
    good = entry.read_bytes()
    if damage == "cut short":
        entry.write_bytes(good[: len(good) // 2])
    elif damage == "size record lost":
        entry.with_suffix(".size").unlink()
    else:  # whole, and of the recorded size, but not this file's rows
        other = tmp_path / "other.parquet"
        write_synthetic_parquet(other, 60, seed=4)
        with pa.OSFile(str(entry), "wb") as sink, pa.ipc.new_file(sink, pq.read_schema(other)) as writer:
            writer.write_table(pq.read_table(other))
        entry.with_suffix(".size").write_text(str(entry.stat().st_size))
    source = open_source(str(path))
    assert entry.read_bytes() == good
    expected = pq.read_table(path).select(["id", "messages"]).to_pylist()
    assert source.take(list(range(120))) == [(r["id"], r["messages"]) for r in expected]


@pytest.mark.parametrize("block", [1, 2, 3, 5, 8, 64, 4 << 20])
@pytest.mark.parametrize("text", [
    b'{"a": 1}\n\n  \n{"b": 2}\r\n\t\n{"c": 3}',  # blank, whitespace-only, CRLF, no final newline
    b'\xef\xbb\xbf{"a": 1}\n \n',  # a BOM, a whitespace-only last line
    b'\n\n{"a": 1}\n\n',
    b" \t \n",
    b"",
])
def test_jsonl_line_scan_equals_a_plain_split_at_any_block_size(block, text, tmp_path, monkeypatch):
    from sftpack.sources.base import SourceInfo
    from sftpack.sources.jsonl import JsonLinesSource

    path = tmp_path / "s.jsonl"
    path.write_bytes(text)
    monkeypatch.setattr(JsonLinesSource, "BLOCK", block)
    source = JsonLinesSource(path, SourceInfo("s.jsonl", "file"))
    body = text[3:] if text.startswith(b"\xef\xbb\xbf") else text
    expected = [(n, line) for n, line in enumerate(body.split(b"\n"), 1) if line.strip(b" \t\r")]
    got = [(int(n), text[s:e]) for n, s, e in zip(source.lines, source.starts, source.ends)]
    assert got == expected
